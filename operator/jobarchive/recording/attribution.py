"""Which tracked job an object belongs to, and the objects waiting for that answer.

Kopf watches jobs, pods and Events in independent streams, so their order is not
the order of their creation: after a restart an Event may be listed before its
pod, and a labelled pod (an MPIJob launcher) before its job. Instead of dropping
what cannot be attributed yet, it waits here, keyed by what will resolve it (its
subject: the uid of a job, pod or intermediate object, or a job's namespace and
name), and is handed back when that arrives. Nothing here does I/O; the recorder
stores what is released.

A job's pods, intermediate objects and Events live in its namespace: Kubernetes
ignores an ownerReference across namespaces, and anyone who may create a pod or an
Event in a namespace of their own may name another namespace's job in it. So the
namespace of every job seen is kept, and ``judge`` attributes to a job only what is
in that namespace.

Memory is bounded: answers are kept in LRU maps. What waits is kept as the few
fields that store and attribute it (its converted row, its uid, namespace and
name), never as the object, in one map bounded by count and by bytes
(``JOBARCHIVE_WAITING_MAX``, ``JOBARCHIVE_WAITING_BYTES``) that drops the oldest
first; and it expires after ``ttl`` seconds (an Event about a pod that never shows
up, for example a pod that was deleted while the operator was down). Kubernetes
keeps Events for about an hour and Kopf re-lists everything on restart, so losing
this state with the process loses nothing the cluster still has.
"""

import dataclasses
import enum
import sys
import time
from collections.abc import Callable, Mapping
from typing import Final

from jobarchive.config import DEFAULTS
from jobarchive.core.bounded import Lru, Weighed
from jobarchive.core.rows import AttemptRow, EventRow, PodRow, WaitRow


class Unrelated(enum.Enum):
    """What an object that belongs to no tracked job is attributed to."""

    UNRELATED = "no tracked job"


UNRELATED: Final = Unrelated.UNRELATED
# What an object is attributed to: a tracked job's uid, or UNRELATED.
Attributed = str | Unrelated
POD = "Pod"
EVENT = "Event"
# What an object waits for: the uid of a job, pod or intermediate object, or a job's
# (namespace, name) for a pod linked by label.
Subject = str | tuple[str, str]
# Seconds a lookup's answer that a job is not stored is believed: the pods and Events of
# a job listed before it ask once, not each (a shard's catch-up, whose lists of jobs,
# pods and Events of every namespace arrive in any order, asked once per pod). Short,
# because a peer that held the lease meanwhile may store the job.
ABSENT_FOR = 10.0
# What keeping one waiting object costs beyond its row: the Waiting itself and its
# entries in the waiting map and its index; rounded up, so that the bytes counted are
# never fewer than tracemalloc finds kept (a unit test holds them to it).
ENTRY_OVERHEAD = 600


@dataclasses.dataclass(slots=True, eq=False)
class Waiting:
    """An object waiting for attribution, as the few fields that store it: its kind
    (Pod, Event, Workload, or an intermediate kind), identity, namespace, converted rows
    (the job filled in on release) and, for a TrainJob's JobSet, the roles it states."""

    kind: str
    uid: str
    namespace: str
    name: str
    pod: PodRow | None = None
    event: EventRow | None = None
    # A Kueue Workload's attempts and waits (decision 43).
    attempts: list[AttemptRow] | None = None
    waits: list[WaitRow] | None = None
    # The roles a TrainJob's JobSet states, as the job row's resources JSON.
    roles: str | None = None
    # When the object last changed (epoch seconds), for the lag metric.
    changed: float | None = None
    # A deletion seen while waiting: sticky, so that no later version undoes it.
    gone: bool = False
    since: float = 0.0

    def size(self) -> int:
        """Bytes this object costs while it waits, as near as is cheap to count."""
        rows: list[Mapping[str, object]] = [*(self.attempts or ()), *(self.waits or ())]
        rows += [row for row in (self.pod, self.event) if row is not None]
        total = ENTRY_OVERHEAD + sys.getsizeof(self.namespace) + sys.getsizeof(self.uid)
        for row in rows:
            total += sys.getsizeof(row) + sum(map(sys.getsizeof, row.values()))
        if self.roles is not None:
            total += sys.getsizeof(self.roles)
        return total

    def absorb(self, older: "Waiting") -> None:
        """Keep the rows of an older version of this object that this one does not
        rewrite: a Workload's versions each write only what they changed."""
        if older.attempts:
            keys = {row["attempt_id"] for row in self.attempts or ()}
            kept = [row for row in older.attempts if row["attempt_id"] not in keys]
            self.attempts = kept + (self.attempts or [])
        if older.waits:
            keys = {row["wait_id"] for row in self.waits or ()}
            waited = [row for row in older.waits if row["wait_id"] not in keys]
            self.waits = waited + (self.waits or [])


