"""The read-only HTTP API: the CLI's queries as JSON under ``/api/v1``.

Served by ``jobarchive serve`` and, when ``JOBARCHIVE_API_PORT`` is set, by the
operator process. Each route declares its query parameters once, in ``ROUTES``;
the parser and the OpenAPI document both read that table, so they cannot drift.
Errors are JSON, ``{"error": {"status": ..., "message": ...}}``: 400 for bad input
(unknown parameter, bad date, unknown status, bad cursor, page too large), 401
without a valid bearer token, 403 when the caller may not read the namespace asked
for (or all namespaces, when none is named), 404 for an unknown job, 503 when
Kubernetes cannot review the caller or when every read connection stays busy for
``QUEUE_WAIT`` (with ``Retry-After``), 504 when a query outlives ``timeout``.

The queries run on the read side's own pool (``storage.reads``), at most
``concurrency`` at once, its size, and one at a time while the operator records
(``reading.gate``): a request beyond them waits ``QUEUE_WAIT`` for
one to finish, then is answered 503 rather than queued, so that a flood of requests
costs their callers a retry, not the archive a growing queue of waiting
statements. A request's queries share one deadline, which the database enforces
(``reads.deadline``): a 504 leaves nothing running on the server.

Who may read what is ``reading.auth``'s answer. A request names its namespace, or
covers all of them; a job asked for by uid names none, so it is checked against
its own namespace once found, and one the caller may not see is as unknown as a
job that never was (404): the answer must not tell that it exists.
"""

import asyncio
import dataclasses
import logging
import math
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from aiohttp import web
from multidict import MultiMapping

from jobarchive.config import DEFAULTS
from jobarchive.reading import auth, gate, queries
from jobarchive.reading.gate import Gate
from jobarchive.serving import SEND_TIMEOUT, listen, send
from jobarchive.storage import errors, failures, reads

logger = logging.getLogger(__name__)
T = TypeVar("T")

PREFIX = "/api/v1"
DEFAULT_TIMEOUT = 10.0
DEFAULT_CONCURRENCY = DEFAULTS.api_concurrency
# Seconds a request waits for a free read connection before it is answered 503.
QUEUE_WAIT = 1.0
# The database stops a statement at its request's deadline; this much later the
# request is abandoned anyway, should an answer never come (a network that hangs).
BACKSTOP = 1.0


@dataclasses.dataclass(frozen=True)
class Param:
    """One query parameter: its name, type (string, time, boolean, integer), meaning."""

    name: str
    type: str
    description: str
    field: str | None = None


PAGE = (
    Param(
        "limit", "integer", f"Page size, 1..{queries.MAX_PAGE} (default {queries.DEFAULT_PAGE})."
    ),
    Param("cursor", "string", "The next_cursor of the previous page."),
)
JOB_PARAMS = (
    Param("namespace", "string", "Namespace."),
    Param("name", "string", "Name prefix.", "name_prefix"),
    Param("name_contains", "string", "Name substring (scans what the other filters leave)."),
    Param("kind", "string", "Kind, e.g. TFJob."),
    Param("status", "string", f"One of {', '.join(queries.JOB_STATUSES)}."),
    Param("region", "string", "deploy_region."),
    Param("tenant", "string", "Tenant."),
    Param("owner", "string", "Owner (the tenancy's user)."),
    Param("created_since", "time", "Created at or after (RFC 3339 time or date)."),
    Param("created_until", "time", "Created before."),
    Param("finished_since", "time", "Finished at or after."),
    Param("finished_until", "time", "Finished before."),
    Param("in_cluster", "boolean", "true: still in the cluster; false: gone."),
)
EVENT_PARAMS = (
    Param("namespace", "string", "The involved object's namespace."),
    Param("object", "string", "The involved object's name.", "object_name"),
    Param("uid", "string", "The involved object's uid.", "object_uid"),
    Param("kind", "string", "The involved object's kind.", "object_kind"),
    Param("type", "string", "Normal or Warning."),
    Param("reason", "string", "Reason, e.g. OOMKilling."),
    Param("since", "time", "Last occurred at or after."),
    Param("until", "time", "Last occurred before."),
)
DETAIL_PARAMS = (
    Param(
        "limit",
        "integer",
        f"Pods and Events per page, 1..{queries.MAX_PAGE} (default {queries.DEFAULT_PAGE}).",
    ),
    Param("pods_cursor", "string", "The pods_next_cursor of the previous answer."),
    Param("events_cursor", "string", "The events_next_cursor of the previous answer."),
)
STATS_PARAMS = (
    Param("by", "string", f"One of {', '.join(queries.STATS_GROUPS)} (default status)."),
    Param("since", "time", "Jobs created at or after."),
    Param("until", "time", "Jobs created before."),
)


