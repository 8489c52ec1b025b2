"""The console's pages, each one path segment below its mount (decision 31): the jobs
list (``./``, or the namespaces the caller may read when it may not list them all), a
job (``job?uid=``), the last lines of its failed containers' logs (``logs?uid=``) and
the statistics (``stats``) and the usage (``usage``).

Each page is the API's answer in other clothes: its query parameters go through the
API's tables and parser (``reading.handling``), its caller through the same reviews,
of the resources its mount names, its queries through the same read budget, and a
failure becomes the same status with the same message, as an HTML page. Templates are
Jinja2's with autoescaping, so no stored or requested text reaches the page unescaped;
every link they write is relative, so one set serves both mounts.
"""

import asyncio
import dataclasses
import datetime
import urllib.parse
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from aiohttp import web
from multidict import MultiDict, MultiDictProxy

from jobarchive.objects import mapping
from jobarchive.reading import queries, usage
from jobarchive.reading.console import charts, formats, timeline, usage_charts
from jobarchive.reading.console.mounts import Mount
from jobarchive.reading.handling import Caller, Reads
from jobarchive.reading.parsing import parse
from jobarchive.reading.queries import (
    DETAIL_PARAMS,
    JOB_PARAMS,
    LOG_PARAMS,
    STATS_PARAMS,
    USAGE_PARAMS,
    Param,
)

# The filters the list's form shows first; the others of JOB_PARAMS fold away.
MAIN_FILTERS = ("namespace", "name", "kind", "status", "owner", "created_since", "created_until")
STATS_WINDOW = tuple(param for param in STATS_PARAMS if param.name not in ("by", "namespace"))
USAGE_WINDOW = tuple(param for param in USAGE_PARAMS if param.name != "every")
UID = Param("uid", "string", "The job's uid.")
DEFAULT_DAYS = 30
LONGEST_DAYS = 366
RECREATIONS = 20
TOP = 10
CLI = "jobarchive"
POD_COUNTS = ("active", "succeeded", "failed", "stopped")
# The namespaces a landing page offers at most, and reviews at once.
LANDING = 100
REVIEWS_AT_ONCE = 8


@dataclasses.dataclass(frozen=True)
class Page:
    """A page to render: its template, what it shows, its status."""

    template: str
    context: dict[str, Any]
    status: int = 200


@dataclasses.dataclass(frozen=True)
class Visit:
    """A page request as a view reads it: the read side, the request's parameters, the
    mount it came by, and its caller, whose reads are reviewed as the mount says."""

    reads: Reads
    params: "MultiDictProxy[str]"
    mount: Mount
    caller: Caller


View = Callable[[Visit], Awaitable[Page]]


def given(request: web.Request) -> "MultiDictProxy[str]":
    """The request's parameters without the empty ones a form submits for blank fields
    (a blank filter is no filter), for the API's parser to judge."""
    return MultiDictProxy(MultiDict((k, v) for k, v in request.query.items() if v != ""))


def link(page: str, params: Mapping[str, str], **changes: str) -> str:
    """A page's relative link with the parameters, as changed (a value "" drops one)."""
    merged = {**dict(params), **changes}
    kept = {name: value for name, value in merged.items() if value != ""}
    return page + ("?" + urllib.parse.urlencode(kept) if kept else "")


async def jobs_page(visit: Visit) -> Page:
    """The jobs list: the API's filters as a form, one keyset page, the next page's link;
    over all namespaces for a caller who may not list them all, the namespaces it may."""
    params = visit.params
    parse(params, JOB_PARAMS + queries.PAGE)
    if "namespace" not in params and not await visit.caller.may("list", None):
        return await landing_page(visit)
    page = await visit.reads.page(visit.caller, params, queries.JOBS, "a list without a namespace")
    context = {
        "jobs": page.items,
        "next": link("./", params, cursor=page.next_cursor) if page.next_cursor else None,
        "first": link("./", params, cursor="") if params.get("cursor") else None,
        "form": form(params),
        "kinds": visit.reads.kinds.jobs,
    }
    return Page("jobs.html", context)