class WaitingSet:
    """What waits, by subject: bounded by count and bytes, the oldest dropped first."""

    def __init__(self, max_objects: int, max_bytes: int) -> None:
        self._entries: Weighed[tuple[Subject, str], Waiting] = Weighed(max_objects, max_bytes)
        # Subject -> uids waiting for it, in the order they began to wait.
        self._subjects: dict[Subject, dict[str, None]] = {}
        self.counts = {POD: 0, EVENT: 0}

    @property
    def bytes(self) -> int:
        """How many bytes what waits is counted at."""
        return self._entries.weight

    def bound(self, max_objects: int, max_bytes: int) -> list[Waiting]:
        """Set the bounds; returns what was dropped to fit them, oldest first."""
        return self._forget(self._entries.bound(max_objects, max_bytes))

    def add(self, subject: Subject, item: Waiting, now: float) -> list[Waiting]:
        """Keep ``item`` until ``subject`` is released, replacing an older version of it
        (whose start and deletion it keeps); returns what was dropped, oldest first."""
        key = (subject, item.uid)
        old = self._entries.get(key)
        item.since = now if old is None else old.since
        if old is None:
            self._subjects.setdefault(subject, {})[item.uid] = None
        else:
            item.gone = item.gone or old.gone
            item.absorb(old)
            self._count(old, -1)
        self._count(item, 1)
        return self._forget(self._entries.put(key, item, item.size()))

    def release(self, subject: Subject) -> list[Waiting]:
        """Remove and return what waited for ``subject``, in the order it began to wait."""
        released = []
        for uid in self._subjects.pop(subject, {}):
            item = self._entries.pop((subject, uid))
            if item is not None:
                self._count(item, -1)
                released.append(item)
        return released

    def expire(self, before: float) -> list[Waiting]:
        """Remove and return what began to wait before ``before``."""
        expired = []
        # Oldest first: an object keeps its place (and its start) while it waits.
        while (oldest := self._entries.oldest()) is not None and oldest[1].since < before:
            self._entries.pop(oldest[0])
            expired.append(oldest)
        return self._forget(expired)

    def _forget(self, dropped: list[tuple[tuple[Subject, str], Waiting]]) -> list[Waiting]:
        """Unindex and uncount entries the map no longer holds."""
        for (subject, uid), item in dropped:
            waiters = self._subjects.get(subject)
            if waiters is not None:
                waiters.pop(uid, None)
                if not waiters:
                    del self._subjects[subject]
            self._count(item, -1)
        return [item for _, item in dropped]

    def _count(self, item: Waiting, delta: int) -> None:
        if item.kind in self.counts:
            self.counts[item.kind] += delta


