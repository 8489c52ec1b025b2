"""The shapes of the tables' rows the writer takes and the widths of their columns.

A row travels as a plain dict from the converters through the recorder and the
writer to the store, so its shape is a ``TypedDict``: a misspelt column is a type
error where the row is built or read, not an SQL error at commit. This module
imports neither Tortoise nor the storage, so the pure converters can depend on it;
the models take their widths from here, and a test checks that each ``TypedDict``
names exactly its model's columns (all but ``id``).

``gmt_created`` may be None (the object gave no creation time) and
``gmt_modified`` may be absent: the store stamps both on every write. ``cluster`` is
absent from what the converters build: the store fills it, once, with the cluster it
writes for (decision 35).
"""

import datetime
import re
from typing import NotRequired, TypedDict

from jobarchive.core.visible import QUOTED, visible

# Kubernetes object names (DNS subdomains) are at most 253 characters.
NAME_LENGTH = 253
NAMESPACE_LENGTH = 128
UID_LENGTH = 64
VERSION_LENGTH = 255
KIND_LENGTH = 63
# A DNS subdomain group, a slash and a version.
API_VERSION_LENGTH = 317
LABEL_VALUE_LENGTH = 63
# A cluster's name (decision 35): a label value, which the kube-system uid also is.
CLUSTER_LENGTH = LABEL_VALUE_LENGTH
# The cluster a store writes for when it is given none: tests' and tools' stores. The
# operator and `jobarchive migrate` always name theirs.
DEFAULT_CLUSTER = "default"
# What a cluster's name may hold: a label value's characters, at most CLUSTER_LENGTH
# of them, beginning and ending with a letter or digit.
CLUSTER_PATTERN = r"[A-Za-z0-9]([A-Za-z0-9_.-]*[A-Za-z0-9])?"
SHORT_TEXT_LENGTH = 255
# A condition type may be a qualified name: a 253-character prefix, '/', 63 characters.
STATUS_LENGTH = 320
# Core Event names are "<involved object name>.<hex>": longer than any object name.
EVENT_NAME_LENGTH = 512
IP_LENGTH = 64
# Free text and JSON are cut on write to these bounds (``jobarchive.core.cutting``), so that
# no tenant can store a value a read would choke on. An image reference with a digest
# is under 300 characters; a kubelet's termination message is at most 4,096 bytes;
# the Events recorders of client-go cut their notes at 1,024.
IMAGE_LENGTH = 1024
MESSAGE_LENGTH = 4096
REMARK_LENGTH = 4096
# A job's roles and a pod's resources as JSON: a few hundred characters in practice.
RESOURCES_LENGTH = 8192
# The key of a Kueue attempt (its Workload's uid and when its quota was reserved) or of
# a wait (its Workload's uid and a digest of its reason and start).
KEY_LENGTH = 128


def valid_cluster(raw: str) -> str:
    """A cluster's name as given, checked: a label value of at most CLUSTER_LENGTH
    characters (what the ``cluster`` column holds and a field selector can carry).
    Raises ValueError saying why (the settings name the variable)."""
    value = raw.strip()
    if len(value) > CLUSTER_LENGTH or not re.fullmatch(CLUSTER_PATTERN, value):
        raise ValueError(
            f"'{visible(value, limit=QUOTED)}' is not a cluster name: at most "
            f"{CLUSTER_LENGTH} letters, digits, '-', '_' or '.', beginning and ending with a "
            "letter or digit"
        )
    return value


class JobRow(TypedDict):
    """A ``job_info`` row: one training job, by its uid (``job_id``)."""

    name: str
    namespace: str
    job_id: str
    version: str
    status: str
    kind: str
    resources: str
    deploy_region: str | None
    tenant: str
    owner: str
    deleted: bool
    is_in_etcd: bool
    gmt_created: datetime.datetime | None
    gmt_modified: NotRequired[datetime.datetime]
    cluster: NotRequired[str | None]
    gmt_finished: datetime.datetime | None
    gmt_job_running: datetime.datetime | None
    # Stamped by the store: always equal to gmt_finished.
    gmt_job_finished: NotRequired[datetime.datetime | None]
    api_version: str | None
    remark: str | None
    queue: str | None
    # Stamped by the store as unknown: only a measured summary's write sets it.
    gmt_measured: NotRequired[datetime.datetime | None]


class PodRow(TypedDict):
    """A ``replica_info`` row: one pod of a tracked job, by its uid (``pod_id``)."""

    name: str
    namespace: str
    pod_id: str
    version: str
    status: str
    image: str
    job_id: str
    replica_type: str
    resources: str
    # The effective requests as the usage accounting counts them (decision 32): NULL
    # in rows written before they existed whose resources could not be read, and in
    # KubeDL's.
    gpus: int | None
    cpu_millis: int | None
    memory_bytes: int | None
    node_name: str | None
    host_ip: str | None
    pod_ip: str | None
    deploy_region: str | None
    deleted: bool
    is_in_etcd: bool
    remark: str | None
    gmt_created: datetime.datetime | None
    gmt_modified: NotRequired[datetime.datetime]
    cluster: NotRequired[str | None]
    gmt_started: datetime.datetime | None
    gmt_finished: datetime.datetime | None
    # Its containers' restarts, and when one last ended to be restarted.
    restarts: int | None
    gmt_restarted: datetime.datetime | None


class EventRow(TypedDict):
    """An ``event_info`` row: one core/v1 Event, by its uid (``event_id``)."""

    event_id: str
    version: str
    name: str
    kind: str
    type: str
    obj_namespace: str
    obj_name: str
    obj_uid: str
    reason: str
    message: str
    count: int
    region: str | None
    first_timestamp: datetime.datetime | None
    last_timestamp: datetime.datetime | None
    job_id: str | None
    gmt_created: datetime.datetime | None
    gmt_modified: NotRequired[datetime.datetime]
    cluster: NotRequired[str | None]


