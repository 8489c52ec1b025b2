"""Which tracked job a pod belongs to, and the objects waiting for that answer.

Kopf watches jobs, pods and Events in independent streams, so their order is not
the order of their creation: after a restart an Event may be listed before its
pod, and a labelled pod (an MPIJob launcher) before its job. Instead of dropping
what cannot be attributed yet, it waits here, keyed by what will resolve it, and
is handed back when that arrives. Nothing here does I/O; the recorder stores what
is released.

Memory is bounded: answers are kept in LRU maps, and waiting objects expire after
``ttl`` seconds (an Event about a pod that never shows up, for example a pod that
was deleted while the operator was down). Kubernetes keeps Events for about an
hour and Kopf re-lists everything on restart, so losing this state with the
process loses nothing the cluster still has.
"""

import dataclasses
import time
from collections.abc import Callable
from typing import Any, TypeVar

from jobarchive.bounded import Lru

Body = dict[str, Any]
UNRELATED = ""
K = TypeVar("K")


@dataclasses.dataclass
class Waiting:
    """An object waiting for attribution: its newest watch event type and body."""

    event_type: str | None
    body: Body
    since: float


@dataclasses.dataclass
class Expired:
    """How many waiting objects were given up on in one sweep."""

    pods: int = 0
    events: int = 0
    intermediates: int = 0


