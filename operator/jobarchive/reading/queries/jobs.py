"""Jobs: the filtered list, one job's detail, the incarnations of a name.

Every filter that narrows the list is an indexed column compared by equality, a
range or a prefix; only ``name_contains`` and ``region`` scan, within what a
namespace or a creation window leaves (decision 15).
"""

import datetime
from typing import Any

from tortoise.functions import Count
from tortoise.queryset import QuerySet, ValuesListQuery

from jobarchive.core.rows import NAME_LENGTH, SHORT_TEXT_LENGTH, UID_LENGTH
from jobarchive.reading.lists import (
    Asked,
    IdentifiedJobQuery,
    Identity,
    JobQuery,
    Listing,
    Shape,
)
from jobarchive.reading.params import (
    BUILTIN,
    IDENTITY_PARAMS,
    JOB_PARAMS,
    UID,
    BadQuery,
    Clusters,
    KnownKinds,
    Named,
    Page,
    check_namespace,
    check_status,
    cluster_filter,
    fits,
    one_of,
    page_size,
)
from jobarchive.reading.queries.classes import FAILED, failed_as, failure_json, pod_classes
from jobarchive.reading.queries.measured import efficiency_json
from jobarchive.reading.queries.paging import Order, ordered, paged
from jobarchive.reading.queries.preemptions import job_kueue
from jobarchive.reading.queries.shapes import event_json, job_json, pod_json
from jobarchive.reading.queries.source import bounded, read
from jobarchive.reading.queries.tails import pods_with_log_tails
from jobarchive.storage import dialects, introspection
from jobarchive.storage.models import Event, Job, Pod
from jobarchive.storage.readpool import reader

NEWEST = Order("gmt_created", "jobs")
ANY = Identity()


async def list_jobs(
    query: JobQuery,
    limit: int | None = None,
    cursor: str | None = None,
    kinds: KnownKinds = BUILTIN,
    identity: Identity = ANY,
    scope: Clusters = None,
    shape: Shape = job_json,
) -> Page:
    """Jobs matching the filters (and the exact name or uid of ``identity``) within the
    ``scope`` of clusters, newest first (by creation), one page, each row as ``shape``
    makes it (with the time it is answered at)."""
    now = datetime.datetime.now(datetime.UTC)
    found = _job_filters(query, kinds, identity).filter(**cluster_filter(scope))
    rows = await _hinted(found, query)
    return await paged(rows, NEWEST, page_size(limit), cursor, lambda row: shape(row, now))


async def _jobs_page(
    asked: Asked[JobQuery], scope: Clusters, kinds: KnownKinds, shape: Shape | None
) -> Page:
    shaped = shape or job_json
    return await list_jobs(asked.filters, asked.limit, asked.cursor, kinds, ANY, scope, shaped)


JOBS = Listing(JOB_PARAMS, JobQuery, _jobs_page)


async def _identified_jobs_page(
    asked: Asked[IdentifiedJobQuery], scope: Clusters, kinds: KnownKinds, shape: Shape | None
) -> Page:
    query = asked.filters
    identity = Identity(query.exact_name, query.uid)
    return await list_jobs(
        query, asked.limit, asked.cursor, kinds, identity, scope, shape or job_json
    )


# The job list with an exact name and a uid beside its filters: what the aggregated
# API's field selectors ``metadata.name`` and ``metadata.uid`` ask.
IDENTIFIED_JOBS = Listing(JOB_PARAMS + IDENTITY_PARAMS, IdentifiedJobQuery, _identified_jobs_page)


async def job_page_sql(
    query: JobQuery,
    limit: int | None = None,
    cursor: str | None = None,
    identity: Identity = ANY,
) -> str:
    """The SQL of one page of jobs, parameters inlined: for EXPLAIN."""
    found = await _hinted(_job_filters(query, BUILTIN, identity), query)
    sql: str = ordered(found, NEWEST, page_size(limit), cursor).sql(params_inline=True)
    return sql


