"""Pods: the filtered list, newest first, and a pod by its name or uid.

Each list is an index range read in order: a job's pods by (job_id, gmt_created), a
namespace's by (namespace, gmt_created), every pod by gmt_created, a name by
(namespace, name); a phase only sifts what one of them reads (decision 15).
"""

from collections.abc import Sequence
from typing import Any

from tortoise.queryset import QuerySet

from jobarchive.core.rows import NAME_LENGTH, UID_LENGTH
from jobarchive.reading.lists import Asked, Listing, PodQuery, Shape
from jobarchive.reading.params import (
    POD_PARAMS,
    POD_STATUSES,
    BadQuery,
    Clusters,
    KnownKinds,
    Page,
    cluster_filter,
    fits,
    one_of,
    page_size,
)
from jobarchive.reading.queries.paging import Order, ordered, paged
from jobarchive.reading.queries.shapes import pod_json
from jobarchive.reading.queries.source import bounded, read
from jobarchive.storage.models import Job, Pod

NEWEST_PODS = Order("gmt_created", "archived-pods")


async def list_pods(
    query: PodQuery,
    limit: int | None = None,
    cursor: str | None = None,
    scope: Clusters = None,
    shape: Shape = pod_json,
) -> Page:
    """Pods matching the filters within the ``scope`` of clusters, newest first (by
    creation), one page, each row as ``shape`` makes it."""
    found = _pod_filters(query).filter(**cluster_filter(scope))
    return await paged(found, NEWEST_PODS, page_size(limit), cursor, shape)


async def _pods_page(
    asked: Asked[PodQuery], scope: Clusters, _: KnownKinds, shape: Shape | None
) -> Page:
    return await list_pods(asked.filters, asked.limit, asked.cursor, scope, shape or pod_json)


PODS = Listing(POD_PARAMS, PodQuery, _pods_page)


def pod_page_sql(query: PodQuery, limit: int | None = None, cursor: str | None = None) -> str:
    """The SQL of one page of pods, parameters inlined: for EXPLAIN."""
    sql: str = ordered(_pod_filters(query), NEWEST_PODS, page_size(limit), cursor).sql(
        params_inline=True
    )
    return sql


def _pod_filters(query: PodQuery) -> "QuerySet[Pod]":
    clusters = cluster_filter(query.cluster)
    exact = {
        # Checked as its record was made (``reading.lists``), before its review.
        "namespace": query.namespace,
        "job_id": fits("job_uid", query.job_uid, UID_LENGTH),
        "status": one_of("status", query.status, POD_STATUSES),
        "name": fits("exact_name", query.exact_name, NAME_LENGTH),
        "pod_id": fits("uid", query.uid, UID_LENGTH),
    }
    # After every value's check: an unknown status is told as such, not as a scan.
    leading = (query.namespace, query.job_uid, query.uid)
    if query.exact_name is not None and query.namespace is None and query.uid is None:
        raise BadQuery("exact_name: no index serves it alone; name a namespace with it")
    # A cluster asked for, not a caller's scope: both only sift (decision 36).
    for name, value in (("status", query.status), ("cluster", query.cluster)):
        if isinstance(value, str) and all(first is None for first in leading):
            raise BadQuery(f"{name}: no index serves it alone; name a namespace or a job with it")
    found = bounded(Pod).filter(**clusters)
    return found.filter(**{field: value for field, value in exact.items() if value is not None})


async def newest_pod(namespace: str, name: str, clusters: Clusters = None) -> dict[str, Any] | None:
    """The newest pod recorded under a name in a namespace (its (namespace, name) index),
    in the ``clusters``."""
    query = PodQuery(namespace, clusters, exact_name=name)
    return next(iter((await list_pods(query, 1)).items), None)


async def job_names(job_uids: Sequence[str]) -> dict[str, str]:
    """The names of the jobs with these uids (a page's worth), by uid: one indexed read."""
    if not job_uids:
        return {}
    found = await read(Job).filter(job_id__in=sorted(set(job_uids))).values("job_id", "name")
    return {str(row["job_id"]): str(row["name"]) for row in found}
