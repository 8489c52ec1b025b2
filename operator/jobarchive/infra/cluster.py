"""The Kubernetes API as the operator reaches it, and the check that it can.

Credentials come from the pod's service account when the operator runs in a
cluster, else from the current kubeconfig: the order of Kopf's own login, so the
cluster that ``preflight`` approves is the one Kopf then logs in to.

``preflight`` runs before Kopf starts anything: without it, a run with no cluster
opens the metrics port and the database, then fails in Kopf's login with pages of
tracebacks. It asks ``GET /api``, which every API server answers, and only to
authenticated clients (discovery is granted to authenticated users), so one
request shows both that the server answers and that it takes the credentials.
"""

import asyncio
import os
import socket
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
from kubernetes_asyncio import client, config
from kubernetes_asyncio.client.exceptions import ApiException
from kubernetes_asyncio.config.kube_config import (
    ENV_KUBECONFIG_PATH_SEPARATOR,
    KUBE_CONFIG_DEFAULT_LOCATION,
)

from jobarchive.infra.logs import silenced

JSON = dict[str, Any]
PAGE_SIZE = 500
# Only metadata is needed of what is listed: ask for it alone, as kubectl does, and take
# full objects from a server that cannot serve it. Full pods cost most of a listing's
# time and memory.
METADATA_ONLY = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"


class Unavailable(Exception):
    """No usable cluster; one line saying what is missing, ending with what to check."""


async def configuration() -> tuple[client.Configuration, str]:
    """The client configuration, and where it came from (for messages)."""
    settings = client.Configuration()
    try:
        config.load_incluster_config(client_configuration=settings)  # type: ignore[no-untyped-call]  # untyped library
    except config.ConfigException:
        pass
    else:
        return settings, "the pod's service account"
    location = _kubeconfig()
    try:
        loader = await config.load_kube_config(config_file=location, client_configuration=settings)
    # Whatever the file or its credential plugin got wrong (YAML, structure, a missing
    # command), in the library's words: the user fixes the file, not this program.
    except Exception as exc:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise Unavailable(
            f"cannot use the kubeconfig {location} ({reason}); check `kubectl config view`"
        ) from None
    context = (loader.current_context or {}).get("name")
    return settings, f"kubeconfig {location}, context {context}"


def _kubeconfig() -> str:
    """Where the kubeconfig is read from; raises Unavailable when no such file exists.

    Checked here because the library only logs a warning for a missing file, then
    fails with a message that does not say where it looked.
    """
    # The library reads KUBECONFIG once, at import, as Kopf's login does.
    location = KUBE_CONFIG_DEFAULT_LOCATION
    paths = [os.path.expanduser(path) for path in location.split(ENV_KUBECONFIG_PATH_SEPARATOR)]
    if not any(os.path.isfile(path) for path in paths if path):
        raise Unavailable(
            f"no Kubernetes cluster: not running in a pod, and no kubeconfig at {location}; "
            "point KUBECONFIG at one, as for kubectl"
        )
    return location


async def api_client() -> client.ApiClient:
    """A client for the cluster the operator runs in, else for the current kubeconfig."""
    settings, _ = await configuration()
    return client.ApiClient(settings)


async def get_json(api: client.ApiClient, path: str, **options: Any) -> JSON:
    """GET a path and return its JSON body; raises ApiException for an error status.

    ``options`` go to ``call_api`` (``query_params``, ``header_params``,
    ``_request_timeout``). The body is read as it streams rather than through the
    generated models, which is why the status must be checked here: the library
    raises for it only when it reads the body itself.
    """
    return await _call_json(api, "GET", path, **options)


def list_path(group: str, version: str, plural: str, namespace: str | None) -> str:
    """Where a resource is listed: in one namespace, or (None) the whole cluster."""
    base = f"/apis/{group}/{version}" if group else f"/api/{version}"
    where = f"/namespaces/{namespace}" if namespace is not None else ""
    return f"{base}{where}/{plural}"


async def pages(api: client.ApiClient, path: str, size: int = PAGE_SIZE) -> AsyncIterator[JSON]:
    """The metadata-only pages of a list path (``size`` objects a request),
    following the server's continue token."""
    token: str | None = None
    while True:
        query: list[tuple[str, Any]] = [("limit", size)]
        if token:
            query.append(("continue", token))
        page = await get_json(
            api, path, query_params=query, header_params={"Accept": METADATA_ONLY}
        )
        yield page
        token = (page.get("metadata") or {}).get("continue") or None
        if not token:
            return


async def listed(api: client.ApiClient, path: str) -> AsyncIterator[JSON]:
    """The metadata of every object at a list path, read page by page."""
    async for page in pages(api, path):
        for item in page.get("items") or []:
            meta = item.get("metadata") if isinstance(item, dict) else None
            if isinstance(meta, dict):
                yield meta


async def post_json(api: client.ApiClient, path: str, body: JSON, **options: Any) -> JSON:
    """POST a JSON body to a path and return the JSON answer, as ``get_json`` does."""
    return await _call_json(api, "POST", path, body=body, **options)


async def _call_json(api: client.ApiClient, method: str, path: str, **options: Any) -> JSON:
    response = await api.call_api(
        path,
        method,
        auth_settings=["BearerToken"],
        _preload_content=False,
        _return_http_data_only=True,
        **options,
    )
    async with response:
        if response.status >= 400:
            raise ApiException(status=response.status, reason=response.reason)
        body: JSON = await response.json()
        return body


async def preflight(tries: int = 3, patience: float = 2.0, pause: float = 0.5) -> None:
    """Raise Unavailable unless the API server answers ``GET /api`` with the credentials.

    A server that does not answer is asked ``tries`` times, waiting ``patience``
    seconds each, with growing pauses between; a refusal of the credentials is final.
    """
    # The library logs what it then raises, which ``Unavailable`` says already.
    with silenced("kubernetes_asyncio.config"):
        settings, source = await configuration()
    where = f"the Kubernetes API at {settings.host} ({source})"
    failure = ""
    async with client.ApiClient(settings) as api:
        for attempt in range(1, tries + 1):
            try:
                await get_json(api, "/api", _request_timeout=patience)
            except ApiException as exc:
                if exc.status in (401, 403):
                    raise Unavailable(
                        f"{where} refused the credentials ({exc.status} {exc.reason}); "
                        "check `kubectl auth whoami`"
                    ) from None
                if exc.status < 500:
                    raise Unavailable(
                        f"{where} answered GET /api with {exc.status} {exc.reason}, as no "
                        "Kubernetes API server does; check the server in the kubeconfig"
                    ) from None
                failure = f"{exc.status} {exc.reason}"
            except (aiohttp.ClientError, TimeoutError) as exc:
                failure = _reason(exc, patience)
            else:
                return
            if attempt < tries:
                await asyncio.sleep(pause * attempt)
    raise Unavailable(
        f"{where} does not answer ({failure}, {tries} tries); check `kubectl cluster-info`"
    )


def _reason(error: Exception, patience: float) -> str:
    """Why a request got no answer: the system's words (``Connection refused``), not aiohttp's."""
    if isinstance(error, TimeoutError):
        return f"no answer within {patience:g} s"
    cause = error.os_error if isinstance(error, aiohttp.ClientConnectorError) else None
    if isinstance(cause, socket.gaierror):
        return f"cannot resolve the host: {cause.strerror}"
    if isinstance(cause, ConnectionError) and cause.errno:
        return os.strerror(cause.errno)
    return str(error) or type(error).__name__