class Attribution:
    """In-memory attribution state; see the module docstring."""

    def __init__(
        self,
        ttl: float = 900.0,
        capacity: int = 200_000,
        waiting_max: int = DEFAULTS.waiting_max,
        waiting_bytes: int = DEFAULTS.waiting_bytes,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ttl = ttl
        self.capacity = capacity
        self._clock = clock
        self._jobs_by_name: Lru[str, str] = Lru(capacity)
        self._job_namespaces: Lru[str, str] = Lru(capacity)
        self._pods: Lru[str, Attributed] = Lru(capacity)
        self._owners: Lru[str, Attributed] = Lru(capacity)
        self._absent_since: Lru[str, float] = Lru(capacity)
        self._waiting = WaitingSet(waiting_max, waiting_bytes)
        self._last_sweep = clock()
        self._loaded = False

    def load(self, jobs: list[tuple[str, str, str]], pods: list[tuple[str, str]]) -> None:
        """Start from what the database knows: live jobs by name, recent pods' jobs.

        After this, a pod unknown here is unknown to the database too, as long as
        nothing was forgotten; ``knows_all`` says so and spares a query per Event.
        """
        self.jobs_live(jobs)
        for pod_uid, job_uid in pods:
            self._pods.put(pod_uid, job_uid)
        self._loaded = True

    def jobs_live(self, jobs: list[tuple[str, str, str]]) -> None:
        """Learn jobs (namespace, name, uid) that are live, from the database or a list."""
        for namespace, name, uid in jobs:
            self._jobs_by_name.put(f"{namespace}/{name}", uid)
            self._job_namespaces.put(uid, namespace)

    @property
    def knows_all(self) -> bool:
        """Whether a pod or job missing here is certainly missing from the database."""
        return self._loaded and not self._pods.forgot and not self._jobs_by_name.forgot

    def bound_waiting(self, max_objects: int, max_bytes: int) -> list[Waiting]:
        """Set the bounds of what waits; returns what was dropped to fit them."""
        return self._waiting.bound(max_objects, max_bytes)

    def job_seen(self, namespace: str, name: str, uid: str, gone: bool) -> list[Waiting]:
        """Record a job; return what waited for it: by its uid always (its pods' and
        Events' last versions may come after it is gone), by its name unless gone."""
        self._job_namespaces.put(uid, namespace)
        self._absent_since.pop(uid)
        released = self._waiting.release(uid)
        key = f"{namespace}/{name}"
        if gone:
            if self._jobs_by_name.get(key) == uid:
                self._jobs_by_name.pop(key)
            return released
        self._jobs_by_name.put(key, uid)
        return released + self._waiting.release((namespace, name))

    def job_looked_up(self, uid: str, namespace: str | None) -> None:
        """Record what the database said of job ``uid``: its namespace, or None for no
        such job (unless seen meanwhile), believed for ``ABSENT_FOR`` seconds."""
        if namespace is not None:
            self._job_namespaces.put(uid, namespace)
            self._absent_since.pop(uid)
        elif self._job_namespaces.get(uid) is None:
            self._absent_since.put(uid, self._clock())

    def recently_absent(self, uid: str) -> bool:
        """Whether the database said lately that it has no job ``uid``, not seen since."""
        since = self._absent_since.get(uid)
        return since is not None and self._clock() - since < ABSENT_FOR

    def job_namespace(self, uid: str) -> str | None:
        """The namespace of the job ``uid``, if known here."""
        return self._job_namespaces.get(uid)

    def job_uid(self, namespace: str, name: str) -> str | None:
        """The uid of the live job of that name, if known here."""
        return self._jobs_by_name.get(f"{namespace}/{name}")

    def judge(
        self, job_uid: Attributed, items: list[Waiting]
    ) -> tuple[list[Waiting], list[Waiting]] | None:
        """Split objects that name the job ``job_uid`` into those in its namespace and
        the others (all of them for ``UNRELATED``); None while its namespace is unknown."""
        if job_uid is UNRELATED:
            return [], list(items)
        namespace = self._job_namespaces.get(job_uid)
        if namespace is None:
            return None
        mine = [item for item in items if item.namespace == namespace]
        return mine, [item for item in items if item.namespace != namespace]

    def pod_tracked(self, pod_uid: str, job_uid: str) -> list[Waiting]:
        """Record a pod of a tracked job; return the Events that were waiting for it."""
        self._pods.put(pod_uid, job_uid)
        return self._waiting.release(pod_uid)

    def pod_unrelated(self, pod_uid: str) -> list[Waiting]:
        """Record a pod that belongs to no tracked job; return the Events that were
        waiting for it, unrelated too."""
        self._pods.put(pod_uid, UNRELATED)
        return self._waiting.release(pod_uid)

    def pod_job(self, pod_uid: str) -> Attributed | None:
        """The pod's job uid, ``UNRELATED`` for a pod of no tracked job, None if unknown."""
        return self._pods.get(pod_uid)

    def owner_job(self, owner_uid: str) -> Attributed | None:
        """The job an intermediate object belongs to, ``UNRELATED``, or None if unseen."""
        return self._owners.get(owner_uid)

    def intermediate_seen(self, uid: str, job_uid: Attributed) -> list[Waiting]:
        """Record which job (or ``UNRELATED``) an intermediate object belongs to; return
        the pods, intermediate objects and Events that were waiting for it.

        The answer is kept when the object is deleted: its pods' last updates (and
        Events) may come after it is gone.
        """
        self._owners.put(uid, job_uid)
        return self._waiting.release(uid)

    def wait(self, subject: Subject, item: Waiting) -> list[Waiting]:
        """Keep an object until ``subject`` is attributed; returns what was dropped to
        stay within the bounds, oldest first (possibly this very object)."""
        return self._waiting.add(subject, item, self._clock())

    def waiting_counts(self) -> tuple[int, int]:
        """How many pods and Events wait."""
        return self._waiting.counts[POD], self._waiting.counts[EVENT]

    def waiting_bytes(self) -> int:
        """How many bytes what waits is counted at."""
        return self._waiting.bytes

    def sweep(self, every: float = 30.0) -> list[Waiting] | None:
        """Drop what waited longer than the ttl, and return it; at most once per
        ``every`` seconds (None when it was not time)."""
        now = self._clock()
        if now - self._last_sweep < every:
            return None
        self._last_sweep = now
        return self._waiting.expire(now - self.ttl)