class Attribution:
    """In-memory attribution state; see the module docstring."""

    def __init__(
        self,
        ttl: float = 900.0,
        capacity: int = 200_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ttl = ttl
        self.capacity = capacity
        self._clock = clock
        self._jobs_by_name: Lru[str, str] = Lru(capacity)
        self._pods: Lru[str, str] = Lru(capacity)
        self._owners: Lru[str, str] = Lru(capacity)
        self._pods_waiting: dict[tuple[str, str], dict[str, Waiting]] = {}
        self._pods_waiting_owner: dict[str, dict[str, Waiting]] = {}
        self._intermediates_waiting: dict[str, dict[str, Waiting]] = {}
        self._events_waiting: dict[str, dict[str, Waiting]] = {}
        self._last_sweep = clock()
        self._loaded = False

    def load(self, jobs: list[tuple[str, str, str]], pods: list[tuple[str, str]]) -> None:
        """Start from what the database knows: live jobs by name, recent pods' jobs.

        After this, a pod unknown here is unknown to the database too, as long as
        nothing was forgotten; ``knows_all`` says so and spares a query per Event.
        """
        for namespace, name, uid in jobs:
            self._jobs_by_name.put(f"{namespace}/{name}", uid)
        for pod_uid, job_uid in pods:
            self._pods.put(pod_uid, job_uid)
        self._loaded = True

    @property
    def knows_all(self) -> bool:
        """Whether a pod or job missing here is certainly missing from the database."""
        return self._loaded and not self._pods.forgot and not self._jobs_by_name.forgot

    def job_seen(self, namespace: str, name: str, uid: str, gone: bool) -> list[Waiting]:
        """Record a job; return the pods that were waiting for a job of that name."""
        key = f"{namespace}/{name}"
        if gone:
            if self._jobs_by_name.get(key) == uid:
                self._jobs_by_name.pop(key)
            return []
        self._jobs_by_name.put(key, uid)
        return list(self._pods_waiting.pop((namespace, name), {}).values())

    def job_uid(self, namespace: str, name: str) -> str | None:
        """The uid of the live job of that name, if known here."""
        return self._jobs_by_name.get(f"{namespace}/{name}")

    def pod_tracked(self, pod_uid: str, job_uid: str) -> list[Waiting]:
        """Record a pod of a tracked job; return the Events that were waiting for it."""
        self._pods.put(pod_uid, job_uid)
        return list(self._events_waiting.pop(pod_uid, {}).values())

    def pod_unrelated(self, pod_uid: str) -> int:
        """Record a pod that belongs to no tracked job; drop (and count) Events waiting for it."""
        self._pods.put(pod_uid, UNRELATED)
        return len(self._events_waiting.pop(pod_uid, {}))

    def pod_job(self, pod_uid: str) -> str | None:
        """The pod's job uid, ``UNRELATED`` for a pod of no tracked job, None if unknown."""
        return self._pods.get(pod_uid)

    def owner_job(self, owner_uid: str) -> str | None:
        """The job an intermediate object belongs to, ``UNRELATED``, or None if unseen."""
        return self._owners.get(owner_uid)

    def intermediate_seen(
        self, uid: str, job_uid: str
    ) -> tuple[list[Waiting], list[Waiting], list[Waiting]]:
        """Record which job (or ``UNRELATED``) an intermediate object belongs to; return
        the pods, intermediate objects and Events that were waiting for it.

        The answer is kept when the object is deleted: its pods' last updates (and
        Events) may come after it is gone.
        """
        self._owners.put(uid, job_uid)
        return (
            list(self._pods_waiting_owner.pop(uid, {}).values()),
            list(self._intermediates_waiting.pop(uid, {}).values()),
            list(self._events_waiting.pop(uid, {}).values()),
        )

    def wait_for_owner(
        self,
        owner_uid: str,
        uid: str,
        event_type: str | None,
        body: Body,
        intermediate: bool = False,
    ) -> None:
        """Keep a pod (or an intermediate object) until the object that owns it is seen."""
        waiting_map = self._intermediates_waiting if intermediate else self._pods_waiting_owner
        waiting = waiting_map.setdefault(owner_uid, {})
        waiting[uid] = self._newest(waiting.get(uid), event_type, body)

    def wait_for_job(
        self, namespace: str, job_name: str, pod_uid: str, event_type: str | None, body: Body
    ) -> None:
        """Keep a labelled pod until a job of that name is seen."""
        waiting = self._pods_waiting.setdefault((namespace, job_name), {})
        waiting[pod_uid] = self._newest(waiting.get(pod_uid), event_type, body)

    def wait_for_pod(
        self, pod_uid: str, event_uid: str, event_type: str | None, body: Body
    ) -> None:
        """Keep an Event until its pod (or intermediate object) is attributed."""
        waiting = self._events_waiting.setdefault(pod_uid, {})
        waiting[event_uid] = self._newest(waiting.get(event_uid), event_type, body)

    def waiting_counts(self) -> tuple[int, int]:
        """How many pods and Events wait."""
        pods = sum(len(w) for w in self._pods_waiting.values())
        pods += sum(len(w) for w in self._pods_waiting_owner.values())
        events = sum(len(w) for w in self._events_waiting.values())
        return pods, events

    def sweep(self, every: float = 30.0) -> Expired | None:
        """Drop what waited longer than the ttl; at most once per ``every`` seconds."""
        now = self._clock()
        if now - self._last_sweep < every:
            return None
        self._last_sweep = now
        pods = _expire(self._pods_waiting, now, self.ttl)
        pods += _expire(self._pods_waiting_owner, now, self.ttl)
        events = _expire(self._events_waiting, now, self.ttl)
        intermediates = _expire(self._intermediates_waiting, now, self.ttl)
        return Expired(pods=pods, events=events, intermediates=intermediates)

    def _newest(self, old: Waiting | None, event_type: str | None, body: Body) -> Waiting:
        # A deletion seen while waiting must not be undone by nothing: keep DELETED sticky.
        if old is not None and old.event_type == "DELETED":
            event_type = "DELETED"
        since = old.since if old is not None else self._clock()
        return Waiting(event_type, body, since)


def _expire(waiting_map: dict[K, dict[str, Waiting]], now: float, ttl: float) -> int:
    """Drop what has waited longer than ``ttl`` seconds at ``now``; returns how many."""
    count = 0
    for key in list(waiting_map):
        group = waiting_map[key]
        for uid in [u for u, w in group.items() if now - w.since > ttl]:
            del group[uid]
            count += 1
        if not group:
            del waiting_map[key]
    return count
