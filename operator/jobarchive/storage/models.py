"""The schema: Tortoise models for ``job_info``, ``replica_info`` and ``event_info``,
``container_log_tail`` for the logs of failed containers, ``usage_day``, the daily
usage roll-up, Kueue's ``job_attempt``, ``job_wait``, ``queue_span`` and ``queue_job``
(``storage.kueue``), the failure classes' ``job_failure`` and ``pod_failure``
(``storage.failed``) and the pods' efficiency, ``pod_efficiency``
(``storage.summaries``), named here so that Tortoise finds
them with the rest; and what hand-written SQL knows of
each table (``TABLES``, ``INSERTED``).

Column names are KubeDL's (its ``dmo`` package), so KubeDL's consumers keep
working; widths (``jobarchive.core.rows``) follow what Kubernetes allows, not the
seed's guesses: object names up to 253 characters, free text as LONGTEXT, so no
valid object is refused or silently cut. Python attribute names equal column
names on purpose: Tortoise's migrations misname fields that use ``source_field``.

Timestamps: ``gmt_modified`` on every write and ``gmt_created`` when the object
gave none are stamped by ``Stamped.stamp`` (``storage.stamped``), which also cuts
free text and JSON to their bounds (``BOUNDS``). ``save()`` calls it, and so does the
store for every row it writes, so no write path can leave them stale or unbounded.
"""

import dataclasses
import datetime
from collections.abc import MutableMapping
from typing import Any, ClassVar

from tortoise import fields

from jobarchive.core.rows import (
    API_VERSION_LENGTH,
    EVENT_NAME_LENGTH,
    IMAGE_LENGTH,
    IP_LENGTH,
    KIND_LENGTH,
    LABEL_VALUE_LENGTH,
    MESSAGE_LENGTH,
    NAME_LENGTH,
    NAMESPACE_LENGTH,
    REMARK_LENGTH,
    RESOURCES_LENGTH,
    SHORT_TEXT_LENGTH,
    STATUS_LENGTH,
    UID_LENGTH,
    VERSION_LENGTH,
)
from jobarchive.storage.failed import FailedJob, FailedPod
from jobarchive.storage.kueue import Attempt, QueueJob, QueueSpan, Quota, Wait
from jobarchive.storage.stamped import Stamped as Stamped
from jobarchive.storage.stamped import utcnow as utcnow
from jobarchive.storage.summaries import Summary


class Job(Stamped):
    """A training job (``job_info``): one row per job uid."""

    id = fields.BigIntField(primary_key=True)
    name = fields.CharField(max_length=NAME_LENGTH)
    namespace = fields.CharField(max_length=NAMESPACE_LENGTH)
    job_id = fields.CharField(max_length=UID_LENGTH, unique=True)
    version = fields.CharField(max_length=VERSION_LENGTH)
    status = fields.CharField(max_length=STATUS_LENGTH)
    kind = fields.CharField(max_length=KIND_LENGTH)
    resources = fields.TextField()
    deploy_region = fields.CharField(max_length=SHORT_TEXT_LENGTH, null=True)
    # Never NULL: KubeDL's console reads the owner through a pointer it does not check.
    tenant = fields.CharField(max_length=SHORT_TEXT_LENGTH, default="")
    owner = fields.CharField(max_length=SHORT_TEXT_LENGTH, default="")
    deleted = fields.BooleanField(default=False)
    is_in_etcd = fields.BooleanField(default=True)
    # The seed's finish time; KubeDL >= 0.4 reads gmt_job_finished instead. Both are
    # written, always equal (``stamp``), so readers of either generation see it.
    gmt_finished = fields.DatetimeField(null=True)
    gmt_job_finished = fields.DatetimeField(null=True)
    # KubeDL >= 0.4: when the job first ran.
    gmt_job_running = fields.DatetimeField(null=True)
    # Not in the seed: TFJob exists in two groups and Volcano's kind is plain Job, so
    # the kind alone does not say what a job was; and RayJob explains its failures.
    api_version = fields.CharField(max_length=API_VERSION_LENGTH, null=True)
    remark = fields.TextField(null=True)
    # Not in the seed (decision 32): the queue the job was submitted to, Kueue's,
    # Volcano's or Kubeflow's; NULL in rows recorded before it existed.
    queue = fields.CharField(max_length=NAME_LENGTH, null=True)
    # Not in the seed (decision 47): when a pod of it was first measured from
    # Prometheus, written by the summaries' writes (``storage.summaries``), never by the
    # recorder, so that usage counts the jobs nobody can say anything of off this row.
    gmt_measured = fields.DatetimeField(null=True)

    STAMPED = ("gmt_created", "gmt_modified", "gmt_job_finished")
    # Kept at the earliest value ever written, NULL never replacing one (decision 32):
    # the recorder writes no measurement, so it never clears one.
    EARLIEST: ClassVar[tuple[str, ...]] = ("gmt_job_running", "gmt_measured")
    BOUNDS: ClassVar[dict[str, int]] = {"remark": REMARK_LENGTH}
    JSON_BOUNDS: ClassVar[dict[str, int]] = {"resources": RESOURCES_LENGTH}

    @classmethod
    def stamp(cls, row: MutableMapping[str, Any], now: datetime.datetime | None = None) -> None:
        """Stamp as every table does, and keep KubeDL's finish column in step."""
        super().stamp(row, now)
        row["gmt_job_finished"] = row.get("gmt_finished")
        row.setdefault("gmt_measured", None)

    class Meta:
        table = "job_info"
        # Each filter of the job list, followed by its newest-first sort key, so that a
        # filtered page is an index range read in order (``jobarchive jobs``, the API).
        indexes = (
            ("namespace", "name"),
            ("namespace", "gmt_created"),
            ("status", "gmt_created"),
            ("kind", "gmt_created"),
            ("owner", "gmt_created"),
            ("tenant", "gmt_created"),
            ("name", "gmt_created"),
            # Also the read side's list of the archive's clusters (decision 36).
            ("cluster", "gmt_created"),
            # The namespaces of a cluster a console's landing page offers (decision 14).
            ("cluster", "namespace"),
            ("gmt_created",),
            ("gmt_finished",),
            ("queue", "gmt_created"),
        )


