"""How a Kueue attempt ended, as a Workload's conditions and eviction counts say
(decision 43): an eviction (its reason verbatim, its underlying cause, the preemptor's
uids where Kueue names them), a finish, or an eviction the operator missed.
"""

import dataclasses
import datetime
import json
import re
from collections.abc import Mapping
from typing import Any

from jobarchive.core.cutting import clip
from jobarchive.core.rows import STATUS_LENGTH, UID_LENGTH, AttemptRow
from jobarchive.core.times import timestamp
from jobarchive.core.untrusted import integer, mapping, sequence, text

FINISHED = "Finished"
# An attempt that a later reservation shows ended, by an eviction the operator missed
# and whose reason the eviction counts do not tell.
EVICTED = "Evicted"
DEACTIVATED_DUE_TO = "DeactivatedDueTo"
# "Preempted to accommodate a workload (UID: <uid>, JobUID: <uid>) due to ..."; older
# Kueues say less, and either uid may be UNKNOWN.
PREEMPTOR = re.compile(r"\(UID: (?P<workload>[^,()\s]+)(?:, JobUID: (?P<job>[^,()\s]+))?\)")
UNKNOWN = "UNKNOWN"


@dataclasses.dataclass(frozen=True)
class Condition:
    """A condition of the Workload as read: status True or not, reason, message, time."""

    true: bool
    reason: str
    message: str
    at: datetime.datetime | None


@dataclasses.dataclass(frozen=True)
class Ending:
    """How an attempt ended: when (None when it cannot be told), why, and more."""

    at: datetime.datetime | None
    reason: str
    cause: str | None = None
    message: str | None = None
    preemptor_workload: str | None = None
    preemptor_job: str | None = None


def conditions(status: Mapping[str, Any]) -> dict[str, Condition]:
    """The Workload's conditions by type; an entry that is no condition is passed over."""
    found: dict[str, Condition] = {}
    for raw in sequence(status.get("conditions")):
        entry = mapping(raw)
        kind = text(entry.get("type"))
        if not kind:
            continue
        found[kind] = Condition(
            true=entry.get("status") == "True",
            reason=text(entry.get("reason")) or "",
            message=text(entry.get("message")) or "",
            at=timestamp(entry.get("lastTransitionTime")),
        )
    return found


def missed(previous: AttemptRow, evictions: str | None, previously: str | None) -> Ending:
    """How ``previous`` ended, for an attempt a later reservation shows over without an
    eviction seen: the reason whose count grew since it was written, when one did alone
    (else ``Evicted``); the eviction's message as the reset condition keeps it
    (``previously``). ``evictions``: the counts now, as JSON."""
    before = _counts(previous["evictions"])
    grew = [key for key, count in _counts(evictions).items() if count > before.get(key, 0)]
    reason, cause = grew[0] if len(grew) == 1 else (EVICTED, None)
    return Ending(at=None, reason=reason, cause=cause or None, message=previously)


def evicted(found: Mapping[str, Condition], status: Mapping[str, Any]) -> Ending | None:
    """The eviction the Workload is under, with its cause and preemptor; None if none."""
    condition = found.get("Evicted")
    if condition is None or not condition.true:
        return None
    message = condition.message
    preempted = found.get("Preempted")
    if not message and preempted is not None and preempted.true:
        message = preempted.message
    matched = PREEMPTOR.search(message)
    workload, job = (matched["workload"], matched["job"]) if matched else (None, None)
    return Ending(
        at=condition.at,
        reason=condition.reason or EVICTED,
        cause=_cause(condition.reason, eviction_counts(status)),
        message=message or None,
        preemptor_workload=_known(workload),
        preemptor_job=_known(job),
    )


def finished(found: Mapping[str, Condition]) -> Ending | None:
    """The Workload's finish (its reason, ``Succeeded`` or ``Failed``, as the cause)."""
    condition = found.get("Finished")
    if condition is None or not condition.true:
        return None
    return Ending(condition.at, FINISHED, condition.reason or None, condition.message or None)


def _known(value: str | None) -> str | None:
    """A uid Kueue named, unless it said it did not know it (or it is no uid's size)."""
    if value is None or value == UNKNOWN or len(value) > UID_LENGTH:
        return None
    return value


def _cause(reason: str, evictions: Mapping[str, Mapping[str, int]]) -> str | None:
    """An eviction's underlying cause: a deactivation's is in its reason; another's is the
    one cause its reason's eviction counts name, when they name one alone."""
    if reason.startswith(DEACTIVATED_DUE_TO) and reason != DEACTIVATED_DUE_TO:
        return reason.removeprefix(DEACTIVATED_DUE_TO)
    causes = list(evictions.get(reason, {}))
    return (causes[0] or None) if len(causes) == 1 else None


def eviction_counts(status: Mapping[str, Any]) -> dict[str, dict[str, int]]:
    """``schedulingStats.evictions`` as {reason: {underlying cause: count}}."""
    counts: dict[str, dict[str, int]] = {}
    stats = mapping(status.get("schedulingStats"))
    for raw in sequence(stats.get("evictions")):
        entry = mapping(raw)
        reason, count = text(entry.get("reason")), integer(entry.get("count"))
        if reason and count is not None:
            cause = text(entry.get("underlyingCause")) or ""
            counts.setdefault(clip(reason, STATUS_LENGTH), {})[clip(cause, STATUS_LENGTH)] = count
    return counts


def _counts(evictions: str | None) -> dict[tuple[str, str], int]:
    """Eviction counts as an attempt's row keeps them, by (reason, cause)."""
    try:
        parsed = json.loads(evictions) if evictions else {}
    except ValueError:
        return {}
    return {
        (reason, cause): count
        for reason, causes in mapping(parsed).items()
        for cause, count in mapping(causes).items()
        if integer(count) is not None
    }
