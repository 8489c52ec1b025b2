"""The read-only HTTP API: the CLI's queries as JSON under ``/api/v1``.

Served by ``jobarchive serve`` and, when ``JOBARCHIVE_API_PORT`` is set, by the
operator process. Each route's query parameters are a table of ``reading.params``;
the parser and the OpenAPI document (``reading.openapi``) both read it, so they
cannot drift. Errors are JSON, ``{"error": {"status": ..., "message": ...}}``, a path
under ``/api/`` that is no route and a method not GET included: 400 for bad input
(unknown parameter, bad date, unknown status, bad cursor, page too large, a usage
roll-up past its time limit), 401 without a valid bearer token, 403 when the caller
may not read the namespace asked for (or all namespaces, when none is named), 404 for
an unknown job, 503 when Kubernetes cannot review the caller or when no read turn
comes within the caller's wait or its queue is full (with ``Retry-After``), 504 when
a query outlives ``timeout``.

The queries run on the read side's own pool (``storage.readpool``), at most
``concurrency`` at once, its size, and one at a time while the operator records,
shared fairly between callers (``reading.gate``): a request beyond its caller's
share waits in its caller's bounded queue for a turn, then is answered 503 rather
than queued for ever, so that a flood of requests costs their caller a retry, not
the archive a growing queue of waiting statements nor another caller its turn. A
request's queries share one deadline, which the database enforces
(``reads.deadline``): a 504 leaves nothing running on the server.

Who may read what is ``reading.auth``'s answer. A request names its namespace, or
covers all of them; a job asked for by uid names none, so it is checked against
its own namespace once found, and one the caller may not see is as unknown as a
job that never was (404): the answer must not tell that it exists.

The parameter tables, the parser, the caller and the read budget live in
``reading.handling``, shared with the web console (``reading.console``), which the
same application serves at ``/``.
"""

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Unpack

from aiohttp import web

from jobarchive.config import DEFAULTS, ApiTls
from jobarchive.core.visible import QUOTED, visible
from jobarchive.infra import certificates
from jobarchive.infra.serving import is_loopback, listen
from jobarchive.reading import auth, embedded, frontproxy, kube, queries
from jobarchive.reading.console import Console
from jobarchive.reading.console.mounts import PATH as CONSOLE
from jobarchive.reading.handling import (
    BACKSTOP,
    DEFAULT_CONCURRENCY,
    DEFAULT_TIMEOUT,
    Budget,
    Caller,
    Reads,
    secure,
)
from jobarchive.reading.openapi import document
from jobarchive.reading.params import check_namespace
from jobarchive.reading.parsing import listed, parse
from jobarchive.reading.queries import (
    DETAIL_PARAMS,
    EVENT_PARAMS,
    JOB_PARAMS,
    LOG_PARAMS,
    PAGE,
    STATS_PARAMS,
    USAGE_PARAMS,
    Param,
)

logger = logging.getLogger(__name__)

# Plain HTTP, for a laptop and the tests.
PLAIN = ApiTls()
PREFIX = "/api/v1"
# A Kubernetes uid, as a route pattern: what tells ``/jobs/{uid}/logs`` from a job's name.
UID_PATTERN = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
# Named here too, where the API's callers and tests have always found them.
__all__ = [
    "BACKSTOP",
    "DEFAULT_CONCURRENCY",
    "DEFAULT_TIMEOUT",
    "DETAIL_PARAMS",
    "EVENT_PARAMS",
    "JOB_PARAMS",
    "PAGE",
    "PREFIX",
    "STATS_PARAMS",
    "Api",
    "Param",
    "error",
    "openapi",
    "serve",
]


def error(status: int, message: str, headers: Mapping[str, str] | None = None) -> web.Response:
    """A JSON error response."""
    body = {"error": {"status": status, "message": message}}
    return web.json_response(body, status=status, headers=headers)


