"""The failure taxonomy's part of the schema (decision 42): ``job_failure``, a failed
job's class with the pod, container, exit code, signal and detail it was read from;
and ``pod_failure``, each failed pod's own class. Not tables of KubeDL's.

Written by the classifying pass (``maintenance.classifying``), not the recorder: a row
is derived from the job's stored pods, log tails, Events and Kueue attempts, upserted by
the job's uid under the job's ``version`` (the stale-write guard of every table, decision
3), and written again when the evidence changes.
"""

from typing import ClassVar

from tortoise import fields

from jobarchive.core.rows import (
    LABEL_VALUE_LENGTH,
    MESSAGE_LENGTH,
    NAME_LENGTH,
    NAMESPACE_LENGTH,
    SHORT_TEXT_LENGTH,
    UID_LENGTH,
    VERSION_LENGTH,
)
from jobarchive.storage.stamped import Stamped


class FailedJob(Stamped):
    """A failed job's class (``job_failure``): its first failing pod's, and
    ``derived_exit_code``, the highest exit code of all its pods."""

    id = fields.BigIntField(primary_key=True)
    job_id = fields.CharField(max_length=UID_LENGTH, unique=True)
    # The job's resourceVersion when its class was read: the stale-write guard's.
    version = fields.CharField(max_length=VERSION_LENGTH)
    namespace = fields.CharField(max_length=NAMESPACE_LENGTH)
    failure_class = fields.CharField(max_length=SHORT_TEXT_LENGTH)
    pod_id = fields.CharField(max_length=UID_LENGTH)
    pod_name = fields.CharField(max_length=NAME_LENGTH)
    container = fields.CharField(max_length=LABEL_VALUE_LENGTH, null=True)  # a DNS label
    exit_code = fields.IntField(null=True)
    signal = fields.IntField(null=True)
    detail = fields.TextField(null=True)
    derived_exit_code = fields.IntField(null=True)

    BOUNDS: ClassVar[dict[str, int]] = {"detail": MESSAGE_LENGTH}

    class Meta:
        table = "job_failure"
        # ``jobs --failure CLASS``: a class's jobs.
        indexes = (("failure_class",),)


class FailedPod(Stamped):
    """A failed pod's own class (``pod_failure``), with the container, exit code,
    signal and detail it was read from; its job's class is its first failing pod's."""

    id = fields.BigIntField(primary_key=True)
    pod_id = fields.CharField(max_length=UID_LENGTH, unique=True)
    # Its job's resourceVersion when it was classified: the stale-write guard's.
    version = fields.CharField(max_length=VERSION_LENGTH)
    job_id = fields.CharField(max_length=UID_LENGTH)
    namespace = fields.CharField(max_length=NAMESPACE_LENGTH)
    failure_class = fields.CharField(max_length=SHORT_TEXT_LENGTH)
    container = fields.CharField(max_length=LABEL_VALUE_LENGTH, null=True)  # a DNS label
    exit_code = fields.IntField(null=True)
    signal = fields.IntField(null=True)
    detail = fields.TextField(null=True)

    BOUNDS: ClassVar[dict[str, int]] = {"detail": MESSAGE_LENGTH}

    class Meta:
        table = "pod_failure"
        # A job's failed pods (retention; a page of its pods' classes).
        indexes = (("job_id",),)