def error(status: int, message: str, headers: Mapping[str, str] | None = None) -> web.Response:
    """A JSON error response."""
    body = {"error": {"status": status, "message": message}}
    return web.json_response(body, status=status, headers=headers)


class Forbidden(Exception):
    """The caller may not read what the request asks for (403); the message says why."""


@dataclasses.dataclass(frozen=True)
class Caller:
    """Who made a request, and the access control that knows what they may read."""

    identity: auth.Identity
    access: auth.Access

    async def may(self, verb: str, namespace: str | None) -> bool:
        """Whether the caller may ``verb`` jobs in ``namespace`` (None: in all)."""
        return await self.access.allowed(self.identity, verb, namespace or auth.ALL_NAMESPACES)

    async def require(
        self,
        verb: str,
        namespace: str | None,
        what: str = "a request without a namespace",
        instead: str = "name a namespace (?namespace=...)",
    ) -> None:
        """Raise Forbidden unless the caller may; over all namespaces, the message says
        what covers them (``what``) and what to ask ``instead``."""
        if await self.may(verb, namespace):
            return
        # Named as RBAC names it, so that whoever grants access knows what to grant.
        denied = f"user {self.identity.username!r} may not {verb} {auth.RESOURCE}.{auth.GROUP}"
        if namespace:
            raise Forbidden(f"{denied} in namespace {namespace!r}")
        raise Forbidden(f"{what} covers all namespaces, and {denied} in all of them: {instead}")


# Longer than any value a filter can match (the widest column is 512 characters) or
# than any cursor this archive gives out: refused before anything reads it.
LONGEST_VALUE = 1024


def parse(query: "MultiMapping[str]", params: tuple[Param, ...]) -> dict[str, Any]:
    """Typed values of the known parameters, keyed by their field; BadQuery otherwise:
    an unknown or repeated parameter, or a value too long, is refused, not guessed at."""
    known = {param.name: param for param in params}
    unknown = sorted(set(query) - set(known))
    if unknown:
        names = ", ".join(known) or "none"
        raise queries.BadQuery(f"unknown parameter {queries.quoted(unknown[0])} (known: {names})")
    values: dict[str, Any] = {}
    for name in query:
        param = known[name]
        raw = query.getall(name)
        if len(raw) > 1:
            raise queries.BadQuery(f"{name}: given {len(raw)} times; give it once")
        if len(raw[0]) > LONGEST_VALUE:
            raise queries.BadQuery(f"{name}: {len(raw[0])} characters, over {LONGEST_VALUE}")
        values[param.field or name] = _typed(param, raw[0])
    return values


def _typed(param: Param, raw: str) -> Any:
    if param.type == "time":
        return queries.parse_time(raw, param.name)
    if param.type == "boolean":
        if raw.lower() not in ("true", "false"):
            raise queries.BadQuery(f"{param.name}: {queries.quoted(raw)} is not true or false")
        return raw.lower() == "true"
    if param.type == "integer":
        # ASCII digits only: int() would also take full-width digits, "5_0" and " 5 ".
        if not (raw.isascii() and raw.isdigit()) or len(raw) > 6:
            raise queries.BadQuery(f"{param.name}: {queries.quoted(raw)} is not a number")
        return int(raw)
    return raw


Handler = Callable[[web.Request, Caller], Awaitable[Any]]


