"""Kueue's ClusterQueue as its GPU quotas (decision 44), pure: per flavor and accelerator
resource (those ``core.accounting`` counts as GPUs, and the ones configured), the
nominal quota and the borrowing and lending limits, in whole GPUs (rounded up, as
Kubernetes' ``Quantity.Value()``).

A ClusterQueue is cluster-scoped (``spec.cohortName`` in v1beta2, ``spec.cohort`` in
v1beta1). Its other resources (CPU, memory, pods) are not kept: usage reads GPU-hours.
"""

import dataclasses
import datetime
import hashlib
import math
from collections.abc import Mapping
from typing import Any

from jobarchive.core.accounting import ACCELERATORS, GPUS_MAX
from jobarchive.core.cutting import clip
from jobarchive.core.quantities import parse_quantity
from jobarchive.core.rows import NAME_LENGTH, QuotaRow
from jobarchive.core.times import rfc3339, timestamp
from jobarchive.core.untrusted import mapping, sequence, text
from jobarchive.recording.convert.common import identity, uid


@dataclasses.dataclass(frozen=True)
class Limits:
    """One flavor's quota of one resource, in whole GPUs (a limit None when not set)."""

    nominal: int
    borrowing: int | None
    lending: int | None


@dataclasses.dataclass(frozen=True)
class Capacity:
    """What a ClusterQueue's version says: its identity, cohort and quotas by (flavor,
    resource)."""

    uid: str
    name: str
    version: str
    created: datetime.datetime | None
    # When its spec was last written: the newest of the API server's managed fields'
    # times of writers other than the status's, if it stamps them.
    changed: datetime.datetime | None
    cohort: str | None
    quotas: dict[tuple[str, str], Limits]


def _gpus(raw: object) -> int | None:
    """A quantity as whole GPUs, rounded up and held to the column; None if not one."""
    quantity = parse_quantity(raw)
    if quantity is None or quantity.value < 0:
        return None
    return min(math.ceil(quantity.value), GPUS_MAX)


def _spec_changed(queue: Mapping[str, Any]) -> datetime.datetime | None:
    """The newest managed fields' time of a writer of the spec (not of ``status``)."""
    times = [
        timestamp(mapping(entry).get("time"))
        for entry in sequence(mapping(queue.get("metadata")).get("managedFields"))
        if not text(mapping(entry).get("subresource"))
    ]
    return max((when for when in times if when is not None), default=None)


def capacity(queue: Mapping[str, Any], accelerators: frozenset[str]) -> Capacity:
    """The GPU quotas of a ClusterQueue's version (``accelerators`` beside
    ``ACCELERATORS``). Raises InvalidObject without a uid, name or version. A resource
    whose nominal quota is not a quantity is left out; a flavor named twice keeps its
    first quota, as Kueue's validation would refuse the second."""
    base = identity(queue)
    spec = mapping(queue.get("spec"))
    counted = ACCELERATORS | accelerators
    quotas: dict[tuple[str, str], Limits] = {}
    for group in sequence(spec.get("resourceGroups")):
        for flavor in sequence(mapping(group).get("flavors")):
            flavor_name = text(mapping(flavor).get("name"))
            if not flavor_name or len(flavor_name) > NAME_LENGTH:
                continue
            for resource in sequence(mapping(flavor).get("resources")):
                found = mapping(resource)
                name = text(found.get("name"))
                nominal = _gpus(found.get("nominalQuota"))
                if name not in counted or nominal is None:
                    continue
                limits = Limits(
                    nominal, _gpus(found.get("borrowingLimit")), _gpus(found.get("lendingLimit"))
                )
                quotas.setdefault((flavor_name, name), limits)
    cohort = text(spec.get("cohortName")) or text(spec.get("cohort"))
    return Capacity(
        uid=uid(queue),
        name=base["name"],
        version=base["version"],
        created=base["gmt_created"],
        changed=_spec_changed(queue),
        cohort=clip(cohort, NAME_LENGTH) if cohort else None,
        quotas=quotas,
    )


def quota_key(queue_uid: str, flavor: str, resource: str, since: datetime.datetime) -> str:
    """A quota row's key: its queue's uid and a digest of its flavor, resource and start."""
    digest = hashlib.sha256(f"{flavor}|{resource}|{rfc3339(since)}".encode()).hexdigest()[:32]
    return f"{queue_uid}/{digest}"


def quota_row(seen: Capacity, key: tuple[str, str], since: datetime.datetime) -> QuotaRow:
    """The row of one of a version's quotas, in force from ``since``."""
    flavor, resource = key
    limits = seen.quotas[key]
    return {
        "quota_id": quota_key(seen.uid, flavor, resource, since),
        "version": seen.version,
        "queue_id": seen.uid,
        "cluster_queue": seen.name,
        "cohort": seen.cohort,
        "flavor": flavor,
        "resource": resource,
        "nominal": limits.nominal,
        "borrowing_limit": limits.borrowing,
        "lending_limit": limits.lending,
        "valid_from": since,
        "valid_until": None,
        "gmt_created": since,
    }


def limits_of(row: QuotaRow) -> Limits:
    """A stored row's quota, to compare with a version's."""
    return Limits(row["nominal"], row["borrowing_limit"], row["lending_limit"])


def changes(
    seen: Capacity,
    open_rows: Mapping[tuple[str, str], QuotaRow],
    now: datetime.datetime,
    known: bool,
    gone: bool = False,
) -> tuple[list[QuotaRow], dict[tuple[str, str], QuotaRow]]:
    """The rows a version writes, and the rows in force after it: each row in force
    whose quota changed or went (``gone``: the queue's deletion) closed, and a row opened
    for each quota new or changed, at the time the spec was last written (``changed``,
    deterministic whichever replica sees it), else ``now``; from the queue's creation
    when the archive holds nothing of the queue yet (``known`` False: its first
    sighting, the quota taken as in force since the queue was made). A change is never
    dated before the row it closes began."""
    written: list[QuotaRow] = []
    after: dict[tuple[str, str], QuotaRow] = {}
    quotas = {} if gone else seen.quotas
    when = now if gone or seen.changed is None else min(seen.changed, now)
    when = max([when, *(row["valid_from"] for row in open_rows.values())])
    for key, row in open_rows.items():
        if key in quotas and limits_of(row) == quotas[key] and row["cohort"] == seen.cohort:
            after[key] = row
            continue
        written.append({**row, "valid_until": when, "version": seen.version})
    since = when if known or seen.created is None else min(seen.created, when)
    for key in quotas:
        if key not in after:
            after[key] = quota_row(seen, key, since)
            written.append(after[key])
    return written, after
