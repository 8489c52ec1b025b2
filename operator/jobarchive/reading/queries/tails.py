"""The log tails of a job's failed containers (decision 19), read along the index on
(job_id, gmt_failed): a page of them, and which of a job's pods have one."""

from collections.abc import Sequence

from tortoise.expressions import Q

from jobarchive.core.rows import NAME_LENGTH, UID_LENGTH
from jobarchive.reading.params import LOG_TAILS_MAX, LOG_TAILS_PAGE, Page, fits, page_size
from jobarchive.reading.queries.paging import Order, paged
from jobarchive.reading.queries.shapes import log_tail_json
from jobarchive.reading.queries.source import bounded, read
from jobarchive.reading.queries.timeline import TIMELINE_PODS
from jobarchive.storage.models import CONTAINER_NAME_LENGTH, LogTail


async def job_log_tails(
    job_uid: str,
    pod: str | None = None,
    container: str | None = None,
    limit: int | None = None,
    cursor: str | None = None,
) -> Page:
    """A job's failed containers' log tails, newest failure first, one page of at most
    ``limit`` (``LOG_TAILS_PAGE``, up to ``LOG_TAILS_MAX``) and ``PAGE_BYTES``; ``pod``
    (a name or uid) and ``container`` narrow them."""
    size = page_size(limit, LOG_TAILS_PAGE, LOG_TAILS_MAX)
    found = bounded(LogTail).filter(job_id=fits("uid", job_uid, UID_LENGTH))
    if pod is not None:
        by_name = Q(pod_name=fits("pod", pod, NAME_LENGTH))
        found = found.filter(by_name | Q(pod_id=pod) if len(pod) <= UID_LENGTH else by_name)
    if container is not None:
        found = found.filter(container=fits("container", container, CONTAINER_NAME_LENGTH))
    return await paged(found, Order("gmt_failed", "log-tails"), size, cursor, log_tail_json)


async def pods_with_log_tails(job_uid: str, pod_uids: Sequence[str]) -> set[str]:
    """Which of a job's pods (of those given: a page of them) have a captured log tail."""
    if not pod_uids:
        return set()
    found = (
        await read(LogTail)
        .filter(job_id=fits("uid", job_uid, UID_LENGTH), pod_id__in=list(pod_uids), captured=True)
        .distinct()
        .values_list("pod_id", flat=True)
    )
    return {str(uid) for uid in found}


async def pod_names_with_log_tails(job_uid: str) -> set[str]:
    """The names of a job's pods with a captured log tail, as many as a timeline draws."""
    found = (
        await read(LogTail)
        .filter(job_id=fits("uid", job_uid, UID_LENGTH), captured=True)
        .distinct()
        .limit(TIMELINE_PODS)
        .values_list("pod_name", flat=True)
    )
    return {str(name) for name in found}
