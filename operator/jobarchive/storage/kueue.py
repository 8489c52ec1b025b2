"""Kueue's part of the schema (decision 43): ``job_attempt``, each admission of a job, and
``job_wait``, why a job waited. Not tables of KubeDL's.

Kueue keeps a Workload's latest conditions only, and deletes the Workload when its
retention policy says: the rows are what the recorder accumulated from the Workload's
successive versions, upserted by a key of their own (the Workload's uid and when its
quota was reserved; the Workload's uid and a digest of a wait's reason and start) with
the stale-write guard of every table (decision 3).
"""

from typing import ClassVar

from tortoise import fields

from jobarchive.core.rows import (
    CLUSTER_LENGTH,
    KEY_LENGTH,
    MESSAGE_LENGTH,
    NAME_LENGTH,
    NAMESPACE_LENGTH,
    RESOURCES_LENGTH,
    STATUS_LENGTH,
    UID_LENGTH,
    VERSION_LENGTH,
)
from jobarchive.storage.stamped import Stamped


class Attempt(Stamped):
    """One admission of a job by Kueue (``job_attempt``): from its quota reservation to
    its end (finished, evicted, deleted), one row per Workload uid and reservation time.

    ``gmt_created`` is the reservation's time; ``admitted_at`` and ``running_at`` keep the
    earliest time written (a Workload that recovers is not admitted or started again).
    """

    id = fields.BigIntField(primary_key=True)
    attempt_id = fields.CharField(max_length=KEY_LENGTH, unique=True)
    # The Workload's resourceVersion when the row was written: the stale-write guard's.
    version = fields.CharField(max_length=VERSION_LENGTH)
    job_id = fields.CharField(max_length=UID_LENGTH)
    workload_id = fields.CharField(max_length=UID_LENGTH)
    workload_name = fields.CharField(max_length=NAME_LENGTH)
    namespace = fields.CharField(max_length=NAMESPACE_LENGTH)
    cluster_queue = fields.CharField(max_length=NAME_LENGTH, null=True)
    local_queue = fields.CharField(max_length=NAME_LENGTH, null=True)
    flavors = fields.TextField()
    quota_reserved_at = fields.DatetimeField()
    admitted_at = fields.DatetimeField(null=True)
    running_at = fields.DatetimeField(null=True)
    ended_at = fields.DatetimeField(null=True)
    end_reason = fields.CharField(max_length=STATUS_LENGTH, null=True)
    underlying_cause = fields.CharField(max_length=STATUS_LENGTH, null=True)
    message = fields.TextField(null=True)
    preemptor_workload_id = fields.CharField(max_length=UID_LENGTH, null=True)
    preemptor_job_id = fields.CharField(max_length=UID_LENGTH, null=True)
    evictions = fields.TextField(null=True)
    requeues = fields.IntField(null=True)

    EARLIEST: ClassVar[tuple[str, ...]] = ("admitted_at", "running_at")
    BOUNDS: ClassVar[dict[str, int]] = {"message": MESSAGE_LENGTH}
    JSON_BOUNDS: ClassVar[dict[str, int]] = {
        "flavors": RESOURCES_LENGTH,
        "evictions": RESOURCES_LENGTH,
    }

    class Meta:
        table = "job_attempt"
        # A job's attempts in order (its detail, retention); a Workload's latest (the
        # recorder's lookup after a restart); a queue's over a window.
        indexes = (
            ("job_id", "quota_reserved_at"),
            ("workload_id", "quota_reserved_at"),
            ("cluster_queue", "quota_reserved_at"),
        )


class Wait(Stamped):
    """Why Kueue kept a job waiting (``job_wait``): one reason (its digits aside) over one
    stretch of waiting, with when it was first and last seen.

    ``gmt_created`` is ``first_seen``, which keeps the earliest time written; a later
    version of the Workload extends ``last_seen``.
    """

    id = fields.BigIntField(primary_key=True)
    wait_id = fields.CharField(max_length=KEY_LENGTH, unique=True)
    version = fields.CharField(max_length=VERSION_LENGTH)
    job_id = fields.CharField(max_length=UID_LENGTH)
    workload_id = fields.CharField(max_length=UID_LENGTH)
    namespace = fields.CharField(max_length=NAMESPACE_LENGTH)
    local_queue = fields.CharField(max_length=NAME_LENGTH, null=True)
    # Kueue's reason (``Pending``, ``WaitingForQuota``...), and its message.
    reason = fields.CharField(max_length=STATUS_LENGTH)
    message = fields.TextField()
    first_seen = fields.DatetimeField()
    last_seen = fields.DatetimeField()

    EARLIEST: ClassVar[tuple[str, ...]] = ("first_seen",)
    BOUNDS: ClassVar[dict[str, int]] = {"message": MESSAGE_LENGTH}

    class Meta:
        table = "job_wait"
        # A job's waits in order (its detail, retention).
        indexes = (("job_id", "first_seen"),)


