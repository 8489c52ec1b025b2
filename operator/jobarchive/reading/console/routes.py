"""The console's routes at both of its mounts (decision 31): its pages and the package's
own CSS, script and icon, each one path segment below the mount; the old paths of a
job's pages, sent on to the new; and every failure, the console's missing pages and
refused methods included, an HTML page with the read side's headers
(``handling.HEADERS``: a Content-Security-Policy that allows nothing but this server's
own files, no inline script or style)."""

import functools
import importlib.resources
import urllib.parse
from collections.abc import Awaitable, Callable
from typing import Any

import jinja2
from aiohttp import web

from jobarchive.core.times import duration
from jobarchive.reading import auth, queries
from jobarchive.reading.console import formats, reports, views
from jobarchive.reading.console.mounts import (
    AGGREGATED,
    API_ROOTS,
    Mount,
    aggregated,
    at_root,
    serves,
)
from jobarchive.reading.console.views import Download, View, Visit, given
from jobarchive.reading.handling import HEADERS, Reads, Refusal

STATIC_TYPES = {".css": "text/css", ".js": "text/javascript", ".svg": "image/svg+xml"}
Reviewed = Callable[[Mount], auth.Resource]
# Each page by its path segment, with the resource its reads are reviewed as.
PAGES: dict[str, tuple[View, Reviewed]] = {
    "": (views.jobs_page, lambda mount: mount.jobs),
    "job": (views.job_page, lambda mount: mount.jobs),
    "logs": (views.logs_page, lambda mount: mount.lists.logs),
    "stats": (reports.stats_page, lambda mount: mount.jobs),
    "usage": (reports.usage_page, lambda mount: mount.jobs),
    "usage.csv": (reports.usage_csv, lambda mount: mount.jobs),
}
# The paths of a job's pages before decision 31, which old links and bookmarks hold,
# and where each now is, relative to it.
MOVED = {
    "/jobs/{uid}": "../job",
    "/jobs/{uid}/logs": "../../logs",
}
MISSING = (
    "no such page: the console has ./ (the jobs), job?uid=..., logs?uid=..., stats, usage "
    "and usage.csv"
)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
# The first segments of the APIs' paths, as a route's pattern.
APIS = "|".join(root.removeprefix("/") for root in API_ROOTS)


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("jobarchive.reading.console", "templates"),
        autoescape=True,
        finalize=formats.finalize,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        duration=duration,
        utc=formats.utc,
        iso=formats.iso,
        number=formats.number,
        percent=formats.percent,
        cluster=formats.cluster,
    )
    env.globals.update(statuses=queries.JOB_STATUSES, quote=_quote)
    return env


def _static() -> dict[str, tuple[bytes, str]]:
    """The package's static files, read once: served from memory by name, so that no
    request names a path on disk."""
    folder = importlib.resources.files("jobarchive.reading.console") / "static"
    found = {}
    for entry in folder.iterdir():
        suffix = "." + entry.name.rpartition(".")[2]
        if suffix in STATIC_TYPES:
            found[entry.name] = (entry.read_bytes(), STATIC_TYPES[suffix])
    return found


def _quote(value: str) -> str:
    return urllib.parse.quote(value, safe="")


