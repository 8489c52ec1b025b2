"""The effective resources of a pod (or pod template), as the scheduler accounts them.

Per resource name, for requests and limits separately: the larger of
(a) the sum over the regular containers plus every sidecar (an init container with
``restartPolicy: Always``), and (b) for each ordinary init container, its own
amount plus the sidecars started before it. A container's request defaults to its
limit, as the API server's defaulting does. Pod-level ``spec.resources``, where
set, wins for the resources it names. Then the pod's ``spec.overhead`` (its
RuntimeClass's, set by the admission controller) is added: to every request, and to
the limits a pod sets (a resource without a limit stays without one), as the
scheduler and the kubelet count it. Quantities are printed canonically.
"""

from collections.abc import Mapping
from typing import Any

from jobarchive.core.accounting import Requested, requested
from jobarchive.core.bounded import Lru
from jobarchive.core.cutting import compact, fit_json
from jobarchive.core.quantities import Quantity, parse_quantity
from jobarchive.core.rows import RESOURCES_LENGTH
from jobarchive.core.untrusted import mapping, sequence

Amounts = dict[str, Quantity]
# Pods of one job share their resources: the JSON of each distinct set is computed once.
# A key longer than this (a spec nobody writes by hand) is not cached.
REMEMBERED_SPECS = 1024
KEY_LENGTH = 4096
_remembered: Lru[str, tuple[str, Requested]] = Lru(REMEMBERED_SPECS)


def effective_amounts(pod_spec: Mapping[str, Any]) -> dict[str, Amounts]:
    """``{"requests": {...}, "limits": {...}}`` of a pod spec, as quantities."""
    containers = [mapping(c) for c in sequence(pod_spec.get("containers"))]
    init_containers = [mapping(c) for c in sequence(pod_spec.get("initContainers"))]
    pod_level = mapping(pod_spec.get("resources"))
    overhead = _amounts(mapping(pod_spec.get("overhead")))
    result: dict[str, Amounts] = {}
    for which in ("requests", "limits"):
        amounts = _effective(which, containers, init_containers)
        amounts.update(_amounts(mapping(pod_level.get(which))))
        added = (
            overhead
            if which == "requests"
            else {name: quantity for name, quantity in overhead.items() if name in amounts}
        )
        _add_into(amounts, added)
        result[which] = amounts
    return result


def effective_resources(pod_spec: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    """``{"requests": {...}, "limits": {...}}`` of a pod spec, canonical quantities."""
    return _printed(effective_amounts(pod_spec))


def pod_resources(
    pod_spec: Mapping[str, Any], accelerators: frozenset[str]
) -> tuple[str, Requested]:
    """``resources_json(effective_resources(pod_spec))`` and the effective requests as
    ``accounting.requested`` counts them, remembered for recent specs.

    The key is the ``repr`` of every field ``effective_resources`` reads (and the
    accelerators counted): JSON values
    print faithfully (``1``, ``1.0``, ``True`` and ``"1"`` apart), so equal keys mean
    equal inputs. A cache hit costs about a tenth of the parsing and printing.
    """
    key = repr(
        (
            [mapping(c).get("resources") for c in sequence(pod_spec.get("containers"))],
            [
                (mapping(c).get("resources"), mapping(c).get("restartPolicy"))
                for c in sequence(pod_spec.get("initContainers"))
            ],
            pod_spec.get("resources"),
            pod_spec.get("overhead"),
            sorted(accelerators),
        )
    )
    cached = _remembered.get(key)
    if cached is None:
        amounts = effective_amounts(pod_spec)
        cached = (resources_json(_printed(amounts)), requested(amounts["requests"], accelerators))
        if len(key) <= KEY_LENGTH:
            _remembered.put(key, cached)
    return cached


def resources_json(value: object) -> str:
    """Serialize a resources structure compactly and deterministically, within its
    column's bound (``cutting.fit_json``: a hostile spec of thousands of names)."""
    return fit_json(compact(value), RESOURCES_LENGTH)


def _printed(amounts: Mapping[str, Amounts]) -> dict[str, dict[str, str]]:
    return {
        which: {name: str(values[name]) for name in sorted(values)}
        for which, values in amounts.items()
    }


def _effective(
    which: str, containers: list[Mapping[str, Any]], init_containers: list[Mapping[str, Any]]
) -> Amounts:
    running: Amounts = {}
    for container in containers:
        _add_into(running, _container_amounts(container, which))
    peak: Amounts = {}
    sidecars: Amounts = {}
    for container in init_containers:
        own = _container_amounts(container, which)
        if container.get("restartPolicy") == "Always":
            _add_into(sidecars, own)
            _add_into(running, own)
            continue
        starting = dict(sidecars)
        _add_into(starting, own)
        _max_into(peak, starting)
    _max_into(running, peak)
    return running


def _container_amounts(container: Mapping[str, Any], which: str) -> Amounts:
    resources = mapping(container.get("resources"))
    amounts = _amounts(mapping(resources.get(which)))
    if which == "requests":
        for name, limit in _amounts(mapping(resources.get("limits"))).items():
            amounts.setdefault(name, limit)
    return amounts


def _amounts(raw: Mapping[str, Any]) -> Amounts:
    amounts: Amounts = {}
    for name, value in raw.items():
        quantity = parse_quantity(value)
        if isinstance(name, str) and quantity is not None:
            amounts[name] = quantity
    return amounts


def _add_into(total: Amounts, more: Amounts) -> None:
    for name, quantity in more.items():
        total[name] = total[name] + quantity if name in total else quantity


def _max_into(total: Amounts, candidate: Amounts) -> None:
    for name, quantity in candidate.items():
        if name not in total or quantity.value > total[name].value:
            total[name] = quantity