async def landing_page(visit: Visit) -> Page:
    """The archive's namespaces (the first ``LANDING``) the caller may list, as links to
    their lists with the filters given; 403 when none, saying what to ask for."""
    names, more = await visit.reads.within(lambda: queries.job_namespaces(LANDING))
    readable = await _readable(visit.caller, names)
    context = {
        "namespaces": [(name, link("./", visit.params, namespace=name)) for name in readable],
        "archived": len(names),
        "more": more,
        "limit": LANDING,
        "user": visit.caller.identity.username,
        "resource": visit.mount.jobs,
        "form": form(visit.params),
        "kinds": visit.reads.kinds.jobs,
    }
    return Page("landing.html", context, 200 if readable else 403)


async def _readable(caller: Caller, namespaces: list[str]) -> list[str]:
    """The namespaces the caller may list, reviewed a few at once (each answer cached)."""
    turns = asyncio.Semaphore(REVIEWS_AT_ONCE)

    async def may(namespace: str) -> bool:
        async with turns:
            return await caller.may("list", namespace)

    try:
        async with asyncio.TaskGroup() as group:
            answers = [group.create_task(may(namespace)) for namespace in namespaces]
    except ExceptionGroup as failed:
        # The first review that failed says why (a 503), as a single one would.
        raise failed.exceptions[0] from None
    return [name for name, answer in zip(namespaces, answers, strict=True) if answer.result()]


def _uid(values: dict[str, Any], page: str) -> str:
    uid = values.pop("uid", None)
    if uid is None:
        raise queries.BadQuery(f"uid: name the job ({page}?uid=<the job's uid>)")
    return str(uid)


async def job_page(visit: Visit) -> Page:
    """One job: its summary, replicas, timeline, a page of its Events (when the caller may
    list the mount's Events there) and of its pods, and the other jobs recorded under
    its name; 404 for a job the caller may not see."""
    values = parse(visit.params, (UID, *DETAIL_PARAMS))
    uid = _uid(values, "job")

    async def read() -> tuple[dict[str, Any], queries.Timeline, set[str]] | None:
        detail = await queries.job_detail(uid, **values)
        drawn = None if detail is None else await queries.job_timeline(uid)
        if detail is None or drawn is None:
            return None
        return detail, drawn, await queries.pod_names_with_log_tails(uid)

    detail, drawn, tailed = await visit.reads.job(visit.caller, uid, read)
    # The other jobs of its name: those of the clusters the caller may read.
    scope = await visit.reads.clusters(visit.caller)
    namespace, name = detail["namespace"], detail["name"]
    named = await visit.reads.within(
        lambda: queries.named_jobs(namespace, name, RECREATIONS, clusters=scope)
    )
    events = await visit.caller.may("list", detail["namespace"], visit.mount.events)
    if not events:
        detail = {**detail, "events": [], "events_next_cursor": None}
        drawn = dataclasses.replace(drawn, events=[], events_cut=False)
    now = datetime.datetime.now(datetime.UTC)
    created = formats.parse(detail["gmt_created"]) or now
    ended = formats.parse(detail["gmt_finished"]) or (now if detail["is_in_etcd"] else created)
    pods = timeline.pods_of(drawn.pods, now)
    params = visit.params
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
        "events_hidden": None if events else visit.mount.events,
        "more_pods": _more("job", params, "pods_cursor", detail["pods_next_cursor"]),
        "more_events": _more("job", params, "events_cursor", detail["events_next_cursor"]),
    }
    return Page("job.html", context)


async def logs_page(visit: Visit) -> Page:
    """The last lines of a job's failed containers' logs, newest failure first, narrowed
    by pod and container as in the API; 404 for a job the caller may not see."""
    values = parse(visit.params, (UID, *LOG_PARAMS))
    uid = _uid(values, "logs")

    async def read() -> tuple[dict[str, Any], queries.Page] | None:
        job = await queries.one_job(uid)
        return None if job is None else (job, await queries.job_log_tails(uid, **values))

    job, tails = await visit.reads.job(visit.caller, uid, read)
    context = {
        "job": job,
        "tails": tails.items,
        "next": _more("logs", visit.params, "cursor", tails.next_cursor),
        "cli": f"{CLI} logs {uid}",
        "narrowed": values,
    }
    return Page("logs.html", context)


