"""A pod's requests as the usage accounting counts them (decision 32): the GPUs (every
accelerator resource added up), CPU in millicores and memory in bytes, each rounded up
as Kubernetes' ``Quantity.Value()`` and ``MilliValue()`` round. Read from the effective
requests on the write path, and from the stored resources JSON by the upgrade."""

import dataclasses
import decimal
import json
import math
from collections.abc import Mapping

from jobarchive.core.quantities import Quantity, parse_quantity
from jobarchive.core.untrusted import mapping

# Counted whatever JOBARCHIVE_ACCELERATORS says; it names more.
ACCELERATORS = frozenset({"nvidia.com/gpu", "amd.com/gpu"})
# The columns' ranges: gpus an INT, the others BIGINT; a hostile spec is held to them.
GPUS_MAX = 2**31 - 1
AMOUNT_MAX = 2**63 - 1


@dataclasses.dataclass(frozen=True)
class Requested:
    """What a pod asked the scheduler for, in the units the columns keep."""

    gpus: int
    cpu_millis: int
    memory_bytes: int


def requested(requests: Mapping[str, Quantity], accelerators: frozenset[str]) -> Requested:
    """The counted requests of a pod's effective requests (``accelerators`` beside
    ``ACCELERATORS``)."""
    gpus = sum(
        (requests[name].value for name in ACCELERATORS | accelerators if name in requests),
        decimal.Decimal(0),
    )
    cpu = requests["cpu"].value * 1000 if "cpu" in requests else decimal.Decimal(0)
    memory = requests["memory"].value if "memory" in requests else decimal.Decimal(0)
    return Requested(_whole(gpus, GPUS_MAX), _whole(cpu, AMOUNT_MAX), _whole(memory, AMOUNT_MAX))


def requested_of_json(resources: object, accelerators: frozenset[str]) -> Requested | None:
    """The counted requests of a stored ``resources`` column (``{"requests": {...},
    "limits": {...}}``, jobarchive's or KubeDL's: a limit stands in for a request the
    JSON lacks); None when it is not such JSON (cut, or not written by either)."""
    if not isinstance(resources, str):
        return None
    try:
        parsed = json.loads(resources)
    except (ValueError, RecursionError):
        return None
    if not isinstance(parsed, dict):
        return None
    amounts: dict[str, Quantity] = {}
    for which in ("limits", "requests"):
        for name, raw in mapping(parsed.get(which)).items():
            quantity = parse_quantity(raw)
            if isinstance(name, str) and quantity is not None:
                amounts[name] = quantity
    return requested(amounts, accelerators)


def _whole(value: decimal.Decimal, most: int) -> int:
    """Rounded up, within [0, most]: a request below zero is none (the API refuses it)."""
    return min(max(math.ceil(value), 0), most)