class LogTailRow(TypedDict):
    """A ``container_log_tail`` row: the last lines of one failed container instance's log,
    by pod uid, container and restart count; written once, never updated (decision 19)."""

    pod_id: str
    container: str
    restart_count: int
    container_type: str
    job_id: str
    namespace: str
    pod_name: str
    exit_code: int | None
    reason: str | None
    gmt_failed: datetime.datetime | None
    captured: bool
    truncated: bool
    note: str | None
    log_tail: str | None
    gmt_created: datetime.datetime | None
    gmt_modified: NotRequired[datetime.datetime]
    cluster: NotRequired[str | None]


class AttemptRow(TypedDict):
    """A ``job_attempt`` row: one admission of a job by Kueue, by its Workload's uid and
    when its quota was reserved (``attempt_id``); upserted as the Workload changes."""

    attempt_id: str
    version: str
    job_id: str
    workload_id: str
    workload_name: str
    namespace: str
    cluster_queue: str | None
    local_queue: str | None
    # Per pod set, the flavor assigned to each resource, as JSON.
    flavors: str
    quota_reserved_at: datetime.datetime
    admitted_at: datetime.datetime | None
    running_at: datetime.datetime | None
    ended_at: datetime.datetime | None
    # ``Finished``, ``Deleted``, or the eviction's reason as Kueue gives it.
    end_reason: str | None
    underlying_cause: str | None
    message: str | None
    preemptor_workload_id: str | None
    preemptor_job_id: str | None
    # The Workload's evictions so far, by reason (and underlying cause), as JSON.
    evictions: str | None
    requeues: int | None
    gmt_created: datetime.datetime | None
    gmt_modified: NotRequired[datetime.datetime]
    cluster: NotRequired[str | None]


class WaitRow(TypedDict):
    """A ``job_wait`` row: why Kueue kept a job waiting, one reason over one stretch of
    waiting, with when it was first and last seen (``wait_id``)."""

    wait_id: str
    version: str
    job_id: str
    workload_id: str
    namespace: str
    local_queue: str | None
    reason: str
    message: str
    first_seen: datetime.datetime
    last_seen: datetime.datetime
    gmt_created: datetime.datetime | None
    gmt_modified: NotRequired[datetime.datetime]
    cluster: NotRequired[str | None]


class QuotaRow(TypedDict):
    """A ``queue_quota`` row: a Kueue ClusterQueue's quota of one flavor and accelerator
    resource, in whole GPUs, from when it was seen in force (``valid_from``) until it
    changed or the queue went (``valid_until``; NULL while in force), by ``quota_id``."""

    quota_id: str
    version: str
    queue_id: str
    cluster_queue: str
    cohort: str | None
    flavor: str
    resource: str
    nominal: int
    borrowing_limit: int | None
    lending_limit: int | None
    valid_from: datetime.datetime
    valid_until: datetime.datetime | None
    gmt_created: datetime.datetime | None
    gmt_modified: NotRequired[datetime.datetime]
    cluster: NotRequired[str | None]


class FailureRow(TypedDict):
    """A ``job_failure`` row: a failed job's class (decision 42), its first failing pod's,
    written by the classifying pass under the job's ``version``."""

    job_id: str
    version: str
    namespace: str
    failure_class: str
    pod_id: str
    pod_name: str
    container: str | None
    exit_code: int | None
    signal: int | None
    detail: str | None
    derived_exit_code: int | None
    gmt_created: datetime.datetime | None
    gmt_modified: NotRequired[datetime.datetime]
    cluster: NotRequired[str | None]


class PodFailureRow(TypedDict):
    """A ``pod_failure`` row: a failed pod's own class (decision 42), written with its
    job's by the classifying pass, under the job's ``version``."""

    pod_id: str
    version: str
    job_id: str
    namespace: str
    failure_class: str
    container: str | None
    exit_code: int | None
    signal: int | None
    detail: str | None
    gmt_created: datetime.datetime | None
    gmt_modified: NotRequired[datetime.datetime]
    cluster: NotRequired[str | None]


class SummaryRow(TypedDict):
    """A ``pod_efficiency`` row: what Prometheus said of a pod's run (decision 45),
    written by the summarising pass under the pod's ``version``."""

    pod_id: str
    version: str
    job_id: str
    namespace: str
    pod_name: str
    outcome: str
    source: str | None
    gpus_seen: int
    gpu_activity_mean: float | None
    gpu_activity_peak: float | None
    gpu_memory_peak: float | None
    unused_gpus: int | None
    energy_joules: float | None
    cpu_seconds: float | None
    cpu_efficiency: float | None
    memory_peak_bytes: float | None
    memory_peak_ratio: float | None
    per_gpu: str
    note: str | None
    gmt_created: datetime.datetime | None
    gmt_modified: NotRequired[datetime.datetime]
    cluster: NotRequired[str | None]


# The rows of the recorded objects (and of Kueue's attempts, waits and quotas, the
# failure classes and the pods' efficiency), upserted by key.
Row = (
    JobRow
    | PodRow
    | EventRow
    | AttemptRow
    | WaitRow
    | QuotaRow
    | FailureRow
    | PodFailureRow
    | SummaryRow
)
# Every row the writer takes: the recorded objects', and the log tails' (inserted once).
WrittenRow = Row | LogTailRow
# The rows whose object can be gone from the cluster (Events have no such state).
LiveRow = JobRow | PodRow
