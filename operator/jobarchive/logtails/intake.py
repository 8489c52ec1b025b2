"""What the recorder hands the capture, sorted: a failure is queued for its read, or
set aside with a row that says why it is not read. Synchronous, no I/O: the recorder
never waits for it.

``noted`` takes a pod body that may belong to a tracked job and keeps its failed
containers (``triggers``); ``recorded`` says its row was stored under a job, and only
then are they queued (``queue.FairQueue``), at most ``JOBARCHIVE_LOG_TAILS_PER_POD`` of
one pod in all and ``JOBARCHIVE_LOG_TAILS_PER_NAMESPACE`` of one namespace waiting at
once. The failures of one pod set aside for one reason in one go become one row, "not
captured", on the first of them, its note saying why and how many more of the pod's
failures it stands for (see ARCHITECTURE.md, decision 19). A key queued, read or set
aside is remembered (``REMEMBERED`` of them; past that the database says), so nothing
is read twice or set aside twice.
"""

import asyncio
import collections
import dataclasses
import logging
from collections.abc import Mapping
from typing import Any

from jobarchive.config import Settings
from jobarchive.core.bounded import Lru
from jobarchive.core.rows import LogTailRow
from jobarchive.infra import metrics
from jobarchive.logtails import inserts as tails
from jobarchive.logtails.queue import PER_NAMESPACE, FairQueue
from jobarchive.logtails.triggers import Failure, failures
from jobarchive.storage.models import CONTAINER_NAME_LENGTH

logger = logging.getLogger(__name__)
QUEUE_SIZE = 10_000
# Pods whose failures wait for their row (their job not known yet), and pods whose
# reads are counted against the per-pod cap.
NOTED_PODS = 10_000
REMEMBERED = 100_000
# Rows of failures set aside, not yet handed to the writer.
NOTES_HELD = 1_000
UID_LENGTH = 64
PER_POD = "per_pod"

Key = tuple[str, str, int]


@dataclasses.dataclass
class Pending:
    """A failure queued for its read, the job its pod was recorded under."""

    failure: Failure
    job_uid: str


def count(outcome: str, reason: str, amount: int = 1) -> None:
    """Count tails by outcome (captured, failed, skipped) and reason."""
    metrics.LOG_TAILS.labels(outcome, reason).inc(amount)


def invalid(failure: Failure) -> str | None:
    """Why a failure cannot have a row (an identity wider than its column), if it cannot."""
    if len(failure.container) > CONTAINER_NAME_LENGTH:
        return f"the container name is over {CONTAINER_NAME_LENGTH} characters"
    if len(failure.pod_uid) > UID_LENGTH:
        return f"the pod uid is over {UID_LENGTH} characters"
    return None


def aside(why: str, more: int) -> str:
    """The note of a row standing for itself and ``more`` of its pod's failures."""
    if not more:
        return f"{why}; not read: this one"
    return f"{why}; not read: this one and {more:,} more of the pod's failed containers"


