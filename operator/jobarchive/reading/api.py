"""The read-only HTTP API: the CLI's queries as JSON under ``/api/v1``.

Served by ``jobarchive serve`` and, when ``JOBARCHIVE_API_PORT`` is set, by the
operator process. Each route declares its query parameters once, in ``ROUTES``;
the parser and the OpenAPI document both read that table, so they cannot drift.
Errors are JSON, ``{"error": {"status": ..., "message": ...}}``: 400 for bad input
(unknown parameter, bad date, unknown status, bad cursor, page too large), 404
for an unknown job, 504 when a query outlives ``timeout``.
"""

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from aiohttp import web

from jobarchive.reading import queries
from jobarchive.serving import listen

PREFIX = "/api/v1"
DEFAULT_TIMEOUT = 10.0


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
STATS_PARAMS = (
    Param("by", "string", f"One of {', '.join(queries.STATS_GROUPS)} (default status)."),
    Param("since", "time", "Jobs created at or after."),
    Param("until", "time", "Jobs created before."),
)


def error(status: int, message: str) -> web.Response:
    """A JSON error response."""
    return web.json_response({"error": {"status": status, "message": message}}, status=status)


def parse(query: Mapping[str, str], params: tuple[Param, ...]) -> dict[str, Any]:
    """Typed values of the known parameters, keyed by their field; BadQuery otherwise."""
    known = {param.name: param for param in params}
    unknown = sorted(set(query) - set(known))
    if unknown:
        raise queries.BadQuery(f"unknown parameter {unknown[0]!r} (known: {', '.join(known)})")
    values: dict[str, Any] = {}
    for name, raw in query.items():
        param = known[name]
        values[param.field or name] = _typed(param, raw)
    return values


def _typed(param: Param, raw: str) -> Any:
    if param.type == "time":
        return queries.parse_time(raw, param.name)
    if param.type == "boolean":
        if raw.lower() not in ("true", "false"):
            raise queries.BadQuery(f"{param.name}: {raw!r} is not true or false")
        return raw.lower() == "true"
    if param.type == "integer":
        try:
            return int(raw)
        except ValueError:
            raise queries.BadQuery(f"{param.name}: {raw!r} is not an integer") from None
    return raw


Handler = Callable[[web.Request], Awaitable[Any]]


class Api:
    """The routes, bound to a query timeout."""

    def __init__(self, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.timeout = timeout

    def app(self) -> web.Application:
        """An aiohttp application serving the API."""
        app = web.Application()
        routes = {
            "/jobs": self._jobs,
            "/jobs/{uid}": self._job,
            "/jobs/{namespace}/{name}": self._named,
            "/events": self._events,
            "/stats": self._stats,
        }
        for path, handler in routes.items():
            app.router.add_get(PREFIX + path, self._guarded(handler))
        app.router.add_get(PREFIX + "/openapi.json", _openapi)
        return app

    def _guarded(self, handler: Handler) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def guarded(request: web.Request) -> web.Response:
            try:
                async with asyncio.timeout(self.timeout):
                    result = await handler(request)
            except queries.BadQuery as exc:
                return error(400, str(exc))
            except TimeoutError:
                return error(504, f"the query took longer than {self.timeout:g} s; narrow it")
            if isinstance(result, web.Response):
                return result
            return web.json_response(result)

        return guarded

    async def _jobs(self, request: web.Request) -> Any:
        values = parse(request.query, JOB_PARAMS + PAGE)
        limit, cursor = values.pop("limit", None), values.pop("cursor", None)
        page = await queries.list_jobs(queries.JobQuery(**values), limit, cursor)
        return page.as_json()

    async def _job(self, request: web.Request) -> Any:
        parse(request.query, ())
        detail = await queries.job_detail(request.match_info["uid"])
        if detail is None:
            return error(404, f"no job with uid {request.match_info['uid']!r}")
        return detail

    async def _named(self, request: web.Request) -> Any:
        parse(request.query, ())
        namespace, name = request.match_info["namespace"], request.match_info["name"]
        found = await queries.find_jobs(f"{namespace}/{name}")
        if not found:
            return error(404, f"no job {namespace}/{name}")
        return queries.Page(found, None).as_json()

    async def _events(self, request: web.Request) -> Any:
        values = parse(request.query, EVENT_PARAMS + PAGE)
        limit, cursor = values.pop("limit", None), values.pop("cursor", None)
        page = await queries.list_events(queries.EventQuery(**values), limit, cursor)
        return page.as_json()

    async def _stats(self, request: web.Request) -> Any:
        values = parse(request.query, STATS_PARAMS)
        rows = await queries.stats(
            values.get("by", "status"), values.get("since"), values.get("until")
        )
        return {"items": rows}


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
            "504": {"description": "The query outlived the timeout."},
        }
        if path:
            responses["404"] = {"description": "No such job."}
        return {"get": {"summary": summary, "parameters": parameters, "responses": responses}}

    paths = {
        "/jobs": operation("Jobs, newest first, one keyset page.", JOB_PARAMS + PAGE),
        "/jobs/{uid}": operation("One job with its pods, replicas and Events.", (), ("uid",)),
        "/jobs/{namespace}/{name}": operation(
            "Every job recorded under a name.", (), ("namespace", "name")
        ),
        "/events": operation("Events, most recent first, one keyset page.", EVENT_PARAMS + PAGE),
        "/stats": operation("Counts and durations of jobs by a column.", STATS_PARAMS),
    }
    return {
        "openapi": "3.0.3",
        "info": {"title": "jobarchive", "version": "1", "description": __doc__},
        "servers": [{"url": PREFIX}],
        "paths": paths,
    }


async def _openapi(_: web.Request) -> web.Response:
    return web.json_response(openapi())


async def serve(
    host: str, port: int, query_timeout: float = DEFAULT_TIMEOUT
) -> web.AppRunner | None:
    """Start serving the API; None, logged, when the port cannot be bound."""
    return await listen(Api(query_timeout).app(), host, port, f"the read-only API at {PREFIX}")
