"""A job's efficiency (decision 45) in an ArchivedJob's status: its detail's
``efficiency`` (``queries.measured``) under the names Kubernetes spells them, and back;
and its schema so renamed. Pure, as ``objects``."""

import copy
from collections.abc import Mapping
from typing import Any

from jobarchive.reading.wellused import EFFICIENCY

# The JSON API's names, and the status's, where they differ (at every depth).
NAMES = {
    "gpu_hours": "gpuHours",
    "gpu_activity_mean": "gpuActivityMean",
    "gpu_activity_peak": "gpuActivityPeak",
    "idle_gpu_hours": "idleGPUHours",
    "unused_gpus": "unusedGPUs",
    "unused_gpu_hours": "unusedGPUHours",
    "gpu_memory_peak": "gpuMemoryPeak",
    "cpu_efficiency": "cpuEfficiency",
    "mem_peak_ratio": "memPeakRatio",
    "energy_kwh": "energyKWh",
    "too_short": "tooShort",
    "per_pod": "perPod",
    "per_pod_more": "perPodMore",
    "replica_type": "replicaType",
    "run_seconds": "runSeconds",
    "gpus_seen": "gpusSeen",
    "cpu_seconds": "cpuSeconds",
    "memory_peak_bytes": "memoryPeakBytes",
    "memory_peak_ratio": "memoryPeakRatio",
    "per_gpu": "perGPU",
    "memory_peak": "memoryPeak",
}
NAMED = {shown: field for field, shown in NAMES.items()}
# Objects whose keys are data, not fields: a replica type's name is kept as it is.
_DATA_KEYS = ("replicas",)


def _renamed(found: Any, names: Mapping[str, str]) -> Any:
    """``found`` with every field ``names`` names renamed, at every depth."""
    if isinstance(found, list):
        return [_renamed(each, names) for each in found]
    if not isinstance(found, dict):
        return found
    return {
        names.get(key, key): (
            {name: _renamed(each, names) for name, each in value.items()}
            if key in _DATA_KEYS and isinstance(value, dict)
            else _renamed(value, names)
        )
        for key, value in found.items()
    }


def efficiency_status(efficiency: Mapping[str, Any]) -> dict[str, Any]:
    """A detail's efficiency as an ArchivedJob's status holds it."""
    renamed: dict[str, Any] = _renamed(dict(efficiency), NAMES)
    return renamed


def efficiency_detail(status: Mapping[str, Any]) -> dict[str, Any]:
    """The detail's efficiency an ArchivedJob's status was made of."""
    renamed: dict[str, Any] = _renamed(dict(status), NAMED)
    return renamed


def _schema_renamed(schema: Any) -> Any:
    """A JSON Schema with its objects' properties (and required names) renamed."""
    if isinstance(schema, list):
        return [_schema_renamed(each) for each in schema]
    if not isinstance(schema, dict):
        return schema
    found = {key: _schema_renamed(value) for key, value in schema.items()}
    if isinstance(schema.get("properties"), dict):
        found["properties"] = {
            NAMES.get(name, name): _schema_renamed(value)
            for name, value in schema["properties"].items()
        }
    if isinstance(schema.get("required"), list):
        found["required"] = [NAMES.get(name, name) for name in schema["required"]]
    return found


def efficiency_schema() -> dict[str, Any]:
    """The status's efficiency as JSON Schema."""
    renamed: dict[str, Any] = _schema_renamed(copy.deepcopy(EFFICIENCY))
    return renamed