class Intake:
    """Failures handed over by the recorder: queued fairly, taken by the dispatcher, or
    set aside as rows (``notes``) for the writer."""

    def __init__(self, settings: Settings) -> None:
        self.succeeded = settings.log_succeeded
        self.per_pod = settings.log_tails_per_pod
        self.queue: FairQueue[Key, Pending] = FairQueue(
            QUEUE_SIZE, settings.log_tails_per_namespace
        )
        # Taken from the queue by the dispatcher, their reads not started yet.
        self.taken: dict[Key, Pending] = {}
        self.notes: collections.deque[LogTailRow] = collections.deque()
        # Set when something is queued or set aside.
        self.wake = asyncio.Event()
        self._noted: Lru[str, dict[Key, Failure]] = Lru(NOTED_PODS)
        self._queued: Lru[str, int] = Lru(NOTED_PODS)
        self._remembered: Lru[Key, bool] = Lru(REMEMBERED)

    @property
    def depth(self) -> int:
        """Failures queued whose log is not being read yet."""
        return len(self.queue) + len(self.taken)

    def _pending(self, key: Key) -> Pending | None:
        return self.queue.get(key) or self.taken.get(key)

    def noted(self, pod: Mapping[str, Any]) -> None:
        """A pod body that may be a tracked job's: keep its failed containers until its
        row is stored (``recorded``). A failure still queued takes the newer facts (a
        restart moves it to ``lastState``: read with ``previous``)."""
        found = failures(pod, self.succeeded)
        if not found:
            return
        new: dict[Key, Failure] = {}
        for failure in found:
            pending = self._pending(failure.key)
            if pending is not None:
                pending.failure = failure
            elif not self._remembered.get(failure.key) and failure.key not in new:
                new[failure.key] = failure
        if new:
            uid = found[0].pod_uid
            self._noted.put(uid, {**(self._noted.get(uid) or {}), **new})

    def recorded(self, pod_uid: str, job_uid: str) -> None:
        """A pod's row was stored under ``job_uid``: queue what it was noted with, or set
        it aside, each reason's failures in one row."""
        aside_by: dict[str, list[Failure]] = {}
        for key, failure in (self._noted.pop(pod_uid) or {}).items():
            if self._pending(key) is not None or self._remembered.get(key):
                continue
            self._remembered.put(key, True)
            why = invalid(failure)
            if why is not None:
                count("skipped", "invalid")
                logger.warning("Not reading the log of %s: %s", failure.describe(), why)
                continue
            reason = self._queue(failure, job_uid)
            if reason is not None:
                aside_by.setdefault(reason, []).append(failure)
        for reason, set_aside in aside_by.items():
            self._set_aside(reason, set_aside, job_uid)

    def _queue(self, failure: Failure, job_uid: str) -> str | None:
        """Queue a failure for its read; or why it is not (a cap, the queue full)."""
        queued = self._queued.get(failure.pod_uid) or 0
        if queued >= self.per_pod:
            return PER_POD
        refused = self.queue.put(failure.namespace, failure.key, Pending(failure, job_uid))
        if refused is None:
            self._queued.put(failure.pod_uid, queued + 1)
            self.wake.set()
        return refused

    def _why(self, reason: str, namespace: str) -> str:
        if reason == PER_POD:
            return (
                f"the pod's first {self.per_pod:,} failed containers are read "
                "(JOBARCHIVE_LOG_TAILS_PER_POD)"
            )
        if reason == PER_NAMESPACE:
            return (
                f"{self.queue.per_namespace:,} failed containers of namespace {namespace} "
                "wait to be read already (JOBARCHIVE_LOG_TAILS_PER_NAMESPACE)"
            )
        # queue.QUEUE_FULL
        return f"{self.queue.total:,} failed containers wait to be read already"

    def _set_aside(self, reason: str, group: list[Failure], job_uid: str) -> None:
        """One row for a pod's failures not read for one reason, on the first of them."""
        first = group[0]
        note = aside(self._why(reason, first.namespace), len(group) - 1)
        count("skipped", reason, len(group))
        if len(self.notes) >= NOTES_HELD:
            logger.warning(
                "Not reading the log of %s: %s; no row says so: %d such rows wait to be "
                "written already",
                first.describe(),
                note,
                NOTES_HELD,
            )
            return
        logger.warning("Not reading the log of %s: %s", first.describe(), note)
        self.notes.append(tails.row(first, job_uid, None, note))
        self.wake.set()

    def take(self, most: int) -> list[Key]:
        """Up to ``most`` queued failures, the namespaces in turn, moved to ``taken``."""
        keys: list[Key] = []
        while len(keys) < most and (entry := self.queue.take()) is not None:
            key, pending = entry
            self.taken[key] = pending
            keys.append(key)
        return keys

    def release(self, key: Key) -> Pending:
        """A taken failure whose read starts now, or which has a row already."""
        return self.taken.pop(key)
