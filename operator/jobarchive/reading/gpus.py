"""The GPUs a stored ``resources`` column asks for, as the statistics and the
aggregated API's tables count them (pure: the JSON in, a number out)."""

import math
from typing import Any


def requested_gpus(resources: Any) -> float:
    """The GPUs a job's ``resources`` column asks for: per replica type, replicas times
    its ``*/gpu`` requests (else limits, which Kubernetes copies to requests)."""
    if not isinstance(resources, dict):
        return 0.0
    total = 0.0
    for spec in resources.values():
        if not isinstance(spec, dict):
            continue
        replicas = spec.get("replicas", 1)
        wanted = spec.get("resources")
        if not isinstance(wanted, dict):
            continue
        for part in ("requests", "limits"):
            amounts = wanted.get(part)
            gpus = _gpu_count(amounts) if isinstance(amounts, dict) else 0.0
            if gpus:
                total += gpus * (replicas if isinstance(replicas, int) else 1)
                break
    return total


def _gpu_count(amounts: dict[str, Any]) -> float:
    count = 0.0
    for name, amount in amounts.items():
        if not str(name).endswith("/gpu"):
            continue
        try:
            value = float(str(amount))
        except ValueError:
            continue
        # A hand-written "1e999" or "nan" requests nothing countable.
        if math.isfinite(value) and value > 0:
            count += value
    return count