class Pod(Stamped):
    """A pod of a tracked job (``replica_info``): one row per pod uid."""

    id = fields.BigIntField(primary_key=True)
    name = fields.CharField(max_length=NAME_LENGTH)
    namespace = fields.CharField(max_length=NAMESPACE_LENGTH)
    pod_id = fields.CharField(max_length=UID_LENGTH, unique=True)
    version = fields.CharField(max_length=VERSION_LENGTH)
    status = fields.CharField(max_length=STATUS_LENGTH)
    image = fields.TextField()
    job_id = fields.CharField(max_length=UID_LENGTH)
    replica_type = fields.CharField(max_length=LABEL_VALUE_LENGTH)
    resources = fields.TextField()
    # Not in the seed (decision 32): the effective requests as numbers, and the node.
    gpus = fields.IntField(null=True)
    cpu_millis = fields.BigIntField(null=True)
    memory_bytes = fields.BigIntField(null=True)
    node_name = fields.CharField(max_length=NAME_LENGTH, null=True)
    host_ip = fields.CharField(max_length=IP_LENGTH, null=True)
    pod_ip = fields.CharField(max_length=IP_LENGTH, null=True)
    deploy_region = fields.CharField(max_length=SHORT_TEXT_LENGTH, null=True)
    deleted = fields.BooleanField(default=False)
    is_in_etcd = fields.BooleanField(default=True)
    remark = fields.TextField(null=True)
    gmt_started = fields.DatetimeField(null=True)
    gmt_finished = fields.DatetimeField(null=True)
    # Not in the seed: its containers' restarts (kubectl's RESTARTS) and when a
    # container last ended to be restarted; NULL in rows written before they were kept.
    restarts = fields.IntField(null=True)
    gmt_restarted = fields.DatetimeField(null=True)

    BOUNDS: ClassVar[dict[str, int]] = {"image": IMAGE_LENGTH, "remark": REMARK_LENGTH}
    JSON_BOUNDS: ClassVar[dict[str, int]] = {"resources": RESOURCES_LENGTH}

    class Meta:
        table = "replica_info"
        # A job's pods, page by page in the order they were recorded; a shard's pods
        # (reconciled and pruned namespace by namespace) by the job they name; the
        # aggregated API's pod lists, newest first, and a pod by name (decision 28).
        indexes = (
            ("job_id", "gmt_created"),
            ("namespace", "job_id"),
            ("namespace", "gmt_created"),
            ("namespace", "name"),
            ("gmt_created",),
            # The pods running now (NULL), read live by the usage roll-ups: everything
            # they read of a pod is in the index (decision 33).
            ("gmt_finished", "gmt_started", "job_id", "gpus", "cpu_millis"),
        )


