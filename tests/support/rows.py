"""Rows as the store takes them, built field by field: a plausible default for every
column, and any column set by keyword. The values are the test's choice, a column the
database refuses (``status=None``) included; a misspelt column is refused here. And
the failed containers the log tails' rows are made of, and those rows written."""

import datetime
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar, cast

from jobarchive.core.efficiency import PodEfficiency
from jobarchive.core.rows import EventRow, JobRow, LogTailRow, PodRow, SummaryRow
from jobarchive.logtails.triggers import Failure
from jobarchive.storage.models import LogTail
from jobarchive.storage.store import Store

T0 = datetime.datetime(2026, 11, 20, 10, 0, tzinfo=datetime.UTC)
R = TypeVar("R", JobRow, PodRow, EventRow)


def _with(row: R, shape: type[R], fields: Mapping[str, Any]) -> R:
    unknown = fields.keys() - shape.__annotations__.keys()
    if unknown:
        raise TypeError(f"{shape.__name__} has no columns {sorted(unknown)}")
    # Checked above for its keys; its values may be deliberately wrong.
    return cast(R, {**row, **fields})


def job(uid: str = "job-1", version: str = "10", **fields: Any) -> JobRow:
    """A running TFJob's ``job_info`` row."""
    row: JobRow = {
        "job_id": uid,
        "version": version,
        "name": "mnist",
        "namespace": "kubeflow",
        "gmt_created": T0,
        "kind": "TFJob",
        "status": "Running",
        "resources": "{}",
        "deploy_region": None,
        "tenant": "",
        "owner": "",
        "deleted": False,
        "is_in_etcd": True,
        "gmt_finished": None,
        "gmt_job_running": None,
        "api_version": "kubeflow.org/v1",
        "remark": None,
        "queue": None,
    }
    return _with(row, JobRow, fields)


def pod(uid: str = "pod-1", version: str = "10", **fields: Any) -> PodRow:
    """The ``replica_info`` row of a running worker of ``job()``."""
    row: PodRow = {
        "pod_id": uid,
        "version": version,
        "name": "mnist-worker-0",
        "namespace": "kubeflow",
        "gmt_created": T0,
        "job_id": "job-1",
        "status": "Running",
        "image": "img",
        "replica_type": "worker",
        "resources": "{}",
        "gpus": 0,
        "cpu_millis": 0,
        "memory_bytes": 0,
        "node_name": None,
        "host_ip": None,
        "pod_ip": None,
        "deploy_region": None,
        "deleted": False,
        "is_in_etcd": True,
        "remark": None,
        "gmt_started": None,
        "gmt_finished": None,
        "restarts": 0,
        "gmt_restarted": None,
    }
    return _with(row, PodRow, fields)


def event(uid: str = "ev-1", version: str = "10", **fields: Any) -> EventRow:
    """The ``event_info`` row of an Event about ``pod()``."""
    row: EventRow = {
        "event_id": uid,
        "version": version,
        "name": "mnist-worker-0.1789abc",
        "gmt_created": T0,
        "kind": "Pod",
        "type": "Normal",
        "obj_namespace": "kubeflow",
        "obj_name": "mnist-worker-0",
        "obj_uid": "pod-1",
        "job_id": "job-1",
        "reason": "Pulled",
        "message": "Successfully pulled image",
        "count": 1,
        "region": None,
        "first_timestamp": T0,
        "last_timestamp": T0,
    }
    return _with(row, EventRow, fields)


def failure(pod_uid: str, container: str = "pytorch", restart: int = 0, **fields: Any) -> Failure:
    """A failed container instance as the log tails' triggers find it."""
    values: dict[str, Any] = {
        "namespace": "ml",
        "pod": f"name-of-{pod_uid}",
        "pod_uid": pod_uid,
        "container": container,
        "container_type": "container",
        "restart_count": restart,
        "exit_code": 1,
        "reason": "Error",
        "finished_at": datetime.datetime(2026, 11, 20, 10, restart, tzinfo=datetime.UTC),
        "previous": False,
    }
    return Failure(**values | fields)


async def write_tails(written: Sequence[LogTailRow], store: Store | None = None) -> None:
    """Log tails' rows written in one transaction, as the writer's flushers write them:
    each whose key is stored already left as it is."""
    await (store or Store()).write_batch({LogTail: (LogTail, written)})


def summary(pod_row: PodRow, found: PodEfficiency) -> SummaryRow:
    """The ``pod_efficiency`` row the summarising pass writes of ``pod_row`` (decision
    45): ``found``'s figures under the pod's version."""
    from jobarchive.maintenance.summarising import summary_row

    return summary_row({**pod_row, "name": pod_row["name"]}, found)
