"""The queue of failures waiting for their read: one line per namespace, served in turn.

Each namespace's failures wait in order of arrival; ``take`` gives the oldest of the
namespace whose turn it is, and that namespace goes to the back of the turn. So one
failure of a quiet namespace is taken after at most one from each other namespace,
however many another has queued. ``put`` refuses past ``per_namespace`` waiting in
one namespace (``PER_NAMESPACE``) or ``total`` waiting in all (``QUEUE_FULL``), and
says which: the caller decides what a refusal becomes. Pure: no I/O, no clock.
"""

import collections
from collections.abc import Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

# Why ``put`` refused (labels of jobarchive_log_tails_total).
PER_NAMESPACE = "per_namespace"
QUEUE_FULL = "queue_full"


class FairQueue(Generic[K, V]):
    """Values by key, waiting in one first-in-first-out line per namespace."""

    def __init__(self, total: int, per_namespace: int) -> None:
        self.total = total
        self.per_namespace = per_namespace
        self._values: dict[K, V] = {}
        # In turn order: the first line is served next, then goes last.
        self._lines: collections.OrderedDict[str, collections.deque[K]] = collections.OrderedDict()

    def __len__(self) -> int:
        return len(self._values)

    def __contains__(self, key: K) -> bool:
        return key in self._values

    def get(self, key: K) -> V | None:
        """The value waiting under ``key``, or None."""
        return self._values.get(key)

    def waiting(self, namespace: str) -> int:
        """How many wait in ``namespace``."""
        line = self._lines.get(namespace)
        return len(line) if line is not None else 0

    def put(self, namespace: str, key: K, value: V) -> str | None:
        """Queue ``value`` at the end of its namespace's line and return None; or return
        why not (``PER_NAMESPACE``, ``QUEUE_FULL``). A key waiting already takes the new
        value and keeps its place."""
        if key in self._values:
            self._values[key] = value
            return None
        line = self._lines.get(namespace)
        if line is not None and len(line) >= self.per_namespace:
            return PER_NAMESPACE
        if len(self._values) >= self.total:
            return QUEUE_FULL
        if line is None:
            # A namespace with nothing waiting joins at the back of the turn.
            line = self._lines[namespace] = collections.deque()
        line.append(key)
        self._values[key] = value
        return None

    def take(self) -> tuple[K, V] | None:
        """The oldest entry of the namespace whose turn it is, removed; None when empty."""
        if not self._lines:
            return None
        namespace, line = next(iter(self._lines.items()))
        key = line.popleft()
        if line:
            self._lines.move_to_end(namespace)
        else:
            del self._lines[namespace]
        return key, self._values.pop(key)
