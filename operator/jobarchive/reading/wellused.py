"""A job's efficiency (decision 45) as JSON Schema: the ``efficiency`` of its detail
(``queries.measured``), for both APIs' documents. Ratios are 0 to 1 (0.42, not 42%);
each figure null where Prometheus had no series of it."""

from jobarchive.reading.described import Schema

RATIO: Schema = {"type": ["number", "null"], "minimum": 0}
AMOUNT: Schema = {"type": ["number", "null"]}
COUNT: Schema = {"type": "integer"}
MAYBE_COUNT: Schema = {"type": ["integer", "null"]}


def _object(properties: dict[str, Schema], description: str) -> Schema:
    """An object with exactly these fields, each always present."""
    return {
        "type": "object",
        "description": description,
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


FIGURES: dict[str, Schema] = {
    "gpu_hours": {"type": "number", "description": "Its pods' GPUs times their run time."},
    "gpu_activity_mean": {**RATIO, "description": "GPU activity, weighted by GPU-hours."},
    "idle_gpu_hours": {**AMOUNT, "description": "GPU-hours x (1 - activity), summed."},
    "unused_gpus": {**MAYBE_COUNT, "description": "GPUs never used (peak activity 0)."},
    "unused_gpu_hours": {**AMOUNT, "description": "The GPU-hours of GPUs never used."},
    "gpu_memory_peak": {**RATIO, "description": "The highest GPU memory used / its size."},
    "cpu_efficiency": {**RATIO, "description": "CPU used / requested, by CPU-hours."},
    "mem_peak_ratio": {**RATIO, "description": "Memory peak / limit, by the limit's hours."},
    "energy_kwh": {**AMOUNT, "description": "What its GPUs drew."},
    "pods": {**COUNT, "description": "Its finished pods."},
    "unknown": {**COUNT, "description": "Its pods without data in Prometheus."},
    "too_short": {**COUNT, "description": "Its pods that ran too briefly to judge."},
}
GPU: Schema = _object(
    {"gpu": {"type": "string"}, "mean": RATIO, "peak": RATIO, "memory_peak": RATIO},
    "One GPU (its UUID, else index; a MIG instance after a slash) over the pod's run.",
)
POD: Schema = {
    "type": "object",
    "description": "One pod's figures; only its name, replica type, GPUs, run and "
    "outcome where it has no summary.",
    "properties": {
        "name": {"type": "string"},
        "replica_type": {"type": "string"},
        "gpus": COUNT,
        "run_seconds": {"type": "number"},
        "outcome": {
            "type": ["string", "null"],
            "enum": ["measured", "too_short", "no_data", "refused", None],
        },
        "source": {"type": ["string", "null"], "description": "engine_active or gpu_util."},
        "gpu_activity_mean": RATIO,
        "gpu_activity_peak": RATIO,
        "gpu_memory_peak": RATIO,
        "gpus_seen": COUNT,
        "unused_gpus": MAYBE_COUNT,
        "cpu_seconds": AMOUNT,
        "cpu_efficiency": RATIO,
        "memory_peak_bytes": AMOUNT,
        "memory_peak_ratio": RATIO,
        "energy_kwh": AMOUNT,
        "per_gpu": {"type": "array", "items": GPU},
    },
    "required": ["name", "replica_type", "gpus", "run_seconds", "outcome"],
    "additionalProperties": False,
}
EFFICIENCY: Schema = {
    **_object(
        {
            **FIGURES,
            "advice": {"type": "array", "items": {"type": "string"}},
            "replicas": {
                "type": "object",
                "additionalProperties": _object(FIGURES, "A replica type's figures."),
            },
            "per_pod": {"type": "array", "items": POD, "description": "The first 200 by name."},
            "per_pod_more": {"type": "boolean", "description": "Whether it has more pods."},
        },
        "How well the job used what it was given, from Prometheus (decision 45); absent "
        "until a pod of it is summarised.",
    ),
}
