"""The read commands' archive read through the aggregated API archive.jobarchive.io/v1
with a kubeconfig's credentials (a token, a client certificate, an exec plugin: the
Kubernetes client's own loader reads them as kubectl does), each command one GET or
two, the objects turned back into the rows the database mode prints (``kube.objects``)
so that the output is the same (decision 30). Every failure is one line: what the API
refuses as bad input with exit status 2, naming the flag; 401, 403 (naming the
namespace), 404, 503 and no answer with exit status 1."""

import asyncio
import datetime
import json
import re
import urllib.parse
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

import aiohttp
import click
from kubernetes_asyncio import client
from kubernetes_asyncio import config as kube_config

from jobarchive.cli import kubeconfig
from jobarchive.cli.archive import Found, Kubeconfig
from jobarchive.cli.options import BadSetting
from jobarchive.core.visible import visible
from jobarchive.infra.logs import silenced
from jobarchive.reading import params
from jobarchive.reading.kube import objects
from jobarchive.reading.kube.discovery import PREFIX
from jobarchive.reading.params import BadQuery, Named, Page, Param

T = TypeVar("T")
JSON = dict[str, Any]
Read = Callable[["Api", str, str], Awaitable[T]]
# How long a request may wait for its answer: the server stops a query sooner
# (JOBARCHIVE_API_TIMEOUT) and says so with a 504.
TIMEOUT = 60
# A refusal's message that names its parameter first: ``status: 'Bogus' is not one of``.
NAMED = re.compile(r"([a-z_]+): (.*)", re.DOTALL)
NO_API = "is jobarchive's APIService installed? (kubectl get apiservice v1.archive.jobarchive.io)"


class Api:
    """GETs on the aggregated API for one command, its failures as one line each."""

    def __init__(self, api: client.ApiClient, source: str) -> None:
        self.api = api
        self.source = source

    async def get(self, path: str, query: Sequence[tuple[str, str]], scope: str) -> JSON:
        """The JSON answer of ``GET PREFIX + path``; a refusal as one line, ``scope`` (the
        namespace asked about, or all) named in a 403. A redirect is not followed: the
        archive's API never redirects, and another origin's answer is not the archive's."""
        settings = self.api.configuration
        host = settings.host or ""
        url = host + PREFIX + path + ("?" + urllib.parse.urlencode(query) if query else "")
        headers = {"Accept": "application/json"}
        credential = await settings.get_api_key_with_prefix("BearerToken")
        if credential:
            headers["Authorization"] = credential
        try:
            # The client's own session: its TLS (CA, client certificate) and proxy, but a
            # request of ours, since the client's always follows redirects.
            async with self.api.rest_client.pool_manager.get(
                url,
                headers=headers,
                allow_redirects=False,
                timeout=aiohttp.ClientTimeout(total=TIMEOUT),
                proxy=settings.proxy,
                server_hostname=settings.tls_server_name,
            ) as response:
                status, text = response.status, await response.text()
                moved = response.headers.get("Location", "")
        except (aiohttp.ClientError, TimeoutError) as exc:
            reason = " ".join(str(exc).split()) or type(exc).__name__
            raise click.ClickException(visible(f"no answer from {host} ({reason})")) from None
        if 300 <= status < 400:
            raise click.ClickException(
                visible(f"{status} from {host}: a redirect to {moved or 'nowhere'}, not followed")
            )
        if status >= 400:
            raise self._refusal(status, _message(text), scope)
        answer: JSON = json.loads(text)
        return answer

    def _refusal(self, status: int, message: str, scope: str) -> Exception:
        if status == 400:
            named = NAMED.fullmatch(message)
            return BadQuery(Named(named[1]), ": " + named[2]) if named else BadQuery(message)
        if status == 401:
            said = f"401 Unauthorized: the credentials of {self.source} were not accepted"
            return click.ClickException(visible(f"{said} ({message}); check kubectl auth whoami"))
        if status == 403:
            return click.ClickException(visible(f"403 Forbidden in {scope}: {message}"))
        if status == 404:
            return click.ClickException(visible(f"404 Not Found: {message}; {NO_API}"))
        return click.ClickException(visible(f"{status} from the archive's API: {message}"))