class Event(Stamped):
    """A core/v1 Event about a tracked job or one of its pods (``event_info``).

    The seed stored ``count`` in the ``reason`` column (two fields, one column);
    here it has its own. ``event_id`` (the Event's uid) is the identity: a repeated
    Event updates its one row.
    """

    id = fields.BigIntField(primary_key=True)
    event_id = fields.CharField(max_length=UID_LENGTH, unique=True)
    version = fields.CharField(max_length=VERSION_LENGTH)
    name = fields.CharField(max_length=EVENT_NAME_LENGTH)
    kind = fields.CharField(max_length=KIND_LENGTH)
    type = fields.CharField(max_length=SHORT_TEXT_LENGTH)
    obj_namespace = fields.CharField(max_length=NAMESPACE_LENGTH)
    obj_name = fields.CharField(max_length=NAME_LENGTH)
    obj_uid = fields.CharField(max_length=UID_LENGTH)
    reason = fields.CharField(max_length=SHORT_TEXT_LENGTH)
    message = fields.TextField()
    count = fields.IntField()
    region = fields.CharField(max_length=SHORT_TEXT_LENGTH, null=True)
    first_timestamp = fields.DatetimeField(null=True)
    last_timestamp = fields.DatetimeField(null=True)
    # Not in the seed: the job the Event is about, directly or through a pod or an
    # intermediate object (a RayCluster, a batch Job), so one indexed read gives a
    # job's whole timeline. NULL in rows written before it existed.
    job_id = fields.CharField(max_length=UID_LENGTH, null=True)

    BOUNDS: ClassVar[dict[str, int]] = {"message": MESSAGE_LENGTH}

    class Meta:
        table = "event_info"
        indexes = (
            ("obj_uid",),
            # A job's timeline, page by page.
            ("job_id", "last_timestamp"),
            ("last_timestamp",),
            ("obj_namespace", "obj_name", "last_timestamp"),
            ("reason", "last_timestamp"),
            # A shard's Events by the job they name (retention, namespace by namespace).
            ("obj_namespace", "job_id"),
        )


# Container names are DNS labels.
CONTAINER_NAME_LENGTH = 63
CONTAINER_TYPE_LENGTH = 16
NOTE_LENGTH = 1000
# JOBARCHIVE_LOG_TAIL_BYTES' largest value: a tail is never longer in characters.
LOG_TAIL_LENGTH = 2**20


class LogTail(Stamped):
    """The last lines of a failed container instance's log (``container_log_tail``): one
    row per pod uid, container and restart count, written once, never updated.

    ``captured`` false: the log could not be read, and ``note`` says why ("not
    captured: ..."); such a row counts as done, so the read is never retried.
    ``gmt_failed`` is the instance's ``finishedAt``. Not a table of KubeDL's.
    """

    id = fields.BigIntField(primary_key=True)
    pod_id = fields.CharField(max_length=UID_LENGTH)
    container = fields.CharField(max_length=CONTAINER_NAME_LENGTH)
    restart_count = fields.IntField()
    container_type = fields.CharField(max_length=CONTAINER_TYPE_LENGTH)
    job_id = fields.CharField(max_length=UID_LENGTH)
    namespace = fields.CharField(max_length=NAMESPACE_LENGTH)
    pod_name = fields.CharField(max_length=NAME_LENGTH)
    exit_code = fields.IntField(null=True)
    reason = fields.CharField(max_length=SHORT_TEXT_LENGTH, null=True)
    gmt_failed = fields.DatetimeField(null=True)
    captured = fields.BooleanField()
    truncated = fields.BooleanField(default=False)
    note = fields.TextField(null=True)
    log_tail = fields.TextField(null=True)

    BOUNDS: ClassVar[dict[str, int]] = {
        "reason": SHORT_TEXT_LENGTH,
        "note": NOTE_LENGTH,
        "log_tail": LOG_TAIL_LENGTH,
    }

    class Meta:
        table = "container_log_tail"
        unique_together = (("pod_id", "container", "restart_count"),)
        # A job's tails, newest failure first (``jobarchive logs``, retention).
        indexes = (("job_id", "gmt_failed"),)