def _job_filters(query: JobQuery, kinds: KnownKinds, identity: Identity = ANY) -> "QuerySet[Job]":
    clusters = cluster_filter(query.cluster)
    exact = {
        "name": fits("exact_name", identity.name, NAME_LENGTH),
        "job_id": fits("uid", identity.uid, UID_LENGTH),
        # Checked as its record was made (``reading.lists``), before its review.
        "namespace": query.namespace,
        "kind": one_of("kind", query.kind, kinds.jobs),
        "status": check_status(query.status),
        "deploy_region": fits("region", query.region, SHORT_TEXT_LENGTH),
        "tenant": fits("tenant", query.tenant, SHORT_TEXT_LENGTH),
        "owner": fits("owner", query.owner, SHORT_TEXT_LENGTH),
        "queue": fits("queue", query.queue, NAME_LENGTH),
        "is_in_etcd": query.in_cluster,
    }
    prefix = fits("name", query.name_prefix, NAME_LENGTH)
    ranges = {
        "name__startswith": prefix,
        "name__contains": fits("name_contains", query.name_contains, NAME_LENGTH),
        "gmt_created__gte": query.created_since,
        "gmt_created__lt": query.created_until,
        "gmt_finished__gte": query.finished_since,
        "gmt_finished__lt": query.finished_until,
    }
    # After every value's check: an unknown status is told as such, not as a scan.
    _refuse_scans(query)
    found = bounded(Job).filter(**clusters, **failed_as(query.failure))
    found = found.filter(**{field: value for field, value in exact.items() if value is not None})
    if prefix is not None:
        found = _prefix_range(found, prefix)
    return found.filter(**{field: value for field, value in ranges.items() if value is not None})


def _prefix_range(found: "QuerySet[Job]", prefix: str) -> "QuerySet[Job]":
    """The names that can start with ``prefix``, as a range an index can read: Tortoise
    spells a prefix as ``CAST(name AS CHAR) LIKE``, which no index serves. The LIKE
    stays, for its exact meaning; the range only narrows what it reads."""
    bounds = dialects.of(reader()).prefix_range(prefix)
    if bounds is None:
        return found
    low, high = bounds
    return found.filter(name__gte=low, name__lt=high)


async def _hinted(found: "QuerySet[Job]", query: JobQuery) -> "QuerySet[Job]":
    """Name the index for a range filter the optimizer misjudges.

    Asked for a page ordered by ``gmt_created``, MariaDB reads the time index from the
    newest job, expecting to meet matches early; for a name prefix or a finish window
    with no equality filter beside it, that reads every job. Reading the range's own
    index and sorting what it holds reads only the matches.
    """
    equalities = (query.namespace, query.kind, query.status, query.owner, query.tenant, query.queue)
    if any(value is not None for value in equalities):
        return found
    if query.name_prefix is not None:
        columns: tuple[str, ...] = ("name", "gmt_created")
    elif query.finished_since is not None or query.finished_until is not None:
        columns = ("gmt_finished",)
    else:
        return found
    conn = reader()
    name = (await introspection.of(conn).index_names(conn, Job._meta.db_table)).get(columns)
    return found.force_index(name) if name else found


def _refuse_scans(query: JobQuery) -> None:
    """Filters no index serves are read within a namespace or a creation window only:
    alone they would read every job ever recorded."""
    bounded_by = query.namespace is not None or query.created_since is not None
    for name, value in (("name_contains", query.name_contains), ("region", query.region)):
        if value is not None and not bounded_by:
            raise BadQuery(
                Named(name),
                ": no index serves it; name a ",
                Named("namespace"),
                " or a ",
                Named("created_since"),
                " with it",
            )


async def newest_named(
    namespace: str, name: str, clusters: Clusters = None
) -> dict[str, Any] | None:
    """The newest job recorded under a name (the last created) in the ``clusters``, as
    the list shows it."""
    return next(iter((await named_jobs(namespace, name, 1, clusters=clusters)).items), None)