@web.middleware
async def _json_errors(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    """aiohttp's own refusals (404 no route, 405 not GET) of every path under ``/api/``
    as the API's JSON errors: none of them is the console's."""
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.status < 400 or not request.path.startswith("/api/"):
            raise
        allow = {"Allow": exc.headers["Allow"]} if "Allow" in exc.headers else None
        message = f"{exc.reason.lower()}: the API answers GET on {PREFIX}/..."
        return error(exc.status, message, allow)


Handler = Callable[[web.Request, Caller], Awaitable[Any]]


class Api:
    """The routes, bound to an access control, a query timeout and how many queries
    may run at once (the read pool's size)."""

    def __init__(self, access: auth.Access, **budget: Unpack[Budget]) -> None:
        self.reads = Reads(access, **budget)

    def app(self) -> web.Application:
        """An aiohttp application serving the API under ``PREFIX``; its cleanup closes
        the access control."""
        app = web.Application(middlewares=[_json_errors, kube.statuses])
        app.on_response_prepare.append(secure)
        routes = {
            "/jobs": self._jobs,
            "/jobs/{uid}": self._job,
            # Before the named route, which would take a uid for a namespace.
            "/jobs/{uid:" + UID_PATTERN + "}/logs": self._logs,
            "/jobs/{namespace}/{name}": self._named,
            "/events": self._events,
            "/stats": self._stats,
            "/usage": self._usage,
            "/openapi.json": _openapi,
        }
        for path, handler in routes.items():
            app.router.add_get(PREFIX + path, self._guarded(handler))
        # Before the console's pages, whose last route takes any other path.
        kube.Kube(self.reads).mount(app)
        app.on_cleanup.append(lambda _: self.reads.access.close())
        return app

    def site(self) -> web.Application:
        """The API's application with the web console beside it at ``/``, sharing its
        access control and read budget: what ``serve`` serves."""
        app = self.app()
        Console(self.reads, PREFIX).mount(app)
        return app

    def _guarded(self, handler: Handler) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def guarded(request: web.Request) -> web.Response:
            return await self.reads.respond(request, lambda: self._answer(request, handler))

        return guarded

    async def _answer(self, request: web.Request, handler: Handler) -> web.Response:
        """The handler's answer, or the error it ran into as JSON."""
        try:
            result = await handler(request, await self.reads.caller(request))
        except Exception as exc:
            refusal = self.reads.refusal(request, exc)
            return error(refusal.status, refusal.message, refusal.headers or None)
        if isinstance(result, web.Response):
            return result
        return web.json_response(result)

    async def _jobs(self, request: web.Request, caller: Caller) -> Any:
        asked = listed(request.query, queries.JOBS)
        return (await self.reads.page(caller, asked, queries.JOBS)).as_json()

    async def _job(self, request: web.Request, caller: Caller) -> Any:
        values = parse(request.query, DETAIL_PARAMS)
        uid = request.match_info["uid"]
        found = await self.reads.job(caller, uid, lambda: queries.job_detail(uid, **values))
        return await embedded.shown_of(caller, found, embedded.AT_ROOT)

    async def _logs(self, request: web.Request, caller: Caller) -> Any:
        values = parse(request.query, LOG_PARAMS)
        uid = request.match_info["uid"]
        await self.reads.visible_job(caller, uid)
        page = await self.reads.within(lambda: queries.job_log_tails(uid, **values))
        return page.as_json()

    async def _named(self, request: web.Request, caller: Caller) -> Any:
        values = parse(request.query, PAGE)
        namespace, name = request.match_info["namespace"], request.match_info["name"]
        # Before its review, as a query's namespace is (``parsing.parse``).
        await caller.require("get", check_namespace(namespace))
        scope = await self.reads.clusters(caller)
        found = await self.reads.within(
            lambda: queries.named_jobs(namespace, name, **values, clusters=scope)
        )
        if not found.items and not values:
            return error(
                404, f"no job '{visible(namespace, limit=QUOTED)}'/'{visible(name, limit=QUOTED)}'"
            )
        return found.as_json()

    async def _events(self, request: web.Request, caller: Caller) -> Any:
        asked = listed(request.query, queries.EVENTS)
        return (await self.reads.page(caller, asked, queries.EVENTS)).as_json()

    async def _stats(self, request: web.Request, caller: Caller) -> Any:
        values = parse(request.query, STATS_PARAMS)
        await caller.require("list", values.get("namespace"), "/stats")
        scope = await self.reads.clusters(caller)
        return {"items": await self.reads.within(lambda: queries.stats(**values, clusters=scope))}

    async def _usage(self, request: web.Request, caller: Caller) -> Any:
        return await self.reads.usage(request, caller, parse(request.query, USAGE_PARAMS))


def openapi() -> dict[str, Any]:
    """The OpenAPI document of the API (``reading.openapi``), described by this module."""
    return document(PREFIX, __doc__ or "")


async def _openapi(_: web.Request, __: Caller) -> Any:
    """The document is no secret, but served to authenticated callers like the rest."""
    return openapi()


async def serve(
    host: str,
    port: int,
    access: auth.Access,
    tls: ApiTls = PLAIN,
    refresh: float = DEFAULTS.requestheader_refresh,
    **budget: Unpack[Budget],
) -> web.AppRunner | None:
    """Start serving the API within its ``budget`` as ``Reads`` takes it: a query's
    ``timeout``, at most ``concurrency`` queries at once (the size of the read pool,
    opened beforehand), one while ``narrowed()`` holds, the callers' ``flows``
    (``reading.gate``), the usage roll-up's ``usage_timeout``, ``kinds`` the kinds its
    filters may name (``queries.known_kinds`` of the settings), ``home`` the cluster it
    runs in (decision 36); None, logged, when the port cannot be bound.

    With ``tls`` enabled it serves HTTPS, and with Kubernetes' access control it believes
    a front proxy's headers (``frontproxy``, its configuration read every ``refresh``
    seconds); CertificateError when the serving certificate cannot be loaded.

    The runner's cleanup closes ``access``, also when the port cannot be bound.
    """
    if isinstance(access, auth.NoAuth) and not is_loopback(host):
        logger.warning(
            "The API on %s:%d checks no caller (authentication: none): anyone who reaches "
            "the port reads the whole archive",
            host,
            port,
        )
    served = certificates.serving(tls, ask_clients=isinstance(access, auth.KubernetesAuth))
    proxy = await frontproxy.front_proxy(access, served, tls, refresh) if served else None
    budget["front_proxy"] = proxy
    app = Api(access, **budget).site()
    if proxy is not None:
        app.on_shutdown.append(lambda _: proxy.stop())
    return await listen(
        app,
        host,
        port,
        f"the read-only API at {PREFIX}, the aggregated API at {kube.PREFIX} and the "
        f"console at / and {CONSOLE}/",
        ssl_context=served.context if served else None,
    )
