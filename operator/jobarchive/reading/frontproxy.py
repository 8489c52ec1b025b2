"""Front-proxy authentication: the requestheader configuration kept current (the
``extension-apiserver-authentication`` ConfigMap read with the process's own client,
or the files the operator names), the serving TLS told which client CA to verify,
and the identity of a request whose connection is the front proxy's (ARCHITECTURE.md,
decision 29)."""

import asyncio
import contextlib
import datetime
import hashlib
import logging
import pathlib
from collections.abc import Awaitable, Callable

import aiohttp
from aiohttp import web
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from jobarchive.config import DEFAULTS, ApiTls
from jobarchive.core.bounded import Expiring
from jobarchive.infra import cluster
from jobarchive.infra.certificates import ServerTls
from jobarchive.reading import auth, requestheader
from jobarchive.reading.requestheader import BadConfig, RequestHeader

logger = logging.getLogger(__name__)

CONFIGMAP = "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication"
READ_TIMEOUT = 5.0
# Client certificates judged against the current configuration, each for a minute
# (it may expire): the front proxy keeps a handful of connections.
JUDGED = 64
JUDGED_TTL = 60.0

Reader = Callable[[], Awaitable[RequestHeader | None]]


def from_cluster(api: client.ApiClient, allowed_names: tuple[str, ...] | None) -> Reader:
    """Reads of the ConfigMap with the process's own client (a GET: nothing is written)."""

    async def read() -> RequestHeader | None:
        try:
            body = await cluster.get_json(api, CONFIGMAP, _request_timeout=READ_TIMEOUT)
        except ApiException as exc:
            raise BadConfig(f"GET {CONFIGMAP} answered {exc.status} {exc.reason}") from None
        # A body that is not JSON is a ValueError too.
        except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
            raise BadConfig(f"GET {CONFIGMAP}: no usable answer ({type(exc).__name__})") from None
        data = body.get("data") if isinstance(body, dict) else None
        return requestheader.from_configmap(data if isinstance(data, dict) else {}, allowed_names)

    return read


def from_file(path: str, allowed_names: tuple[str, ...] | None) -> Reader:
    """Reads of a CA file, with Kubernetes' default header names."""

    async def read() -> RequestHeader:
        try:
            pem = await asyncio.to_thread(pathlib.Path(path).read_bytes)
        except OSError as exc:
            raise BadConfig(f"{path}: {exc.strerror}") from None
        cas = requestheader.certificates(pem, path)
        return RequestHeader(ca_pem=pem, cas=cas, allowed_names=allowed_names or ())

    return read


class FrontProxy:
    """The current requestheader configuration, read again every ``every`` seconds; a
    read that fails keeps the last good one (logged once until reads succeed again)."""

    def __init__(self, tls: ServerTls, read: Reader, source: str, every: float) -> None:
        self.tls = tls
        self.read = read
        self.source = source
        self.every = every
        self.config: RequestHeader | None = None
        self._judged: Expiring[str, str] = Expiring(JUDGED_TTL, JUDGED)
        self._failing = False
        self._task: asyncio.Task[None] | None = None

    async def refresh(self) -> None:
        """Read the configuration once; a new one replaces the last, and the serving TLS
        verifies client certificates against its CA from the next handshake on."""
        try:
            config = await self.read()
        except BadConfig as exc:
            if not self._failing:
                self._failing = True
                kept = "keeping the last one read" if self.config else "believing no proxy"
                logger.warning(
                    "Cannot read the front proxy's configuration from %s (%s): %s; tried "
                    "again every %g s",
                    self.source,
                    exc,
                    kept,
                    self.every,
                )
            return
        if self._failing:
            self._failing = False
            logger.info("The front proxy's configuration is read again from %s", self.source)
        if config != self.config:
            self._judged = Expiring(JUDGED_TTL, JUDGED)
            self.config = config
            logger.info("Front proxy: %s", _described(config, self.source))
        self.tls.trust(config.ca_pem if config else None)

    async def start(self) -> None:
        """Read the configuration, then keep it current in a task of its own."""
        await self.refresh()
        self._task = asyncio.create_task(self._refreshing())

    async def stop(self) -> None:
        """Stop refreshing."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _refreshing(self) -> None:
        while True:
            await asyncio.sleep(self.every)
            await self.refresh()

    def identity(self, request: web.Request) -> auth.Identity | None:
        """Whom the request's front-proxy headers name, when its connection carries a
        client certificate of the current CA with an allowed CN; None otherwise (its
        headers are then ignored). Ambiguous for a username header given twice."""
        config = self.config
        transport = request.transport
        connection = transport.get_extra_info("ssl_object") if transport else None
        if config is None or connection is None:
            return None
        der = connection.getpeercert(binary_form=True)
        if not der:
            return None
        key = hashlib.sha256(der).hexdigest()
        name = self._judged.get(key)
        if name is None:
            now = datetime.datetime.now(datetime.UTC)
            name = requestheader.proxy_name(der, config, now) or ""
            self._judged.put(key, name)
        if not name:
            return None
        return requestheader.identity(request.headers, config)


def _described(config: RequestHeader | None, source: str) -> str:
    if config is None:
        return f"{source} names no client CA: X-Remote-* headers are never believed"
    names = ", ".join(config.allowed_names) or "any the CA signed"
    return (
        f"client certificates of {len(config.cas)} CA(s) from {source}, common names: "
        f"{names}; user from {', '.join(config.username_headers)}"
    )


async def front_proxy(
    access: auth.Access,
    tls: ServerTls,
    overrides: ApiTls,
    every: float = DEFAULTS.requestheader_refresh,
) -> FrontProxy | None:
    """The front proxy's authentication of a server reviewing callers with Kubernetes,
    started; None with any other access control (nobody's identity is asked).

    The CA file of ``overrides`` replaces the ConfigMap (read again at each refresh,
    with Kubernetes' default header names), its allowed names the ConfigMap's."""
    if not isinstance(access, auth.KubernetesAuth):
        return None
    if overrides.client_ca_file:
        read = from_file(overrides.client_ca_file, overrides.allowed_names)
        source = overrides.client_ca_file
    else:
        read = from_cluster(access.api, overrides.allowed_names)
        source = f"ConfigMap kube-system/{CONFIGMAP.rsplit('/', 1)[1]}"
    proxy = FrontProxy(tls, read, source, every)
    await proxy.start()
    return proxy
