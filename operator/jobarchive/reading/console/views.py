"""The console's pages: the jobs list at ``/``, a job at ``/jobs/{uid}`` and the last
lines of its failed containers' logs at ``/jobs/{uid}/logs``, the statistics at
``/stats``, and the package's own CSS, script and icon at ``/static/``.

Each page is the API's answer in other clothes: its query parameters go through the
API's tables and parser (``reading.handling``), its caller through the same review
(the bearer token an authenticating proxy such as oauth2-proxy sets, or nobody with
``--auth none``), its queries through the same read budget, and a failure becomes the
same status with the same message, as an HTML page. Templates are Jinja2's with
autoescaping, so no stored or requested text reaches the page unescaped; every page
carries a Content-Security-Policy that allows nothing but this server's own files,
and no inline script or style.
"""

import dataclasses
import datetime
import importlib.resources
import urllib.parse
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import jinja2
from aiohttp import web
from multidict import MultiDict, MultiDictProxy

from jobarchive.objects import mapping
from jobarchive.reading import queries
from jobarchive.reading.console import charts, formats, timeline
from jobarchive.reading.handling import HEADERS, Caller, Reads, Refusal, parse
from jobarchive.reading.queries import DETAIL_PARAMS, JOB_PARAMS, LOG_PARAMS, STATS_PARAMS

STATIC_TYPES = {".css": "text/css", ".js": "text/javascript", ".svg": "image/svg+xml"}
# The filters the list's form shows first; the others of JOB_PARAMS fold away.
MAIN_FILTERS = ("namespace", "name", "kind", "status", "owner", "created_since", "created_until")
STATS_WINDOW = tuple(param for param in STATS_PARAMS if param.name != "by")
DEFAULT_DAYS = 30
LONGEST_DAYS = 366
RECREATIONS = 20
TOP = 10
CLI = "jobarchive"
POD_COUNTS = ("active", "succeeded", "failed", "stopped")


@dataclasses.dataclass(frozen=True)
class Page:
    """A page to render: its template, what it shows, its status."""

    template: str
    context: dict[str, Any]
    status: int = 200


View = Callable[[Reads, web.Request, Caller, "MultiDictProxy[str]"], Awaitable[Page]]


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("jobarchive.reading.console", "templates"),
        autoescape=True,
        finalize=formats.shown,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(duration=formats.duration, utc=formats.utc, iso=formats.iso)
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


def given(request: web.Request) -> "MultiDictProxy[str]":
    """The request's parameters without the empty ones a form submits for blank fields
    (a blank filter is no filter), for the API's parser to judge."""
    return MultiDictProxy(MultiDict((k, v) for k, v in request.query.items() if v != ""))


def link(path: str, params: Mapping[str, str], **changes: str) -> str:
    """``path`` with the parameters, as changed (a value "" drops one)."""
    merged = {**dict(params), **changes}
    kept = {name: value for name, value in merged.items() if value != ""}
    return path + ("?" + urllib.parse.urlencode(kept) if kept else "")


class Console:
    """The console's routes over a read budget shared with the API."""

    def __init__(self, reads: Reads, api_prefix: str) -> None:
        self.reads = reads
        self.api_prefix = api_prefix
        self.env = _environment()
        self.static = _static()

    def mount(self, app: web.Application) -> None:
        """Add the console's routes to ``app``."""
        app.router.add_get("/", self._page(jobs_page))
        app.router.add_get("/jobs/{uid}", self._page(job_page))
        app.router.add_get("/jobs/{uid}/logs", self._page(logs_page))
        app.router.add_get("/stats", self._page(stats_page))
        app.router.add_get("/static/{name}", self._asset)
        # Any other path outside the API's is a console page that does not exist.
        app.router.add_get(r"/{path:(?!api(/|$)|apis(/|$)|openapi/).*}", self._missing)

    def render(self, template: str, code: int = 200, **context: Any) -> web.Response:
        """A page as an HTML answer, status ``code``, with the console's headers."""
        html = self.env.get_template(template).render(api=self.api_prefix, **context)
        return web.Response(
            text=html, status=code, content_type="text/html", charset="utf-8", headers=HEADERS
        )

    def _page(self, view: View) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def page(request: web.Request) -> web.Response:
            return await self.reads.respond(request, lambda: self._answer(request, view))

        return page

    async def _answer(self, request: web.Request, view: View) -> web.Response:
        params = given(request)
        try:
            caller = await self.reads.caller(request)
            page = await view(self.reads, request, caller, params)
            return self.render(page.template, page.status, **page.context)
        except Exception as exc:
            return self._refused(request, params, self.reads.refusal(request, exc))

    def _refused(
        self, request: web.Request, params: "MultiDictProxy[str]", refusal: Refusal
    ) -> web.Response:
        """An error page; on the list, with its form, to correct the filter in place."""
        form = _form(params) if request.path == "/" else None
        response = self.render(
            "error.html",
            refusal.status,
            status=refusal.status,
            message=refusal.message,
            form=form,
            kinds=self.reads.kinds.jobs,
        )
        response.headers.update(refusal.headers)
        return response

    async def _missing(self, request: web.Request) -> web.Response:
        message = "no such page: the console has /, /jobs/<uid> and /stats"
        return self.render("error.html", 404, status=404, message=message, form=None, kinds=())

    async def _asset(self, request: web.Request) -> web.Response:
        found = self.static.get(request.match_info["name"])
        if found is None:
            return await self._missing(request)
        body, content_type = found
        headers = {**HEADERS, "Cache-Control": "public, max-age=3600"}
        return web.Response(body=body, content_type=content_type, headers=headers)