async def stats_page(visit: Visit) -> Page:
    """Charts over a window of creation (default: the last 30 days), over all
    namespaces, as the API's /stats."""
    since, until = _window(parse(visit.params, STATS_WINDOW))
    await visit.caller.require(
        "list", None, "the statistics page", "read the jobs list of a namespace instead"
    )

    # Counted over the clusters the caller may read (decision 36).
    scope = await visit.reads.clusters(visit.caller)

    async def figures() -> tuple[Any, ...]:
        return (
            await queries.jobs_per_day(since, until, scope),
            await queries.failure_reasons(since, until, scope),
            await queries.stats("kind", since, until, clusters=scope),
            await queries.stats("owner", since, until, clusters=scope),
            await queries.gpu_hours(since, until, scope),
        )

    per_day, failures, kinds, owners, gpus = await visit.reads.within(figures)
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


async def usage_page(visit: Visit) -> Page:
    """GPU-hours per day stacked by a job's column, queue waits per queue and the
    costliest failure reasons over a window (default: the last 30 days), of one
    namespace or all, as the API's /usage (decision 33)."""
    values = parse(visit.params, USAGE_WINDOW)
    group = usage.group_of(values.get("group_by"))
    # Cut as the roll-up cuts it, so that the chart's periods are the answer's.
    since, until = usage.window(*_window(values))
    namespace = values.get("namespace")
    await visit.caller.require("list", namespace, "the usage page", "name a namespace")
    # Over the clusters the caller may read (decision 36), or the one named.
    scope = await visit.reads.clusters(visit.caller, values.get("cluster"))

    async def figures() -> tuple[str, list[dict[str, Any]], list[dict[str, Any]]]:
        by_queue = await queries.rollup("queue", None, namespace, since, until, cluster=scope)
        try:
            by_day = await queries.rollup(group, "day", namespace, since, until, cluster=scope)
        except usage.TooManyRows:
            # Too many groups for a row each a day: the same chart a bar a week.
            every = await queries.rollup(group, "week", namespace, since, until, cluster=scope)
            return "week", every, by_queue
        return "day", by_day, by_queue

    per, by_period, by_queue = await visit.reads.rolled_up(figures)
    periods = [period.label for period in usage.periods(since, until, per)]
    context = {
        "since": since,
        "until": until,
        "group": group,
        "groups": list(queries.USAGE_GROUPS),
        "window": {
            "since": formats.iso(since),
            "until": formats.iso(until),
            "namespace": namespace or "",
            "cluster": values.get("cluster") or "",
        },
        "per": per,
        "days": usage_charts.gpu_days(by_period, group, periods),
        "waits": usage_charts.queue_waits(by_queue),
        "reasons": usage_charts.costliest_reasons(by_queue, "queue"),
    }
    return Page("usage.html", context)


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


def form(params: "MultiDictProxy[str]") -> dict[str, Any]:
    """The list's filters as the form shows them (the raw text, to correct in place),
    each labelled as its parameter's table names it for a person."""
    values = {param.name: params.get(param.name, "") for param in JOB_PARAMS}
    folded = [p for p in JOB_PARAMS if p.name not in MAIN_FILTERS and p.name != "in_cluster"]
    return {
        "fields": values,
        "titles": {param.name: param.title for param in JOB_PARAMS},
        "folded": [(p.name, p.title, p.description) for p in folded],
        "open": any(values[p.name] for p in folded),
        "limit": params.get("limit", ""),
    }


def refused_form(view: View | None, params: "MultiDictProxy[str]") -> dict[str, Any] | None:
    """The form an error page of ``view`` shows above its message, holding the text
    asked for, to correct in place: the list's, the usage page's or the statistics';
    None for a page without one."""
    if view is jobs_page:
        return {"page": "jobs", **form(params)}
    if view is usage_page or view is stats_page:
        names = ("since", "until", "namespace", "cluster")
        return {
            "page": "usage" if view is usage_page else "stats",
            "window": {name: params.get(name, "") for name in names},
            "group": params.get("by", ""),
            "groups": list(queries.USAGE_GROUPS),
        }
    return None


def _more(page: str, params: "MultiDictProxy[str]", name: str, cursor: str | None) -> str | None:
    return link(page, params, **{name: cursor}) if cursor else None


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