class Api:
    """The routes, bound to an access control, a query timeout and how many queries
    may run at once (the read pool's size)."""

    def __init__(
        self,
        access: auth.Access,
        timeout: float = DEFAULT_TIMEOUT,
        concurrency: int = DEFAULT_CONCURRENCY,
        narrowed: Callable[[], bool] | None = None,
        send_timeout: float = SEND_TIMEOUT,
    ) -> None:
        self.access = access
        self.timeout = timeout
        self.send_timeout = send_timeout
        self.gate = Gate(concurrency, narrowed)

    def app(self) -> web.Application:
        """An aiohttp application serving the API; its cleanup closes the access control."""
        app = web.Application()
        routes = {
            "/jobs": self._jobs,
            "/jobs/{uid}": self._job,
            "/jobs/{namespace}/{name}": self._named,
            "/events": self._events,
            "/stats": self._stats,
            "/openapi.json": _openapi,
        }
        for path, handler in routes.items():
            app.router.add_get(PREFIX + path, self._guarded(handler))
        app.on_cleanup.append(lambda _: self.access.close())
        return app

    def _guarded(self, handler: Handler) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def guarded(request: web.Request) -> web.Response:
            # Sent here, within a deadline, rather than by aiohttp after the handler, which
            # would wait for ever on a client that never reads its answer.
            return await send(request, await self._answer(request, handler), self.send_timeout)

        return guarded

    async def _answer(self, request: web.Request, handler: Handler) -> web.Response:
        """The handler's answer, or the error it ran into as JSON."""
        try:
            identity = await self.access.authenticate(request.headers.get("Authorization"))
            result = await handler(request, Caller(identity, self.access))
        except auth.Unauthenticated as exc:
            return error(401, str(exc), {"WWW-Authenticate": "Bearer"})
        except Forbidden as exc:
            return error(403, str(exc))
        except auth.ReviewFailed as exc:
            return error(503, str(exc))
        except gate.Busy:
            return error(
                503,
                f"every read connection is busy; retry in {QUEUE_WAIT:g} s",
                {"Retry-After": f"{math.ceil(QUEUE_WAIT)}"},
            )
        except queries.BadQuery as exc:
            return error(400, str(exc))
        except (reads.QueryTimeout, TimeoutError):
            return error(
                504, f"the query took longer than {self.timeout:g} s and was stopped; narrow it"
            )
        except failures.ERRORS as exc:
            if not errors.is_unavailable(exc):
                return self._failed(request, exc)
            logger.warning("The API's database cannot be reached: %s", failures.describe(exc))
            return error(
                503,
                "the archive's database cannot be reached; retry later",
                {"Retry-After": f"{math.ceil(QUEUE_WAIT)}"},
            )
        except Exception as exc:
            return self._failed(request, exc)
        if isinstance(result, web.Response):
            return result
        return web.json_response(result)

    @staticmethod
    def _failed(request: web.Request, exc: BaseException) -> web.Response:
        """A bug's or a refused statement's answer: the caller learns that much, the log
        the kind of error (its text may echo the request, so it is not logged)."""
        logger.error(
            "%s %s failed: %s",
            request.method,
            request.path_qs[:200].encode("unicode_escape").decode(),
            type(exc).__name__,
        )
        return error(500, "the archive could not answer; the error is logged")

    async def _within(self, query: Callable[[], Awaitable[T]]) -> T:
        """The query's result, run on a free read connection; Busy when none frees in
        ``QUEUE_WAIT``, QueryTimeout past the timeout (reviews are not counted).

        The query is given uncalled, so that a request turned away never makes it.
        """
        async with self.gate.turn(QUEUE_WAIT):
            with reads.deadline(self.timeout):
                async with asyncio.timeout(self.timeout + BACKSTOP):
                    return await query()

    async def _jobs(self, request: web.Request, caller: Caller) -> Any:
        values = parse(request.query, JOB_PARAMS + PAGE)
        await caller.require("list", values.get("namespace"))
        limit, cursor = values.pop("limit", None), values.pop("cursor", None)
        page = await self._within(
            lambda: queries.list_jobs(queries.JobQuery(**values), limit, cursor)
        )
        return page.as_json()

    async def _job(self, request: web.Request, caller: Caller) -> Any:
        values = parse(request.query, DETAIL_PARAMS)
        uid = request.match_info["uid"]
        detail = await self._within(lambda: queries.job_detail(uid, **values))
        if detail is None or not await caller.may("get", detail["namespace"]):
            return error(404, f"no job with uid {queries.quoted(uid)}")
        return detail

    async def _named(self, request: web.Request, caller: Caller) -> Any:
        values = parse(request.query, PAGE)
        namespace, name = request.match_info["namespace"], request.match_info["name"]
        await caller.require("get", namespace)
        found = await self._within(lambda: queries.named_jobs(namespace, name, **values))
        if not found.items and not values:
            return error(404, f"no job {queries.quoted(namespace)}/{queries.quoted(name)}")
        return found.as_json()

    async def _events(self, request: web.Request, caller: Caller) -> Any:
        values = parse(request.query, EVENT_PARAMS + PAGE)
        await caller.require("list", values.get("namespace"))
        limit, cursor = values.pop("limit", None), values.pop("cursor", None)
        page = await self._within(
            lambda: queries.list_events(queries.EventQuery(**values), limit, cursor)
        )
        return page.as_json()

    async def _stats(self, request: web.Request, caller: Caller) -> Any:
        values = parse(request.query, STATS_PARAMS)
        await caller.require("list", None, "/stats", "name a namespace in /jobs or /events")
        by, since, until = values.get("by", "status"), values.get("since"), values.get("until")
        return {"items": await self._within(lambda: queries.stats(by, since, until))}