class Console:
    """The console's routes over a read budget shared with the API, at ``/`` and under
    the aggregated prefix."""

    def __init__(self, reads: Reads, api_prefix: str) -> None:
        self.reads = reads
        self.root = at_root(api_prefix)
        self.env = _environment()
        self.static = _static()

    def mount(self, app: web.Application) -> None:
        """Add the console's routes to ``app``, and its error pages to its middlewares."""
        for mount in (self.root, AGGREGATED):
            for name, (view, reviewed) in PAGES.items():
                app.router.add_get(f"{mount.path}/{name}", self._page(view, mount, reviewed))
            for name in self.static:
                app.router.add_get(f"{mount.path}/{name}", self._asset)
        # Without its slash the prefix would make every relative link miss.
        app.router.add_get(AGGREGATED.path, self._slash)
        for old, new in MOVED.items():
            app.router.add_get(old, self._moved(new))
        app.router.add_get("/static/{name}", self._moved_asset)
        app.router.add_get(AGGREGATED.path + "/{path:.*}", self._missing)
        # Any other path outside the APIs' is a console page that does not exist.
        app.router.add_get(f"/{{path:(?!(?:{APIS})(?:/|$)).*}}", self._missing)
        app.middlewares.append(self._errors)

    def render(
        self, request: web.Request, template: str, code: int, **context: Any
    ) -> web.Response:
        """A page as an HTML answer, status ``code``, with the console's headers."""
        mount = AGGREGATED if aggregated(request.path) else self.root
        html = self.env.get_template(template).render(mount=mount, **context)
        return web.Response(
            text=html, status=code, content_type="text/html", charset="utf-8", headers=HEADERS
        )

    def _page(self, view: View, mount: Mount, reviewed: Reviewed) -> Handler:
        async def page(request: web.Request) -> web.Response:
            answer = functools.partial(self._answer, request, view, mount, reviewed)
            return await self.reads.respond(request, answer)

        return page

    async def _answer(
        self, request: web.Request, view: View, mount: Mount, reviewed: Reviewed
    ) -> web.Response:
        params = given(request)
        try:
            caller = await self.reads.caller(request, reviewed(mount))
            page = await view(Visit(self.reads, params, mount, caller))
            if isinstance(page, Download):
                return _download(page)
            return self.render(request, page.template, page.status, **page.context)
        except Exception as exc:
            refusal = self.reads.refusal(request, exc)
            return self._refused(request, refusal, view)

    def _refused(
        self, request: web.Request, refusal: Refusal, view: View | None = None
    ) -> web.Response:
        """An error page; on a page with a form, with it, to correct the input in place."""
        response = self.render(
            request,
            "error.html",
            refusal.status,
            status=refusal.status,
            message=refusal.message,
            form=reports.refused_form(view, given(request)),
            kinds=self.reads.kinds.jobs,
        )
        response.headers.update(refusal.headers)
        return response

    async def _missing(self, request: web.Request) -> web.Response:
        return self._refused(request, Refusal(404, MISSING))

    async def _asset(self, request: web.Request) -> web.Response:
        body, content_type = self.static[request.path.rpartition("/")[2]]
        headers = {**HEADERS, "Cache-Control": "public, max-age=3600"}
        return web.Response(body=body, content_type=content_type, headers=headers)

    async def _slash(self, request: web.Request) -> web.Response:
        raise web.HTTPMovedPermanently(_relative("console/", request))

    def _moved(self, to: str) -> Handler:
        """Send a job's page from its old path on to ``to``, relative to the old path,
        with the job's uid and the old query."""

        async def moved(request: web.Request) -> web.Response:
            raise web.HTTPMovedPermanently(_relative(to, request, uid=request.match_info["uid"]))

        return moved

    async def _moved_asset(self, request: web.Request) -> web.Response:
        """Send an asset from ``/static/`` on to its place beside the pages."""
        name = request.match_info["name"]
        if name not in self.static:
            return await self._missing(request)
        raise web.HTTPMovedPermanently(f"../{_quote(name)}")

    @web.middleware
    async def _errors(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """aiohttp's own refusals of the console's paths (a method not GET) as pages."""
        try:
            return await handler(request)
        except web.HTTPException as exc:
            if exc.status < 400 or not serves(request.path):
                raise
            message = f"{exc.reason.lower()}: the console answers GET only"
            response = self._refused(request, Refusal(exc.status, message))
            if "Allow" in exc.headers:
                response.headers["Allow"] = exc.headers["Allow"]
            return response


def _download(download: Download) -> web.Response:
    """A file to save, with the console's headers."""
    disposition = f'attachment; filename="{download.filename}"'
    headers = {**HEADERS, "Content-Disposition": disposition}
    return web.Response(
        text=download.text, content_type=download.content_type, charset="utf-8", headers=headers
    )


def _relative(target: str, request: web.Request, **first: str) -> str:
    """``target`` with ``first`` and then the request's own query."""
    query = [*first.items(), *request.query.items()]
    return target + ("?" + urllib.parse.urlencode(query) if query else "")