async def jobs_page(
    reads: Reads, request: web.Request, caller: Caller, params: "MultiDictProxy[str]"
) -> Page:
    """The jobs list: the API's filters as a form, one keyset page, the next page's link."""
    page = await reads.page(caller, params, queries.JOBS, "a list without a namespace")
    context = {
        "jobs": page.items,
        "next": link("/", params, cursor=page.next_cursor) if page.next_cursor else None,
        "first": link("/", params, cursor="") if params.get("cursor") else None,
        "form": _form(params),
        "kinds": reads.kinds.jobs,
    }
    return Page("jobs.html", context)


async def job_page(
    reads: Reads, request: web.Request, caller: Caller, params: "MultiDictProxy[str]"
) -> Page:
    """One job: its summary, replicas, timeline, a page of its Events and of its pods,
    and the other jobs recorded under its name; 404 for a job the caller may not see."""
    values = parse(params, DETAIL_PARAMS)
    uid = request.match_info["uid"]

    async def read() -> tuple[dict[str, Any], queries.Timeline, queries.Page, set[str]] | None:
        detail = await queries.job_detail(uid, **values)
        drawn = None if detail is None else await queries.job_timeline(uid)
        if detail is None or drawn is None:
            return None
        named = await queries.named_jobs(detail["namespace"], detail["name"], RECREATIONS)
        return detail, drawn, named, await queries.pod_names_with_log_tails(uid)

    detail, drawn, named, tailed = await reads.job(caller, uid, read)
    now = datetime.datetime.now(datetime.UTC)
    created = formats.parse(detail["gmt_created"]) or now
    ended = formats.parse(detail["gmt_finished"]) or (now if detail["is_in_etcd"] else created)
    pods = timeline.pods_of(drawn.pods, now)
    context = {
        "job": detail,
        "remark": drawn.remark,
        "drawing": timeline.layout(pods, drawn.events, created, ended),
        "drawn": drawn,
        "drawn_pods": len(pods),
        "pod_limit": queries.TIMELINE_PODS,
        "event_limit": queries.TIMELINE_EVENTS,
        "per_role": timeline.BARS_PER_ROLE,
        "roles": _roles(detail),
        "others": [job for job in named.items if job["job_id"] != uid],
        "cli": f"{CLI} job {uid}",
        "tailed": tailed,
        "more_pods": _more(request.path, params, "pods_cursor", detail["pods_next_cursor"]),
        "more_events": _more(request.path, params, "events_cursor", detail["events_next_cursor"]),
    }
    return Page("job.html", context)


async def logs_page(
    reads: Reads, request: web.Request, caller: Caller, params: "MultiDictProxy[str]"
) -> Page:
    """The last lines of a job's failed containers' logs, newest failure first, narrowed
    by pod and container as in the API; 404 for a job the caller may not see."""
    values = parse(params, LOG_PARAMS)
    uid = request.match_info["uid"]

    async def read() -> tuple[dict[str, Any], queries.Page] | None:
        job = await queries.one_job(uid)
        return None if job is None else (job, await queries.job_log_tails(uid, **values))

    job, tails = await reads.job(caller, uid, read)
    context = {
        "job": job,
        "tails": tails.items,
        "next": _more(request.path, params, "cursor", tails.next_cursor),
        "cli": f"{CLI} logs {uid}",
        "narrowed": values,
    }
    return Page("logs.html", context)


