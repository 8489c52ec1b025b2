"""Failure classes written as the classifying pass writes them (``job_failure``, decision
42), for tests that read them back: a job's class alone, the rest of its row empty."""

from jobarchive.core.rows import FailureRow
from jobarchive.storage.failed import FailedJob
from jobarchive.storage.store import Store


def failure(job_uid: str, failure_class: str, namespace: str = "default") -> FailureRow:
    """A ``job_failure`` row of a job's class, as of the job's version ``10``."""
    return {
        "job_id": job_uid,
        "version": "10",
        "namespace": namespace,
        "failure_class": failure_class,
        "pod_id": f"{job_uid}-pod",
        "pod_name": f"{job_uid}-0",
        "container": "pytorch",
        "exit_code": 1,
        "signal": None,
        "detail": None,
        "derived_exit_code": 1,
        "gmt_created": None,
    }


async def classify(*found: FailureRow) -> None:
    """Store the jobs' classes."""
    await Store().upsert(FailedJob, list(found))