async def job_place(job_uid: str) -> tuple[str, str | None] | None:
    """The namespace and the cluster of the job with that uid (one indexed row; the
    cluster None in a row KubeDL's writer inserted); None if no job has it: what is
    checked before anything else of a job is read."""
    found = (
        await read(Job)
        .filter(job_id=fits("uid", job_uid, UID_LENGTH))
        .first()
        .values("namespace", "cluster")
    )
    if found is None:
        return None
    cluster = found["cluster"]
    return str(found["namespace"]), None if cluster is None else str(cluster)


def _clusters(limit: int) -> "ValuesListQuery[Any]":
    named = read(Job).filter(cluster__isnull=False).distinct()
    return named.order_by("cluster").limit(limit).values_list("cluster", flat=True)


async def job_clusters(limit: int) -> tuple[list[str], bool]:
    """The first ``limit`` clusters that hold a job, by name, and whether there are more:
    one entry of the (cluster, gmt_created) index per cluster, no row read. The rows
    KubeDL's writer inserted name none, so they are no cluster's name here."""
    names = [str(name) for name in await _clusters(limit + 1)]
    return names[:limit], len(names) > limit


def job_clusters_sql(limit: int) -> str:
    """The SQL of ``job_clusters``, parameters inlined: for EXPLAIN."""
    sql: str = _clusters(limit + 1).sql(params_inline=True)
    return sql


def _namespaces(limit: int, cluster: str | None = None) -> "ValuesListQuery[Any]":
    if cluster is None:
        jobs = read(Job).distinct().order_by("namespace").limit(limit)
        return jobs.values_list("namespace", flat=True)
    # The cluster selected too: else MariaDB reads every index entry of the cluster in
    # order, not one per namespace.
    jobs = read(Job).filter(cluster=cluster).distinct().order_by("namespace").limit(limit)
    return jobs.values_list("cluster", "namespace")


async def job_namespaces(limit: int, clusters: Clusters = None) -> tuple[list[str], bool]:
    """The first ``limit`` namespaces that hold a job of ``clusters`` (None: of any), by
    name, and whether there are more: one entry of the (namespace, name) index per
    namespace, or of the (cluster, namespace) index per namespace of each cluster (the
    cluster's namespaces then sorted), no row read."""
    if clusters is None:
        found = {str(name) for name in await _namespaces(limit + 1)}
    else:
        found = set()
        for cluster in (clusters,) if isinstance(clusters, str) else clusters:
            found.update(str(name) for _, name in await _namespaces(limit + 1, cluster))
    names = sorted(found)
    return names[:limit], len(names) > limit


def job_namespaces_sql(limit: int, cluster: str | None = None) -> str:
    """The SQL of ``job_namespaces`` (of one cluster, if named), parameters inlined: for
    EXPLAIN."""
    sql: str = _namespaces(limit + 1, cluster).sql(params_inline=True)
    return sql


async def one_job(job_uid: str) -> dict[str, Any] | None:
    """The job with that uid, as the list shows it; None if no job has it."""
    job = await bounded(Job).filter(job_id=fits("uid", job_uid, UID_LENGTH)).first()
    return None if job is None else job_json(job, datetime.datetime.now(datetime.UTC))


async def find_jobs(reference: str) -> Page:
    """Jobs named ``namespace/name`` (the newest page of its incarnations, a page of the
    job list with that namespace and exact name, so its cursor goes on in that list),
    the job ``namespace/uid`` (as the aggregated API reads a name that is a uid), or the
    job with that uid."""
    namespace, slash, name = reference.rpartition("/")
    if not slash or UID.fullmatch(name):
        found = await one_job(name)
        if found is not None and (not slash or found["namespace"] == namespace):
            return Page([found], None)
        if not slash:
            return Page([], None)
    return await list_jobs(JobQuery(namespace=namespace), identity=Identity(name, None))


async def named_jobs(
    namespace: str,
    name: str,
    limit: int | None = None,
    cursor: str | None = None,
    clusters: Clusters = None,
) -> Page:
    """Every job recorded under one name (each recreation has its own uid) in the
    ``clusters``, newest first."""
    query = bounded(Job).filter(
        namespace=check_namespace(namespace),
        name=fits("name", name, NAME_LENGTH),
        **cluster_filter(clusters),
    )
    now = datetime.datetime.now(datetime.UTC)
    order = Order("gmt_created", "named-jobs")
    return await paged(query, order, page_size(limit), cursor, lambda row: job_json(row, now))


