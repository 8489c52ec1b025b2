"""While the database is away each flusher backs off on its own, with jitter; the outage
they all meet is one, begun and ended once."""

import asyncio
import logging
import random
from collections.abc import Mapping, Sequence

import pytest

from jobarchive.core.rows import WrittenRow
from jobarchive.storage import waiting
from jobarchive.storage.batches import WriterStopped
from jobarchive.storage.models import Pod, Stamped
from jobarchive.storage.store import K, Store
from jobarchive.storage.waiting import Backoff
from jobarchive.storage.writer import Writer
from tests.support.rows import pod
from tests.support.waiting import eventually


def ceilings(first: float, cap: float, count: int) -> list[float]:
    return [min(first * 2**attempt, cap) for attempt in range(count)]


def test_waits_double_to_the_cap_each_between_half_and_all_of_its_ceiling() -> None:
    backoff = Backoff(random=random.Random(7).random)
    waits = [backoff.next() for _ in range(12)]
    shares = [wait / ceiling for wait, ceiling in zip(waits, ceilings(0.1, 5.0, 12), strict=True)]
    assert all(0.5 <= share <= 1 for share in shares)
    # Jittered: not the same share of the ceiling each time.
    assert len({round(share, 6) for share in shares}) > 6


def test_the_jitter_spans_half_to_all_of_the_ceiling() -> None:
    assert [Backoff(random=lambda: 0.0).next() for _ in range(2)] == [0.05, 0.05]
    highest = Backoff(random=lambda: 1.0)
    assert [highest.next() for _ in range(8)] == [0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 5.0, 5.0]


def test_a_reset_starts_again_from_the_first_wait() -> None:
    backoff = Backoff(random=lambda: 1.0)
    for _ in range(5):
        backoff.next()
    backoff.reset()
    assert backoff.next() == 0.1


def test_seeded_flushers_wait_differently() -> None:
    one, two = (Backoff(random=random.Random(seed).random) for seed in (1, 2))
    assert [one.next() for _ in range(5)] != [two.next() for _ in range(5)]


class RecordingBackoff(Backoff):
    """A short backoff that remembers the ceiling of each of its waits."""

    def __init__(self, seed: int) -> None:
        super().__init__(first=0.001, cap=0.004, random=random.Random(seed).random)
        self.ceilings: list[float] = []

    def next(self) -> float:
        self.ceilings.append(self.ceiling)
        return super().next()


class AwayStore(Store):
    """A database that refuses connections for each batch's first ``failures`` attempts,
    then takes it (without writing anything: no database is needed)."""

    def __init__(self, failures: int) -> None:
        super().__init__()
        self.failures = failures
        self.attempts: dict[str, int] = {}

    async def write_batch(
        self, batch: Mapping[K, tuple[type[Stamped], Sequence[WrittenRow]]]
    ) -> dict[K, int]:
        uids = ",".join(str(dict(row)["pod_id"]) for _, rows in batch.values() for row in rows)
        self.attempts[uids] = self.attempts.get(uids, 0) + 1
        if self.attempts[uids] <= self.failures:
            raise ConnectionRefusedError(111, "Connection refused")
        return dict.fromkeys(batch, 0)


async def test_each_flusher_backs_off_on_its_own_and_the_outage_is_one(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger=waiting.__name__)
    made: list[RecordingBackoff] = []

    def backoff() -> Backoff:
        made.append(RecordingBackoff(seed=len(made)))
        return made[-1]

    store = AwayStore(failures=5)
    writer = Writer(store, batch_size=1, max_delay=0, flushers=2, backoff=backoff)
    writer.start()
    try:
        first = asyncio.ensure_future(writer.write(Pod, [pod(uid="a")]))
        second = asyncio.ensure_future(writer.write(Pod, [pod(uid="b")]))
        assert list(await asyncio.wait_for(asyncio.gather(first, second), 10)) == [[None], [None]]
    finally:
        await writer.stop()
    assert store.attempts == {"a": 6, "b": 6}
    assert len(made) == 2
    # With one backoff shared, each flusher's failures doubled the other's waits too.
    for flusher in made:
        assert flusher.ceilings == ceilings(0.001, 0.004, 5)
    messages = [record.getMessage() for record in caplog.records]
    assert sum("The database is unavailable" in message for message in messages) == 1
    assert sum("The database is back after" in message for message in messages) == 1
    assert writer.failing_for() == 0


async def test_the_outage_shows_until_stopping_gives_its_rows_up() -> None:
    store = AwayStore(failures=1_000_000)
    writer = Writer(store, batch_size=1, max_delay=0, flushers=2, stop_timeout=0)
    writer.start()
    pending = asyncio.ensure_future(writer.write(Pod, [pod(uid="a")]))
    try:

        async def failing() -> bool:
            return writer.failing_for() > 0

        await eventually(failing, within=5)
    finally:
        await writer.stop()
    assert isinstance((await pending)[0], WriterStopped)
