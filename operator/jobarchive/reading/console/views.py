"""The console's pages, each one path segment below its mount (decision 31): the jobs
list (``./``, or, when the caller may not list every namespace, those of its clusters
it may, of the first ``LANDING``), a job (``job?uid=``) and the last lines of its failed
containers' logs (``logs?uid=``); the statistics and the usage are ``reports``'.

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

from jobarchive.core.times import timestamp
from jobarchive.core.untrusted import mapping
from jobarchive.reading import embedded, queries
from jobarchive.reading.console import gantt, strips
from jobarchive.reading.console.mounts import Mount
from jobarchive.reading.handling import Caller, Reads
from jobarchive.reading.parsing import listed, parse
from jobarchive.reading.queries import (
    DETAIL_PARAMS,
    JOB_PARAMS,
    LOG_PARAMS,
    Param,
)

# The filters the list's form shows first; the others of JOB_PARAMS fold away.
MAIN_FILTERS = ("namespace", "name", "kind", "status", "owner", "created_since", "created_until")
UID = Param("uid", "string", "The job's uid.")
RECREATIONS = 20
CLI = "jobarchive"
POD_COUNTS = ("active", "succeeded", "failed", "stopped")
# The namespaces a landing page reviews at most (each a review the caller's budget
# pays for, unless its answer is known: decision 14), and at once.
LANDING = 20
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


@dataclasses.dataclass(frozen=True)
class Download:
    """A file to answer instead of a page: its text, its type and the name to save it as."""

    text: str
    content_type: str
    filename: str


View = Callable[[Visit], Awaitable[Page | Download]]


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
    asked = listed(params, queries.JOBS)
    if asked.filters.namespace is None and not await visit.caller.may("list", None):
        return await landing_page(visit)
    page = await visit.reads.page(
        visit.caller, asked, queries.JOBS, what="a list without a namespace"
    )
    # One more read for the page, not one a row: its jobs' usage facts, as usage counts.
    uids = [job["job_id"] for job in page.items]
    facts = await visit.reads.within(lambda: queries.jobs_usage(uids))
    # And one for their failure classes (decision 42), the raw reason their detail.
    statuses = {job["job_id"]: job["status"] for job in page.items}
    classes = await visit.reads.within(lambda: queries.failure_classes(statuses))
    context = {
        "jobs": page.items,
        "usage": facts,
        "classes": classes,
        "next": link("./", params, cursor=page.next_cursor) if page.next_cursor else None,
        "first": link("./", params, cursor="") if params.get("cursor") else None,
        "form": form(params),
        "kinds": visit.reads.kinds.jobs,
    }
    return Page("jobs.html", context)


async def landing_page(visit: Visit) -> Page:
    """The namespaces of the caller's clusters (the first ``LANDING`` holding a job)
    the caller may list, as links to their lists with the filters given; 403 when none,
    saying what to ask for."""
    # Only the clusters the caller may read: no other cluster's namespace is named.
    scope = await visit.reads.clusters(visit.caller)
    names, more = await visit.reads.within(lambda: queries.job_namespaces(LANDING, scope))
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


# What a job's page reads: its detail, its timeline, its pods with a log tail, its usage.
Read = tuple[dict[str, Any], queries.Timeline, set[str], queries.JobUsage | None]


async def job_page(visit: Visit) -> Page:
    """One job: its summary, replicas, timeline, a page of its Events and of its pods
    (each when the caller may list them there as the mount's API would: a line says what
    is left out and why), and the other jobs recorded under its name; 404 for a job the
    caller may not see."""
    values = parse(visit.params, (UID, *DETAIL_PARAMS))
    uid = _uid(values, "job")

    async def read() -> Read | None:
        detail = await queries.job_detail(uid, **values)
        drawn = None if detail is None else await queries.job_timeline(uid)
        if detail is None or drawn is None:
            return None
        tailed = await queries.pod_names_with_log_tails(uid)
        return detail, drawn, tailed, (await queries.jobs_usage([uid])).get(uid)

    whole, drawn, tailed, facts = await visit.reads.job(visit.caller, uid, read)
    shown = await embedded.review(visit.caller, whole["namespace"], visit.mount.lists)
    detail = shown.of(whole)
    # The other jobs of its name: those of the clusters the caller may read.
    scope = await visit.reads.clusters(visit.caller)
    namespace, name = detail["namespace"], detail["name"]
    named = await visit.reads.within(
        lambda: queries.named_jobs(namespace, name, RECREATIONS, clusters=scope)
    )
    drawn = _drawn(drawn, shown)
    now = datetime.datetime.now(datetime.UTC)
    created = timestamp(detail["gmt_created"]) or now
    ended = timestamp(detail["gmt_finished"]) or (now if detail["is_in_etcd"] else created)
    pods = gantt.pods_of(drawn.pods, now)
    params = visit.params
    context = {
        "job": detail,
        "facts": facts,
        "remark": drawn.remark,
        "drawing": gantt.layout(pods, drawn.events, created, ended, attempts=detail["attempts"]),
        "strip": strips.strip(detail["efficiency"]) if "efficiency" in detail else None,
        "drawn": drawn,
        "drawn_pods": len(pods),
        "pod_limit": queries.TIMELINE_PODS,
        "event_limit": queries.TIMELINE_EVENTS,
        "per_role": gantt.BARS_PER_ROLE,
        "roles": _roles(detail),
        "others": [job for job in named.items if job["job_id"] != uid],
        "failed_where": _failed_where(detail.get("failure")),
        "cli": f"{CLI} job {uid}",
        "tailed": tailed if shown.shows(embedded.TAILS) and shown.shows(embedded.PODS) else set(),
        "omitted": {omission.field: omission for omission in shown.omitted},
        "more_pods": _more("job", params, "pods_cursor", detail.get("pods_next_cursor")),
        "more_events": _more("job", params, "events_cursor", detail.get("events_next_cursor")),
    }
    return Page("job.html", context)


def _failed_where(failure: dict[str, Any] | None) -> list[str]:
    """Where a failed job's class was read, as its "Why" line says it: its pod,
    container, exit code and signal, those known."""
    if failure is None:
        return []
    named = (("pod", "pod"), ("container", "container"), ("exit code", "exit_code"))
    found = [(said, failure[key]) for said, key in (*named, ("signal", "signal"))]
    return [f"{said} {value}" for said, value in found if value is not None]


def _drawn(drawn: queries.Timeline, shown: embedded.Shown) -> queries.Timeline:
    """The timeline without the pods and Events the caller may not list."""
    if not shown.shows(embedded.EVENTS):
        drawn = dataclasses.replace(drawn, events=[], events_cut=False)
    if not shown.shows(embedded.PODS):
        drawn = dataclasses.replace(drawn, pods=[], pods_cut=False)
    return drawn


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
