"""A failed job's class (decision 42), as the classifying pass stored it in
``job_failure``: the job's ``failure`` in its detail, the classes of a page of jobs
(the lists' column) and of a page of pods (``pod_failure``), and the jobs of one
class, the job list's ``failure`` filter (read along the table's class index)."""

from collections.abc import Mapping, Sequence
from typing import Any

from tortoise.expressions import Subquery

from jobarchive.core.rows import SHORT_TEXT_LENGTH
from jobarchive.reading.params import fits
from jobarchive.reading.queries.source import read
from jobarchive.storage.failed import FailedJob, FailedPod

# The one status a class is shown for: a job failed, then run again, is not failed.
FAILED = "Failed"
FIELDS = ("failure_class", "pod_name", "container", "exit_code", "signal", "detail")


async def failure_json(job_uid: str) -> dict[str, Any] | None:
    """The job's failure: its class, the pod and container it was read from, their exit
    code and signal, the detail line and ``derived_exit_code``, the highest exit code of
    its pods; None for a job not failed, or not classified yet."""
    found = await read(FailedJob).filter(job_id=job_uid).values(*FIELDS, "derived_exit_code")
    if not found:
        return None
    row = found[0]
    return {
        "class": row["failure_class"],
        "pod": row["pod_name"] or None,
        "container": row["container"],
        "exit_code": row["exit_code"],
        "signal": row["signal"],
        "detail": row["detail"],
        "derived_exit_code": row["derived_exit_code"],
    }


async def failure_classes(statuses: Mapping[str, str]) -> dict[str, str]:
    """The class of each failed job of a page, by uid, given each job's status by uid:
    the jobs not failed (or not classified yet) left out."""
    return await classes_of([uid for uid, status in statuses.items() if status == FAILED])


async def classes_of(job_uids: Sequence[str]) -> dict[str, str]:
    """The classes of the jobs of these uids (a page of a list) that were classified,
    by uid, in one statement; a job not failed, or not classified yet, has none."""
    if not job_uids:
        return {}
    found = (
        await read(FailedJob)
        .filter(job_id__in=list(job_uids))
        .values_list("job_id", "failure_class")
    )
    return {str(uid): str(name) for uid, name in found}


async def pod_classes(pod_uids: Sequence[str]) -> dict[str, str]:
    """The class of each failed pod of a page (``pod_failure``), by uid: one statement
    for the page, the pods not failed (or not classified yet) left out."""
    if not pod_uids:
        return {}
    found = (
        await read(FailedPod)
        .filter(pod_id__in=list(pod_uids))
        .values_list("pod_id", "failure_class")
    )
    return {str(uid): str(name) for uid, name in found}


def failed_as(failure_class: str | None) -> dict[str, Any]:
    """The job list's filter of one failure class, as Tortoise's keyword arguments: the
    uids of that class's jobs (none given: no filter)."""
    if failure_class is None:
        return {}
    wanted = fits("failure", failure_class, SHORT_TEXT_LENGTH)
    return {"job_id__in": Subquery(read(FailedJob).filter(failure_class=wanted).values("job_id"))}
