"""Bounds on what one statement carries and on what memory keeps.

``chunks`` cuts a list into pieces of at most a given size: every bulk statement
(upserts, deletes by uid, reconciliation's marks) goes out in such pieces so that
none exceeds a database's limits or holds locks on too many rows. ``Lru`` is the
bounded map of answers: it forgets the entry written longest ago, and remembers
that it forgot, because a caller that forgot something can no longer trust a miss
to mean "never seen"; ``Expiring`` is such a map whose answers also grow too old.
``Weighed`` is the bounded map of what waits: bounded by its
number of entries and by what they weigh (bytes, as the caller counts them), it
drops the oldest and hands them back, so that the caller can say what it lost.
"""

import collections
import time
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


class Expiring(Generic[K, V]):
    """At most ``capacity`` answers, each forgotten ``ttl`` seconds after it was learnt."""

    def __init__(self, ttl: float, capacity: int) -> None:
        self.ttl = ttl
        self._answers: Lru[K, tuple[float, V]] = Lru(capacity)

    def get(self, key: K) -> V | None:
        """The answer for ``key``, or None when unknown or too old."""
        found = self._answers.get(key)
        if found is None:
            return None
        learnt, value = found
        if time.monotonic() - learnt >= self.ttl:
            self._answers.pop(key)
            return None
        return value

    def put(self, key: K, value: V) -> None:
        """Remember an answer learnt now."""
        self._answers.put(key, (time.monotonic(), value))


class Weighed(Generic[K, V]):
    """An insertion-ordered map bounded by its number of entries and by their total
    weight: past either bound the oldest entries are dropped and handed back.

    Rewriting a key keeps its place: an object that waits is as old as its first
    version, however often it changes while it waits.
    """

    def __init__(self, max_entries: int, max_weight: int) -> None:
        self.max_entries = max_entries
        self.max_weight = max_weight
        self.weight = 0
        self._entries: collections.OrderedDict[K, tuple[V, int]] = collections.OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: K) -> V | None:
        """The value of ``key``, or None."""
        entry = self._entries.get(key)
        return entry[0] if entry is not None else None

    def put(self, key: K, value: V, weight: int) -> list[tuple[K, V]]:
        """Write ``key`` weighing ``weight``; returns the entries dropped to stay within
        the bounds, oldest first (this one too, if it alone is over the weight)."""
        old = self._entries.get(key)
        if old is not None:
            self.weight -= old[1]
        self._entries[key] = (value, weight)
        self.weight += weight
        return self._fit()

    def pop(self, key: K) -> V | None:
        """Remove ``key``; its value, or None if it was not there."""
        entry = self._entries.pop(key, None)
        if entry is None:
            return None
        self.weight -= entry[1]
        return entry[0]

    def oldest(self) -> tuple[K, V] | None:
        """The entry written first, without removing it; None when empty."""
        for key, (value, _) in self._entries.items():
            return key, value
        return None

    def bound(self, max_entries: int, max_weight: int) -> list[tuple[K, V]]:
        """Change the bounds; returns the entries dropped to fit them, oldest first."""
        self.max_entries = max_entries
        self.max_weight = max_weight
        return self._fit()

    def _fit(self) -> list[tuple[K, V]]:
        dropped = []
        while self._entries and (
            len(self._entries) > self.max_entries or self.weight > self.max_weight
        ):
            key, (value, weight) = self._entries.popitem(last=False)
            self.weight -= weight
            dropped.append((key, value))
        return dropped