class Remote:
    """The archive behind the aggregated API of the kubeconfig's cluster."""

    def __init__(self, kubeconfig: Kubeconfig) -> None:
        self.kubeconfig = kubeconfig

    def jobs(self, filters: Mapping[str, Any], limit: int | None, cursor: str | None) -> Page:
        """A page of the job list (an exact name among its filters)."""
        return self._run(
            lambda api: _page(api, "archivedjobs", params.NAMED_JOB_PARAMS, filters, limit, cursor)
        )

    def events(self, filters: Mapping[str, Any], limit: int | None, cursor: str | None) -> Page:
        """A page of the Event list."""
        return self._run(
            lambda api: _page(api, "archivedevents", params.EVENT_PARAMS, filters, limit, cursor)
        )

    def job(self, reference: str, **page: Any) -> Found[dict[str, Any]]:
        """A job's detail: the job, a page of its pods and of its Events."""

        async def read(api: Api, namespace: str, uid: str) -> dict[str, Any]:
            path = f"{_in(namespace)}/archivedjobs/{_segment(uid)}"
            found = await api.get(path, _query(params.DETAIL_PARAMS, page), _scope(namespace))
            return objects.detail_row(found)

        return self._run(lambda api: _found(api, reference, read))

    def logs(self, reference: str, **narrowed: Any) -> Found[Page]:
        """A page of a job's log tails."""

        async def read(api: Api, namespace: str, uid: str) -> Page:
            path = f"{_in(namespace)}/archivedjobs/{_segment(uid)}/log"
            found = await api.get(path, _query(params.LOG_PARAMS, narrowed), _scope(namespace))
            return Page(found["items"], found["next_cursor"])

        return self._run(lambda api: _found(api, reference, read))

    def stats(self, **window: Any) -> list[dict[str, Any]]:
        """Jobs counted by a column, with their durations, in the namespace given or all."""
        return self._statistic("stats", params.STATS_PARAMS, window)

    def usage(self, **window: Any) -> list[dict[str, Any]]:
        """Usage rolled up by a column over a window, in the namespace given or all."""
        return self._statistic("usage", params.USAGE_PARAMS, window)

    def _statistic(
        self, path: str, table: Sequence[Param], window: Mapping[str, Any]
    ) -> list[dict[str, Any]]:
        """A statistic's rows, asked of its namespace's path (the root's for all)."""
        namespace = window.get("namespace")
        query = _query([p for p in table if p.name != "namespace"], window)

        async def rows(api: Api) -> list[dict[str, Any]]:
            found = await api.get(f"{_in(namespace)}/{path}", query, _scope(namespace))
            items: list[dict[str, Any]] = found["items"]
            return items

        return self._run(rows)

    def _run(self, work: Callable[[Api], Awaitable[T]]) -> T:
        location, source = kubeconfig.locate(self.kubeconfig)
        kubeconfig.check(location, self.kubeconfig.context, source)

        async def session() -> T:
            settings = client.Configuration()
            try:
                # The library logs what it then raises, which the line below says already.
                with silenced("kubernetes_asyncio.config"):
                    await kube_config.load_kube_config(
                        config_file=location,
                        context=self.kubeconfig.context,
                        client_configuration=settings,
                        persist_config=False,
                    )
            # Whatever the file or its credential plugin got wrong, in the library's words.
            except Exception as exc:
                reason = " ".join(str(exc).split()) or type(exc).__name__
                raise BadSetting(visible(f"{source}: cannot use it ({reason})")) from None
            async with client.ApiClient(settings) as api:
                return await work(Api(api, source))

        return asyncio.run(session())