class UsageDay(Stamped):
    """A job's finished pods' GPU- and CPU-seconds on one UTC day (``usage_day``), kept
    by the writer from the job's pods (decision 33). Not a table of KubeDL's."""

    id = fields.BigIntField(primary_key=True)
    job_id = fields.CharField(max_length=UID_LENGTH)
    # The day's start, midnight UTC.
    day = fields.DatetimeField()
    gpu_seconds = fields.FloatField()
    cpu_milli_seconds = fields.FloatField()
    # Its measured pods' efficiency weights (``core.efficiency.rates``) times their
    # seconds on the day, each NULL when no pod's is known (decision 47).
    measured_gpu_s = fields.FloatField(null=True)
    active_gpu_s = fields.FloatField(null=True)
    unused_gpu_s = fields.FloatField(null=True)
    energy_j = fields.FloatField(null=True)
    measured_cpu_ms = fields.FloatField(null=True)
    used_cpu_ms = fields.FloatField(null=True)
    measured_mem_bs = fields.FloatField(null=True)
    peak_mem_bs = fields.FloatField(null=True)
    # Why the job's pods failed: its first failed pod's remark's head (decision 33).
    reason = fields.TextField(null=True)
    # The job's columns a roll-up groups, scopes and counts by, copied from its row
    # whenever either is written (decision 33); NULL until the job is recorded.
    namespace = fields.CharField(max_length=NAMESPACE_LENGTH, null=True)
    owner = fields.CharField(max_length=SHORT_TEXT_LENGTH, null=True)
    tenant = fields.CharField(max_length=SHORT_TEXT_LENGTH, null=True)
    queue = fields.CharField(max_length=NAME_LENGTH, null=True)
    kind = fields.CharField(max_length=KIND_LENGTH, null=True)
    status = fields.CharField(max_length=STATUS_LENGTH, null=True)
    job_reason = fields.TextField(null=True)
    job_created = fields.DatetimeField(null=True)
    job_finished = fields.DatetimeField(null=True)

    class Meta:
        table = "usage_day"
        unique_together = (("job_id", "day"),)
        # A window's days, then a job's by its uid (the rewrite, retention).
        indexes = (("day", "job_id"),)


@dataclasses.dataclass(frozen=True)
class Table:
    """What hand-written SQL needs to know of a model: its table, its columns but
    ``id`` (in the models' order), and the unique key rows are upserted by."""

    name: str
    columns: tuple[str, ...]
    key: str
    # Columns an upsert keeps at the earliest value stored or written, a NULL written
    # never replacing a value (``earliest``).
    earliest: tuple[str, ...] = ()
    # Of a table written once (``INSERTED``): the columns of its rows' unique key.
    once: tuple[str, ...] = ()


def earliest(
    stored: datetime.datetime | None, written: datetime.datetime | None
) -> datetime.datetime | None:
    """The value an ``earliest`` column keeps: the earlier of the two, or the one known."""
    if stored is None or written is None:
        return written if stored is None else stored
    return min(stored, written)


def _table(model: type[Stamped], key: str, once: tuple[str, ...] = ()) -> Table:
    columns = tuple(
        column
        for field, column in model._meta.fields_db_projection.items()
        if field != model._meta.pk_attr
    )
    return Table(model._meta.db_table, columns, key, model.EARLIEST, once)


TABLES: dict[type[Stamped], Table] = {
    Job: _table(Job, "job_id"),
    Pod: _table(Pod, "pod_id"),
    Event: _table(Event, "event_id"),
    Attempt: _table(Attempt, "attempt_id"),
    Wait: _table(Wait, "wait_id"),
    Quota: _table(Quota, "quota_id"),
    FailedJob: _table(FailedJob, "job_id"),
    FailedPod: _table(FailedPod, "pod_id"),
    Summary: _table(Summary, "pod_id"),
}


# Tables written once, never updated: inserted beside the upserts, a row whose unique
# key is stored already left alone (the tails': no uid to upsert by, decision 19).
INSERTED: dict[type[Stamped], Table] = {
    LogTail: _table(LogTail, "pod_id", ("pod_id", "container", "restart_count")),
}
# Every table the writer writes, upserted or inserted.
WRITTEN: dict[type[Stamped], Table] = {**TABLES, **INSERTED}
# The usage roll-up's table, rewritten per job (``storage.daily``).
USAGE_DAY_TABLE = _table(UsageDay, "job_id")
# The usage by cluster queue's, rewritten per job (``storage.spans``).
QUEUE_SPAN_TABLE = _table(QueueSpan, "job_id")
# Its jobs' waits, rewritten per job beside the spans (``storage.spans``).
QUEUE_JOB_TABLE = _table(QueueJob, "job_id")
