"""Bounds on what one statement carries and on what memory keeps.

``chunks`` cuts a list into pieces of at most a given size: every bulk statement
(upserts, deletes by uid, reconciliation's marks) goes out in such pieces so that
none exceeds a database's limits or holds locks on too many rows. ``Lru`` is the
one bounded map of the process: it forgets the entry written longest ago, and
remembers that it forgot, because a caller that forgot something can no longer
trust a miss to mean "never seen".
"""

import collections
from collections.abc import Iterator, Sequence
from typing import Generic, TypeVar

T = TypeVar("T")
K = TypeVar("K")
V = TypeVar("V")


def chunks(items: Sequence[T], size: int) -> Iterator[list[T]]:
    """Consecutive pieces of ``items``, each of at most ``size`` items."""
    for start in range(0, len(items), size):
        yield list(items[start : start + size])


class Lru(Generic[K, V]):
    """A map of at most ``capacity`` entries that forgets the least recently written.

    Reading does not count as use: what matters is how recently an answer was
    learnt, not how often it was asked for.
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.forgot = False
        self._entries: collections.OrderedDict[K, V] = collections.OrderedDict()

    def get(self, key: K) -> V | None:
        """The value of ``key``, or None if it is unknown or forgotten."""
        return self._entries.get(key)

    def put(self, key: K, value: V) -> None:
        """Write ``key``, making it the most recent; forget the oldest beyond capacity."""
        self._entries[key] = value
        self._entries.move_to_end(key)
        while len(self._entries) > self.capacity:
            self._entries.popitem(last=False)
            self.forgot = True

    def pop(self, key: K) -> V | None:
        """Remove ``key``; its value, or None if it was not there. Not a forgetting."""
        return self._entries.pop(key, None)
