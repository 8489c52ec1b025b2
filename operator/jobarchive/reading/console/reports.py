"""The console's reports, one path segment below its mount like every page (decision
31): the statistics (``stats``: jobs per day, failure classes, durations, owners, over a
window of creation) and the usage (``usage``: GPU-hours per period, queue waits, the
failure classes' and preemptions' GPU-hours, over a window of time, decision 33;
``usage.csv``: its table as CSV). GPU-hours on both are the usage roll-up's, their one
definition; their figures lead to the job list they count (``links``); and the form an
error page of either holds.
"""

import datetime
from typing import Any

from multidict import MultiDictProxy

from jobarchive.core.times import from_rfc3339
from jobarchive.reading import queries, usage
from jobarchive.reading.console import charts, formats, links, usage_charts
from jobarchive.reading.console.views import Download, Page, View, Visit, form, jobs_page, link
from jobarchive.reading.params import Clusters
from jobarchive.reading.parsing import parse
from jobarchive.reading.queries import STATS_PARAMS, USAGE_PARAMS

STATS_WINDOW = tuple(param for param in STATS_PARAMS if param.name not in ("by", "namespace"))
USAGE_WINDOW = tuple(param for param in USAGE_PARAMS if param.name != "every")
DEFAULT_DAYS = 30
LONGEST_DAYS = 366
# The owners a chart ranks.
TOP = 10
Rows = list[dict[str, Any]]


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
            await queries.failed_pod_classes(since, until, scope),
            await queries.stats("kind", since, until, clusters=scope),
            await queries.stats("owner", since, until, clusters=scope),
            await _gpu_owners(since, until, scope),
        )

    per_day, failures, kinds, owners, gpus = await visit.reads.within(figures)

    def jobs_of(column: str) -> charts.Leads:
        return lambda value: links.jobs(column, value, since, until)

    def jobs_on(day: str, status: str) -> str | None:
        start = from_rfc3339(day)
        return links.jobs("status", status, start, start + links.DAY)

    context = {
        "since": since,
        "until": until,
        "window": {"since": formats.iso(since), "until": formats.iso(until)},
        "days": charts.day_chart(per_day, charts.days_between(since, until), jobs_on),
        "failures": charts.failure_chart(failures),
        "durations": charts.duration_chart(kinds, jobs_of("kind")),
        "owners": charts.owner_chart(owners[:TOP], jobs_of("owner")),
        "gpus": charts.gpu_chart(gpus, jobs_of("owner")),
        "usage_link": f"usage?by=owner&since={formats.iso(since)}&until={formats.iso(until)}",
    }
    return Page("stats.html", context)


async def _gpu_owners(
    since: datetime.datetime, until: datetime.datetime, scope: Clusters
) -> list[dict[str, Any]] | None:
    """The owners with the most GPU-hours in the window, as the usage page counts them
    (pods' run time within it, one definition); None when too many owners to rank."""
    try:
        rows = await queries.rollup("owner", None, None, since, until, cluster=scope)
    except usage.TooManyRows:
        return None
    ranked = sorted((row for row in rows if row["gpu_hours"]), key=lambda row: -row["gpu_hours"])
    return ranked[:TOP]