class Quota(Stamped):
    """A ClusterQueue's quota of one flavor and accelerator resource (``queue_quota``),
    in whole GPUs, over the time it was in force: a history, one row per change, so that
    usage integrates each period against the quota of each of its parts (decision 44).

    A ClusterQueue is cluster-scoped: the row has no namespace, only its cluster.
    """

    id = fields.BigIntField(primary_key=True)
    quota_id = fields.CharField(max_length=KEY_LENGTH, unique=True)
    version = fields.CharField(max_length=VERSION_LENGTH)
    queue_id = fields.CharField(max_length=UID_LENGTH)
    cluster_queue = fields.CharField(max_length=NAME_LENGTH)
    cohort = fields.CharField(max_length=NAME_LENGTH, null=True)
    flavor = fields.CharField(max_length=NAME_LENGTH)
    resource = fields.CharField(max_length=NAME_LENGTH)
    nominal = fields.BigIntField()
    borrowing_limit = fields.BigIntField(null=True)
    lending_limit = fields.BigIntField(null=True)
    valid_from = fields.DatetimeField()
    valid_until = fields.DatetimeField(null=True)

    class Meta:
        table = "queue_quota"
        # A queue's rows in force (the recorder's lookup after a restart); a window's.
        indexes = (("queue_id", "valid_until"), ("valid_from", "cluster_queue"))


class QueueSpan(Stamped):
    """A job's finished pods' GPUs in one of its attempts over one stretch of time
    (``queue_span``), kept by the writer from the job's pods and attempts: the roll-up
    usage by cluster queue reads (decision 46). ``cluster`` is the pods'."""

    id = fields.BigIntField(primary_key=True)
    job_id = fields.CharField(max_length=UID_LENGTH)
    cluster_queue = fields.CharField(max_length=NAME_LENGTH)
    # Whether a preemption ended the attempt.
    preempted = fields.BooleanField()
    started = fields.DatetimeField()
    finished = fields.DatetimeField()
    gpus = fields.BigIntField()
    # The job's cluster and creation, copied from its row whenever either is written
    # (``spans.refresh``), so that reads need no join; NULL until the job is recorded.
    job_cluster = fields.CharField(max_length=CLUSTER_LENGTH, null=True)
    job_created = fields.DatetimeField(null=True)

    class Meta:
        table = "queue_span"
        # A window's spans by their finish, then a job's by its uid (the rewrite, retention).
        indexes = (("finished", "started"), ("job_id", "finished"))


class QueueJob(Stamped):
    """A job's first admission by Kueue and its waits (``queue_job``), kept by the writer
    from its attempts and its row beside its spans: the waits usage by cluster queue
    ranks, read for a window's jobs only (decision 46). ``cluster`` is the attempts'."""

    id = fields.BigIntField(primary_key=True)
    job_id = fields.CharField(max_length=UID_LENGTH, unique=True)
    # The queue of its first attempt (by reservation), and that reservation.
    cluster_queue = fields.CharField(max_length=NAME_LENGTH, null=True)
    first_reserved = fields.DatetimeField()
    # The start waits of its attempts that ran, summed (``core.attempts.figures``).
    start_wait_s = fields.FloatField(null=True)
    # The job's columns, copied from its row whenever either is written; NULL until the
    # job is recorded.
    job_cluster = fields.CharField(max_length=CLUSTER_LENGTH, null=True)
    job_created = fields.DatetimeField(null=True)
    job_running = fields.DatetimeField(null=True)

    class Meta:
        table = "queue_job"
        # A window's jobs by their first reservation.
        indexes = (("first_reserved", "cluster_queue"),)
