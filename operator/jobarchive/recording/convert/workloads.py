"""Kueue's Workload -> the current attempt's row and the current wait's (decision 43).

An attempt is one admission: from the quota reservation (``QuotaReserved`` True, whose
``lastTransitionTime`` keys it with the Workload's uid) to its end. Kueue keeps one
condition of each type, the latest, so one version says only how the current attempt
stands: ``Admitted`` and ``PodsReady`` True since its reservation say when it was
admitted and ran; an ``Evicted`` or ``Finished`` condition newer than the reservation
says it ended. Once the reservation is gone (an evicted Workload's quota is released
when its pods stop) the Workload no longer names the attempt it ended: the observation
then carries that ending alone, for the recorder to give to the attempt it remembers.

A wait is one reason Kueue gave for not admitting the Workload (``QuotaReserved`` False,
or ``Admitted`` False once quota is reserved: admission checks), over one stretch of
waiting, keyed by the Workload's uid, the stretch's start and the reason's text with its
digits aside ("4 more needed" and "2 more needed" are one reason). Its first and last
time seen are the times the Workload's versions were written (``last_change``).

Both v1beta1 and v1beta2 Workloads read the same: the fields read here are alike in both.
"""

import dataclasses
import datetime
import hashlib
import re
from collections.abc import Mapping
from typing import Any

from jobarchive.core.cutting import clip, compact
from jobarchive.core.kinds import KindRegistry, is_intermediate
from jobarchive.core.rows import (
    MESSAGE_LENGTH,
    NAME_LENGTH,
    STATUS_LENGTH,
    UID_LENGTH,
    AttemptRow,
    WaitRow,
)
from jobarchive.core.times import rfc3339, timestamp
from jobarchive.core.untrusted import controller_of, integer, mapping, sequence, text
from jobarchive.recording.convert.common import InvalidObject, identity, last_change, uid
from jobarchive.recording.convert.evictions import (
    EVICTED,
    Condition,
    Ending,
    conditions,
    evicted,
    eviction_counts,
    finished,
)
from jobarchive.recording.convert.pods import IntermediateLink

JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"
# An attempt whose Workload was deleted while it held quota (its job deleted, say).
DELETED = "Deleted"
# What Kueue puts before an eviction's message when the next reservation resets it.
PREVIOUSLY = "Previously: "
DIGITS = re.compile(r"\d+")


@dataclasses.dataclass(frozen=True)
class JobLink:
    """The Workload names its job's uid: by its controller, or by Kueue's label."""

    job_uid: str


@dataclasses.dataclass(frozen=True)
class Observation:
    """What one version of a Workload says.

    ``attempt``: the attempt it names by its reservation (its job left empty); ``ending``:
    with no reservation now, what ended the attempt before; ``wait``: the reason it
    waits now; ``wait_over``: with none, when the waiting stopped (None: not known);
    ``evictions``: its eviction counts as JSON; ``previously``: the message of the
    eviction that a later reservation reset.
    """

    uid: str
    namespace: str
    name: str
    version: str
    attempt: AttemptRow | None
    ending: Ending | None
    wait: WaitRow | None
    wait_over: datetime.datetime | None
    evictions: str | None
    previously: str | None


def job_link(workload: Mapping[str, Any], kinds: KindRegistry) -> JobLink | IntermediateLink | None:
    """How a Workload links to a tracked job: its controller (a tracked kind, or an
    intermediate object such as an opted-in batch Job), else, with no controller at
    all, Kueue's job-uid label; None when its controller is anything else."""
    meta = mapping(workload.get("metadata"))
    controller = controller_of(meta.get("ownerReferences"))
    if controller is None:
        labelled = text(mapping(meta.get("labels")).get(JOB_UID_LABEL))
        return JobLink(labelled) if labelled and len(labelled) <= UID_LENGTH else None
    owner_uid = text(controller.get("uid"))
    if not owner_uid or len(owner_uid) > UID_LENGTH:
        return None
    if kinds.find(controller.get("apiVersion"), controller.get("kind")) is not None:
        return JobLink(owner_uid)
    if is_intermediate(controller.get("apiVersion"), controller.get("kind")):
        return IntermediateLink(owner_uid)
    return None


