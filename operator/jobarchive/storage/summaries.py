"""Efficiency's part of the schema (decision 45): ``pod_efficiency``, what Prometheus
said of a pod's run, kept as long as the archive keeps the pod's job. Not a table of
KubeDL's.

Written by the summarising pass (``maintenance.summarising``), not the recorder: one
row per pod, upserted by the pod's uid under the pod's ``version`` (the stale-write
guard of every table, decision 3). A pod without a row is one still to be summarised.
"""

from typing import ClassVar

from tortoise import fields

from jobarchive.core.rows import (
    MESSAGE_LENGTH,
    NAME_LENGTH,
    NAMESPACE_LENGTH,
    RESOURCES_LENGTH,
    STATUS_LENGTH,
    UID_LENGTH,
    VERSION_LENGTH,
)
from jobarchive.storage.stamped import Stamped


class Summary(Stamped):
    """A pod's efficiency (``pod_efficiency``): its outcome (``core.efficiency``:
    measured, too short, no data, refused) and its figures, each NULL where unknown."""

    id = fields.BigIntField(primary_key=True)
    pod_id = fields.CharField(max_length=UID_LENGTH, unique=True)
    # The pod's resourceVersion when it was summarised: the stale-write guard's.
    version = fields.CharField(max_length=VERSION_LENGTH)
    job_id = fields.CharField(max_length=UID_LENGTH)
    namespace = fields.CharField(max_length=NAMESPACE_LENGTH)
    pod_name = fields.CharField(max_length=NAME_LENGTH)
    outcome = fields.CharField(max_length=STATUS_LENGTH)
    # Where GPU activity was read: dcgm-exporter's engine activity, else its utilisation.
    source = fields.CharField(max_length=STATUS_LENGTH, null=True)
    gpus_seen = fields.IntField()
    gpu_activity_mean = fields.FloatField(null=True)
    gpu_activity_peak = fields.FloatField(null=True)
    gpu_memory_peak = fields.FloatField(null=True)
    unused_gpus = fields.IntField(null=True)
    energy_joules = fields.FloatField(null=True)
    cpu_seconds = fields.FloatField(null=True)
    cpu_efficiency = fields.FloatField(null=True)
    memory_peak_bytes = fields.FloatField(null=True)
    memory_peak_ratio = fields.FloatField(null=True)
    # Each GPU's mean and peak activity and memory peak, for the console's strip.
    per_gpu = fields.TextField()
    # Why a pod is not measured: Prometheus' refusal, in its words.
    note = fields.TextField(null=True)

    BOUNDS: ClassVar[dict[str, int]] = {"note": MESSAGE_LENGTH}
    JSON_BOUNDS: ClassVar[dict[str, int]] = {"per_gpu": RESOURCES_LENGTH}

    class Meta:
        table = "pod_efficiency"
        # A job's summaries (its report, retention), and whether one of its pods was
        # measured, read from the index alone (usage's unknown jobs, decision 47).
        indexes = (("job_id", "outcome"),)
