"""Kueue's rows as the store takes them, for the tests of usage by cluster queue: a
quota row of ClusterQueue ``gpu-a`` and an attempt of a job."""

import datetime
from typing import Any

from jobarchive.core.rows import AttemptRow, QuotaRow


def quota(
    key: str, flavor: str, nominal: int, since: datetime.datetime, until: datetime.datetime | None
) -> QuotaRow:
    return {
        "quota_id": key,
        "version": "1",
        "queue_id": "cq-uid-a",
        "cluster_queue": "gpu-a",
        "cohort": "research",
        "flavor": flavor,
        "resource": "nvidia.com/gpu",
        "nominal": nominal,
        "borrowing_limit": None,
        "lending_limit": None,
        "valid_from": since,
        "valid_until": until,
        "gmt_created": since,
    }


def attempt(
    key: str, job: str, queue: str, reserved: datetime.datetime, **fields: Any
) -> AttemptRow:
    row: AttemptRow = {
        "attempt_id": key,
        "version": "1",
        "job_id": job,
        "workload_id": f"wl-{job}",
        "workload_name": f"job-{job}",
        "namespace": "team-a",
        "cluster_queue": queue,
        "local_queue": "lq",
        "flavors": "{}",
        "quota_reserved_at": reserved,
        "admitted_at": reserved,
        "running_at": None,
        "ended_at": None,
        "end_reason": None,
        "underlying_cause": None,
        "message": None,
        "preemptor_workload_id": None,
        "preemptor_job_id": None,
        "evictions": None,
        "requeues": None,
        "gmt_created": reserved,
    }
    row.update(fields)  # type: ignore[typeddict-item]
    return row