async def replica_summary(job_uid: str) -> dict[str, dict[str, int]]:
    """Per replica type: how many pods are active, succeeded, failed, stopped; counted
    by the database, so a job of any size costs one small answer."""
    rows = (
        await read(Pod)
        .filter(job_id=job_uid)
        .group_by("replica_type", "status", "is_in_etcd")
        .annotate(pods=Count("id"))
        .values("replica_type", "status", "is_in_etcd", "pods")
    )
    summary: dict[str, dict[str, int]] = {}
    for row in rows:
        counts = summary.setdefault(
            str(row["replica_type"]), {"active": 0, "succeeded": 0, "failed": 0, "stopped": 0}
        )
        status = row["status"]
        if status == "Succeeded":
            bucket = "succeeded"
        elif status == "Failed":
            bucket = "failed"
        elif status == "Stopped" or not row["is_in_etcd"]:
            bucket = "stopped"
        else:
            bucket = "active"
        counts[bucket] += int(row["pods"])
    return summary


async def job_pods(job_uid: str, limit: int | None = None, cursor: str | None = None) -> Page:
    """A job's pods in the order they were recorded, one page."""
    query = bounded(Pod).filter(job_id=fits("uid", job_uid, UID_LENGTH))
    order = Order("gmt_created", "pods", ascending=True)
    return await paged(query, order, page_size(limit), cursor, pod_json)


async def job_events(job_uid: str, limit: int | None = None, cursor: str | None = None) -> Page:
    """The Events about a job, its pods and its intermediate objects, oldest last
    occurrence first, one page. (Events recorded before ``event_info.job_id`` existed
    are reached after ``jobarchive migrate``, which fills it.)"""
    query = bounded(Event).filter(job_id=fits("uid", job_uid, UID_LENGTH))
    order = Order("last_timestamp", "job-events", ascending=True)
    return await paged(query, order, page_size(limit), cursor, event_json)


async def job_detail(
    job_uid: str,
    limit: int | None = None,
    pods_cursor: str | None = None,
    events_cursor: str | None = None,
) -> dict[str, Any] | None:
    """One job with a page of its pods (each saying whether it has a captured log tail,
    ``has_log_tail``) and of its Events (the first, or those after the cursors; each
    with the cursor of the next), a per-replica-type summary of all its pods, and its
    Kueue attempts, waits and figures (``job_kueue``); None for an unknown job. What the
    CLI, the API and the console show of a job.

    Bounded whatever the job's size: a 20,000-pod job answers ``limit`` pods and
    Events; the rest are read page by page (``job_pods``, ``job_events``).
    """
    job = await bounded(Job).get_or_none(job_id=fits("uid", job_uid, UID_LENGTH))
    if job is None:
        return None
    pods = await job_pods(job_uid, limit, pods_cursor)
    events = await job_events(job_uid, limit, events_cursor)
    uids = [pod["pod_id"] for pod in pods.items]
    tailed, classes = await pods_with_log_tails(job_uid, uids), await pod_classes(uids)
    for pod in pods.items:
        pod["has_log_tail"] = pod["pod_id"] in tailed
        pod["failure_class"] = classes.get(pod["pod_id"])
    detail = job_json(job, datetime.datetime.now(datetime.UTC))
    detail.update(
        pods=pods.items,
        pods_next_cursor=pods.next_cursor,
        replicas=await replica_summary(job_uid),
        events=events.items,
        events_next_cursor=events.next_cursor,
    )
    detail.update(await job_kueue(job_uid))
    # Why it failed (decision 42): absent for a job not failed, or not classified yet.
    failure = await failure_json(job_uid) if job.status == FAILED else None
    if failure is not None:
        detail["failure"] = failure
    # How well it used what it was given (decision 45): absent until a pod is summarised.
    efficiency = await efficiency_json(job_uid)
    if efficiency is not None:
        detail["efficiency"] = efficiency
    return detail