def observe(workload: Mapping[str, Any], now: datetime.datetime, gone: bool = False) -> Observation:
    """What a Workload's version says (``gone``: its deletion, seen at ``now``). Raises
    InvalidObject when it cannot be read: no uid, name or version, a reservation
    without its time."""
    base = identity(workload)
    workload_uid = uid(workload)
    status = mapping(workload.get("status"))
    found = conditions(status)
    evictions = eviction_counts(status)
    reserved = found.get("QuotaReserved")
    deleted = _deleted(workload, now) if gone else None
    attempt = None
    if reserved is not None and reserved.true:
        if reserved.at is None:
            raise InvalidObject("QuotaReserved is True without a lastTransitionTime")
        attempt = _attempt(workload, found, reserved.at, deleted)
    reset = found.get("Evicted")
    previously = None
    if reset is not None and not reset.true and reset.message.startswith(PREVIOUSLY):
        previously = reset.message.removeprefix(PREVIOUSLY)
    wait = _wait(workload, found, workload_uid)
    if wait is not None and deleted is not None:
        wait = waited(wait, deleted, base["version"]) or wait
    return Observation(
        uid=workload_uid,
        namespace=base["namespace"],
        name=base["name"],
        version=base["version"],
        attempt=attempt,
        ending=None if attempt is not None else _released(found, status, deleted),
        wait=wait,
        wait_over=None if wait is not None else _waited_until(found, deleted),
        evictions=compact(evictions) if evictions else None,
        previously=previously,
    )


def attempt_key(workload_uid: str, reserved: datetime.datetime) -> str:
    """An attempt's key: its Workload's uid and when its quota was reserved."""
    return f"{workload_uid}/{rfc3339(reserved)}"


def ended(row: AttemptRow, ending: Ending, version: str) -> AttemptRow | None:
    """The attempt ``row`` ended by ``ending``, written at ``version``; None when it has
    ended already or the ending came before it began."""
    if row["end_reason"] is not None:
        return None
    if ending.at is not None and ending.at < row["quota_reserved_at"]:
        return None
    closed = row.copy()
    closed["version"] = version
    closed["ended_at"] = ending.at
    closed["end_reason"] = clip(ending.reason, STATUS_LENGTH)
    closed["underlying_cause"] = clip(ending.cause, STATUS_LENGTH)
    closed["message"] = clip(ending.message, MESSAGE_LENGTH)
    closed["preemptor_workload_id"] = ending.preemptor_workload
    closed["preemptor_job_id"] = ending.preemptor_job
    return closed


def waited(row: WaitRow, until: datetime.datetime, version: str) -> WaitRow | None:
    """The wait ``row`` seen to hold until ``until``, written at ``version``; None when
    that adds nothing."""
    if until <= row["last_seen"]:
        return None
    extended = row.copy()
    extended["version"] = version
    extended["last_seen"] = until
    return extended


def _attempt(
    workload: Mapping[str, Any],
    found: Mapping[str, Condition],
    reserved: datetime.datetime,
    deleted: datetime.datetime | None,
) -> AttemptRow:
    """The attempt of the reservation at ``reserved``, with its ending if it has one."""
    base = identity(workload)
    status = mapping(workload.get("status"))
    admission = mapping(status.get("admission"))
    evictions = eviction_counts(status)
    ending = _ending(found, status, reserved, deleted)
    row: AttemptRow = {
        "attempt_id": attempt_key(uid(workload), reserved),
        "version": base["version"],
        "job_id": "",
        "workload_id": uid(workload),
        "workload_name": base["name"],
        "namespace": base["namespace"],
        "cluster_queue": clip(text(admission.get("clusterQueue")), NAME_LENGTH),
        "local_queue": _local_queue(workload),
        "flavors": _flavors(admission),
        "quota_reserved_at": reserved,
        "admitted_at": _since(found.get("Admitted"), reserved),
        "running_at": _since(found.get("PodsReady"), reserved),
        "ended_at": None,
        "end_reason": None,
        "underlying_cause": None,
        "message": None,
        "preemptor_workload_id": None,
        "preemptor_job_id": None,
        "evictions": compact(evictions) if evictions else None,
        "requeues": _requeues(status),
        "gmt_created": reserved,
    }
    if ending is None:
        return row
    return ended(row, ending, row["version"]) or row