def _schema(param: Param) -> dict[str, Any]:
    if param.type == "time":
        return {"type": "string", "format": "date-time"}
    return {"type": param.type}


def openapi() -> dict[str, Any]:
    """The OpenAPI 3.0 document of the API, built from the same parameter table."""

    def operation(summary: str, params: tuple[Param, ...], path: tuple[str, ...] = ()) -> Any:
        parameters = [
            {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
            for name in path
        ] + [
            {"name": p.name, "in": "query", "description": p.description, "schema": _schema(p)}
            for p in params
        ]
        responses = {
            "200": {"description": "OK", "content": {"application/json": {}}},
            "400": {"description": "Bad input; the message says what to change."},
            "401": {"description": "No bearer token, or one Kubernetes does not accept."},
            "403": {"description": "The caller may not read the namespace, or all of them."},
            "503": {
                "description": "Kubernetes could not review the caller, or every read "
                "connection stayed busy (Retry-After says when to retry)."
            },
            "504": {"description": "The query outlived the timeout; the database stopped it."},
        }
        if path:
            responses["404"] = {"description": "No such job."}
        return {"get": {"summary": summary, "parameters": parameters, "responses": responses}}

    paths = {
        "/jobs": operation("Jobs, newest first, one keyset page.", JOB_PARAMS + PAGE),
        "/jobs/{uid}": operation(
            "One job, a page of its pods and of its Events, and its replicas.",
            DETAIL_PARAMS,
            ("uid",),
        ),
        "/jobs/{namespace}/{name}": operation(
            "Every job recorded under a name, one keyset page.", PAGE, ("namespace", "name")
        ),
        "/events": operation("Events, most recent first, one keyset page.", EVENT_PARAMS + PAGE),
        "/stats": operation("Counts and durations of jobs by a column.", STATS_PARAMS),
    }
    return {
        "openapi": "3.0.3",
        "info": {"title": "jobarchive", "version": "1", "description": __doc__},
        "servers": [{"url": PREFIX}],
        "paths": paths,
        # A Kubernetes bearer token (unless served with authentication "none").
        "components": {"securitySchemes": {"kubernetes": {"type": "http", "scheme": "bearer"}}},
        "security": [{"kubernetes": []}],
    }


async def _openapi(_: web.Request, __: Caller) -> Any:
    """The document is no secret, but served to authenticated callers like the rest."""
    return openapi()


async def serve(
    host: str,
    port: int,
    access: auth.Access,
    query_timeout: float = DEFAULT_TIMEOUT,
    concurrency: int = DEFAULT_CONCURRENCY,
    narrowed: Callable[[], bool] | None = None,
) -> web.AppRunner | None:
    """Start serving the API, at most ``concurrency`` queries at once (the size of the
    read pool, opened beforehand), one while ``narrowed()`` holds (``reading.gate``);
    None, logged, when the port cannot be bound.

    The runner's cleanup closes ``access``, also when the port cannot be bound.
    """
    if isinstance(access, auth.NoAuth) and not auth.is_loopback(host):
        logger.warning(
            "The API on %s:%d checks no caller (authentication: none): anyone who reaches "
            "the port reads the whole archive",
            host,
            port,
        )
    return await listen(
        Api(access, query_timeout, concurrency, narrowed).app(),
        host,
        port,
        f"the read-only API at {PREFIX}",
    )