async def usage_page(visit: Visit) -> Page:
    """GPU-hours per day stacked by a job's column, queue waits per queue, the failure
    classes by the GPU-hours they cost and (by Kueue cluster queue) the GPU-hours
    preemptions cost each queue over a window (default: the last 30 days), of one
    namespace or all, as the API's /usage (decision 33); under them, the figures per
    group as a table, and the same rows as CSV (``usage.csv``)."""
    values = parse(visit.params, USAGE_WINDOW)
    group = usage.group_of(values.get("group_by"))
    # Cut as the roll-up cuts it, so that the chart's periods are the answer's.
    since, until = usage.window(*_window(values))
    namespace = values.get("namespace")
    await visit.caller.require("list", namespace, "the usage page", "name a namespace")
    # Over the clusters the caller may read (decision 36), or the one named.
    scope = await visit.reads.clusters(visit.caller, values.get("cluster"))

    per, by_period, table, by_queue, by_failure = await visit.reads.rolled_up(
        lambda: _usage_figures(group, namespace, since, until, scope)
    )
    window = {
        "since": formats.iso(since),
        "until": formats.iso(until),
        "namespace": namespace or "",
        "cluster": values.get("cluster") or "",
    }
    narrowed = {"namespace": window["namespace"], "cluster": window["cluster"]}
    periods = {period.label: period for period in usage.periods(since, until, per)}

    def jobs_in(label: str, value: str) -> str | None:
        period = periods[label]
        return links.jobs(group, value, period.start, period.end, narrowed)

    context = {
        "since": since,
        "until": until,
        "group": group,
        "groups": list(queries.USAGE_GROUPS),
        "window": window,
        "per": per,
        "days": usage_charts.gpu_days(
            by_period,
            group,
            list(periods),
            jobs_in,
            "allocated_gpu_hours" if group == usage.CLUSTER_QUEUE else "gpu_hours",
        ),
        "waits": usage_charts.queue_waits(by_queue),
        "classes": usage_charts.failure_classes(by_failure),
        # From the rows by cluster queue alone: their roll-up reads every pod of an
        # admitted job live, too costly to add to every grouping's page (decision 44).
        "preempted": (
            usage_charts.preempted_queues(table) if group == usage.CLUSTER_QUEUE else None
        ),
        "by_clusterqueue": link("usage", {"by": usage.CLUSTER_QUEUE, **window}, namespace=""),
        "table": [(row, links.jobs(group, row[group], since, until, narrowed)) for row in table],
        "csv": link("usage.csv", {"by": group, **window}),
    }
    return Page("usage.html", context)


async def _usage_figures(
    group: str,
    namespace: str | None,
    since: datetime.datetime,
    until: datetime.datetime,
    scope: Clusters,
) -> tuple[str, Rows, Rows, Rows, Rows]:
    """The usage page's roll-ups: its group's per day (per week when too many groups
    for a row each a day), its group's over the window, by queue (the waits' chart)
    and by failure class (the classes' chart; the table itself by failure class)."""
    table = await queries.rollup(group, None, namespace, since, until, cluster=scope)
    by_queue = await queries.rollup("queue", None, namespace, since, until, cluster=scope)
    by_failure = (
        table
        if group == usage.FAILURE
        else await queries.rollup(usage.FAILURE, None, namespace, since, until, cluster=scope)
    )
    try:
        by_day = await queries.rollup(group, "day", namespace, since, until, cluster=scope)
    except usage.TooManyRows:
        # Too many groups for a row each a day: the same chart a bar a week.
        every = await queries.rollup(group, "week", namespace, since, until, cluster=scope)
        return "week", every, table, by_queue, by_failure
    return "day", by_day, table, by_queue, by_failure


async def usage_csv(visit: Visit) -> Download:
    """The usage page's table as CSV, to save: the API's /usage rows (``by``, ``every``,
    the window) written by the same writer, for a link, which cannot ask for CSV by its
    Accept header."""
    values = parse(visit.params, USAGE_PARAMS)
    rows = await visit.reads.usage_rows(visit.caller, values, "the usage page's CSV")
    name = f"usage-by-{usage.group_of(values.get('group_by'))}.csv"
    return Download(usage.asked_csv(rows, values), "text/csv", name)


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


def refused_form(view: View | None, params: "MultiDictProxy[str]") -> dict[str, Any] | None:
    """The form an error page of ``view`` shows above its message, holding the text
    asked for, to correct in place: the list's, the usage page's or the statistics';
    None for a page without one."""
    if view is jobs_page:
        return {"page": "jobs", **form(params)}
    if view in (usage_page, usage_csv, stats_page):
        names = ("since", "until", "namespace", "cluster")
        return {
            "page": "stats" if view is stats_page else "usage",
            "window": {name: params.get(name, "") for name in names},
            "group": params.get("by", ""),
            "groups": list(queries.USAGE_GROUPS),
        }
    return None