def _since(condition: Condition | None, reserved: datetime.datetime) -> datetime.datetime | None:
    """When a condition became True, if it is and did so within this attempt."""
    if condition is None or not condition.true or condition.at is None:
        return None
    return condition.at if condition.at >= reserved else None


def _ending(
    found: Mapping[str, Condition],
    status: Mapping[str, Any],
    reserved: datetime.datetime,
    deleted: datetime.datetime | None,
) -> Ending | None:
    """What ended the attempt reserved at ``reserved``: the earliest of an eviction and a
    finish since, else the Workload's deletion; None while it goes on."""
    endings = [
        ending
        for ending in (evicted(found, status), finished(found))
        if ending is not None and ending.at is not None and ending.at >= reserved
    ]
    if endings:
        return min(endings, key=lambda ending: ending.at or reserved)
    return Ending(deleted, DELETED) if deleted is not None else None


def _released(
    found: Mapping[str, Condition], status: Mapping[str, Any], deleted: datetime.datetime | None
) -> Ending | None:
    """With no reservation now: what ended the last one (an eviction, a finish, quota
    released for a reason of Kueue's, the Workload deleted); None if nothing says."""
    for ending in (evicted(found, status), finished(found)):
        if ending is not None:
            return ending
    reserved = found.get("QuotaReserved")
    if reserved is not None and reserved.at is not None:
        return Ending(reserved.at, reserved.reason or EVICTED, message=reserved.message or None)
    return Ending(deleted, DELETED) if deleted is not None else None


def _requeues(status: Mapping[str, Any]) -> int | None:
    count = integer(mapping(status.get("requeueState")).get("count"))
    return count if count is not None and 0 <= count < 2**31 else None


def _local_queue(workload: Mapping[str, Any]) -> str | None:
    return clip(text(mapping(workload.get("spec")).get("queueName")), NAME_LENGTH)


def _flavors(admission: Mapping[str, Any]) -> str:
    """The flavors assigned, per pod set: {pod set: {resource: flavor}}, as JSON."""
    assigned: dict[str, dict[str, str]] = {}
    for raw in sequence(admission.get("podSetAssignments")):
        entry = mapping(raw)
        name = text(entry.get("name"))
        if name:
            flavors = mapping(entry.get("flavors"))
            assigned[name] = {str(k): v for k, v in flavors.items() if isinstance(v, str)}
    return compact(assigned)


def _deleted(workload: Mapping[str, Any], now: datetime.datetime) -> datetime.datetime:
    """When a deleted Workload went: its deletion mark, else when the deletion was seen."""
    return timestamp(mapping(workload.get("metadata")).get("deletionTimestamp")) or now


def _waited_until(
    found: Mapping[str, Condition], deleted: datetime.datetime | None
) -> datetime.datetime | None:
    """When waiting stopped, for a Workload that waits no more: its admission (or its
    reservation), its finish, its deletion; None when it never waited yet."""
    for kind in ("Admitted", "QuotaReserved", "Finished"):
        condition = found.get(kind)
        if condition is not None and condition.true and condition.at is not None:
            return condition.at
    return deleted


def _wait(
    workload: Mapping[str, Any], found: Mapping[str, Condition], workload_uid: str
) -> WaitRow | None:
    """The reason the Workload waits now, as Kueue gives it; None when it does not wait."""
    finished, reserved = found.get("Finished"), found.get("QuotaReserved")
    if (finished is not None and finished.true) or reserved is None:
        return None
    why = reserved
    if reserved.true:
        admitted, evicted = found.get("Admitted"), found.get("Evicted")
        if admitted is None or admitted.true or (evicted is not None and evicted.true):
            return None
        why = admitted
    seen = last_change(workload) or why.at
    if seen is None:
        return None
    shape = DIGITS.sub("#", f"{why.reason}: {why.message}")
    began = rfc3339(why.at) or ""
    digest = hashlib.sha256(f"{began}|{shape}".encode()).hexdigest()[:32]
    return {
        "wait_id": f"{workload_uid}/{digest}",
        "version": identity(workload)["version"],
        "job_id": "",
        "workload_id": workload_uid,
        "namespace": identity(workload)["namespace"],
        "local_queue": _local_queue(workload),
        "reason": clip(why.reason, STATUS_LENGTH),
        "message": clip(why.message, MESSAGE_LENGTH),
        "first_seen": seen,
        "last_seen": seen,
        "gmt_created": seen,
    }