async def stats_page(
    reads: Reads, request: web.Request, caller: Caller, params: "MultiDictProxy[str]"
) -> Page:
    """Charts over a window of creation (default: the last 30 days), over all
    namespaces, as the API's /stats."""
    since, until = _window(parse(params, STATS_WINDOW))
    await caller.require(
        "list", None, "the statistics page", "read the jobs list of a namespace instead"
    )

    async def figures() -> tuple[Any, ...]:
        return (
            await queries.jobs_per_day(since, until),
            await queries.failure_reasons(since, until),
            await queries.stats("kind", since, until),
            await queries.stats("owner", since, until),
            await queries.gpu_hours(since, until),
        )

    per_day, failures, kinds, owners, gpus = await reads.within(figures)
    context = {
        "since": since,
        "until": until,
        "window": {"since": formats.iso(since), "until": formats.iso(until)},
        "days": charts.day_chart(per_day, charts.days_between(since, until)),
        "failures": charts.failure_chart(failures),
        "durations": charts.duration_chart(kinds),
        "owners": charts.owner_chart(owners[:TOP]),
        "gpus": charts.gpu_chart(gpus.owners),
        "gpus_cut": gpus.cut,
        "gpu_scan": queries.GPU_SCAN,
    }
    return Page("stats.html", context)


def _window(values: dict[str, Any]) -> tuple[datetime.datetime, datetime.datetime]:
    """The statistics' window of creation: as given, else ending with today and
    ``DEFAULT_DAYS`` long; refused when empty or over ``LONGEST_DAYS``."""
    until = values.get("until") or _tomorrow()
    since = values.get("since") or until - datetime.timedelta(days=DEFAULT_DAYS)
    if until <= since:
        raise queries.BadQuery("until: must be later than since")
    if (until - since).days > LONGEST_DAYS:
        raise queries.BadQuery(f"since: a window over {LONGEST_DAYS} days; narrow it")
    return since, until


def _tomorrow() -> datetime.datetime:
    """The end of today, UTC: the default window ends with the day."""
    today = datetime.datetime.now(datetime.UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return today + datetime.timedelta(days=1)


def _form(params: "MultiDictProxy[str]") -> dict[str, Any]:
    """The list's filters as the form shows them (the raw text, to correct in place)."""
    values = {param.name: params.get(param.name, "") for param in JOB_PARAMS}
    folded = [p for p in JOB_PARAMS if p.name not in MAIN_FILTERS and p.name != "in_cluster"]
    return {
        "fields": values,
        "folded": [(p.name, p.description) for p in folded],
        "open": any(values[p.name] for p in folded),
        "limit": params.get("limit", ""),
    }


def _more(path: str, params: "MultiDictProxy[str]", name: str, cursor: str | None) -> str | None:
    return link(path, params, **{name: cursor}) if cursor else None


def _roles(detail: dict[str, Any]) -> list[dict[str, Any]]:
    """Per replica type: the requested replicas and resources, and the pods' counts.

    The spec names a type as its API spells it (``Worker``), the pods' labels often in
    lower case (``worker``): they are matched regardless of case.
    """
    resources = {
        str(role).lower(): (role, mapping(spec))
        for role, spec in mapping(detail["resources"]).items()
    }
    replicas = {str(role).lower(): counts for role, counts in detail["replicas"].items()}
    rows = []
    for key in sorted(set(resources) | set(replicas)):
        role, spec = resources.get(key, (key, {}))
        wanted = mapping(spec.get("resources"))
        rows.append(
            {
                "role": role,
                "replicas": spec.get("replicas", "-"),
                "requests": _amounts(wanted.get("requests")),
                "limits": _amounts(wanted.get("limits")),
                "pods": {**dict.fromkeys(POD_COUNTS, 0), **replicas.get(key, {})},
            }
        )
    return rows


def _amounts(amounts: Any) -> str:
    if not isinstance(amounts, dict) or not amounts:
        return "-"
    return ", ".join(f"{name}={value}" for name, value in sorted(amounts.items()))