async def _page(
    api: Api,
    plural: str,
    table: tuple[Param, ...],
    filters: Mapping[str, Any],
    limit: int | None,
    cursor: str | None,
) -> Page:
    """A page of a list, its filters passed under the API's names (the namespace in the
    path), its objects made rows again."""
    namespace = filters.get("namespace")
    query = _query([param for param in table if param.name != "namespace"], filters)
    # Checked here: the API takes a Kubernetes limit (0 or over 500: a page of 500).
    query.append(("limit", str(params.page_size(limit))))
    if cursor is not None:
        query.append(("continue", cursor))
    found = await api.get(f"{_in(namespace)}/{plural}", query, _scope(namespace))
    if plural != "archivedjobs":
        rows = [objects.event_row(item) for item in found["items"]]
    else:
        # Each failed job's class (decision 42), as the database mode reads it.
        rows = [
            {**objects.job_row(item), "failure_class": item["status"].get("failureClass")}
            for item in found["items"]
        ]
    return Page(rows, found["metadata"].get("continue"))


async def _found(api: Api, reference: str, read: Read[T]) -> Found[T]:
    """The jobs ``reference`` names, as ``queries.find_jobs`` finds them (a uid: its
    job, in whichever namespace; ``NAMESPACE/UID``: that job; ``NAMESPACE/NAME``: the
    newest page of the name's incarnations), and what ``read`` finds of the job when
    it names one."""
    namespace, slash, name = reference.rpartition("/")
    if slash and not (namespace and name):
        return Found([], None)
    where = namespace if slash else None
    found = Page([], None)
    if not slash or params.UID.fullmatch(name):
        found = await _selected(api, where, f"metadata.uid={_escaped(name)}", 1)
    if slash and not found.items:
        found = await _selected(api, where, f"metadata.name={_escaped(name)}", params.DEFAULT_PAGE)
    if len(found.items) != 1:
        return Found(found.items, None, found.next_cursor)
    job = found.items[0]
    return Found(found.items, await read(api, job["namespace"], job["job_id"]))


async def _selected(api: Api, namespace: str | None, selector: str, size: int) -> Page:
    """A page of the jobs a field selector selects, in a namespace or in all, as rows."""
    query = [("fieldSelector", selector), ("limit", str(size))]
    listed = await api.get(f"{_in(namespace)}/archivedjobs", query, _scope(namespace))
    rows = [objects.job_row(item) for item in listed["items"]]
    return Page(rows, listed["metadata"].get("continue"))


def _query(table: Sequence[Param], values: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The query parameters of the values given (by ``Param.key``), under the API's names."""
    query = []
    for param in table:
        value = values.get(param.key)
        if value is None:
            continue
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif isinstance(value, datetime.datetime):
            value = value.isoformat()
        query.append((param.name, str(value)))
    return query


def _message(text: str) -> str:
    """The message of a ``metav1.Status`` answer, or the start of whatever came instead."""
    try:
        status = json.loads(text)
    except ValueError:
        return text[:200].strip() or "no message"
    message = status.get("message") if isinstance(status, dict) else None
    return str(message) if message else text[:200].strip()


def _in(namespace: str | None) -> str:
    if namespace == "":
        # The aggregated API names a namespace in its path, where none cannot be named.
        raise BadQuery(
            Named("namespace"),
            ": '' cannot be asked of the API through a kubeconfig (its paths name a "
            "namespace): leave it out for every namespace, or read the archive with --db-url",
        )
    return "" if namespace is None else f"/namespaces/{_segment(namespace)}"


def _segment(value: str) -> str:
    return urllib.parse.quote(value, safe="")


def _scope(namespace: str | None) -> str:
    return "all namespaces" if namespace is None else f"namespace {namespace}"


def _escaped(value: str) -> str:
    """A field selector's value as its grammar escapes one."""
    return value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")
