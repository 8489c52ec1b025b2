"""Group commit on both databases: batching, durability, backpressure, failure isolation,
and stopping while the database is away."""

import asyncio
import contextvars
import logging
import math
import re
import sqlite3
import time
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence

import pytest
from prometheus_client import REGISTRY

from jobarchive.core.rows import WrittenRow
from jobarchive.storage import writer as writing
from jobarchive.storage.batches import WriterStopped
from jobarchive.storage.models import Job, Pod, Stamped
from jobarchive.storage.store import K, Store
from jobarchive.storage.writer import Writer
from testbed.mariadb import MariaDBServer
from tests.support.rows import job, pod
from tests.support.waiting import clock_past, eventually


class CountingStore(Store):
    """The real store, counting its transactions."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[int] = []

    async def write_batch(
        self, batch: Mapping[K, tuple[type[Stamped], Sequence[WrittenRow]]]
    ) -> dict[K, int]:
        self.batches.append(sum(len(rows) for _, rows in batch.values()))
        return await super().write_batch(batch)


@pytest.fixture
async def store(database: str) -> CountingStore:
    return CountingStore()


@pytest.fixture
async def writer(store: CountingStore) -> AsyncIterator[Writer]:
    writer = Writer(store, batch_size=100, max_delay=0.005, queue_size=50, flushers=2)
    writer.start()
    yield writer
    await writer.stop()


async def test_concurrent_writers_share_few_transactions(
    writer: Writer, store: CountingStore
) -> None:
    results = await asyncio.gather(
        *(writer.write(Pod, [pod(uid=f"pod-{i}", name=f"p-{i}")]) for i in range(1000))
    )
    assert results == [[None]] * 1000
    assert await Pod.all().count() == 1000
    assert sum(store.batches) == 1000
    assert len(store.batches) <= 40


async def test_a_write_returns_only_after_its_row_is_committed(writer: Writer) -> None:
    await writer.write(Job, [job(status="Succeeded")])
    assert (await Job.get(job_id="job-1")).status == "Succeeded"


async def test_the_same_uid_twice_in_one_batch_keeps_the_newest(writer: Writer) -> None:
    await asyncio.gather(
        writer.write(Job, [job(version="12", status="Failed")]),
        writer.write(Job, [job(version="11", status="Running")]),
        writer.write(Job, [job(uid="job-2", version="5")]),
        writer.write(Job, [job(uid="job-2", version="6", status="Succeeded")]),
    )
    assert (await Job.get(job_id="job-1")).status == "Failed"
    assert (await Job.get(job_id="job-2")).status == "Succeeded"


async def test_a_full_queue_makes_writers_wait_and_loses_nothing(writer: Writer) -> None:
    async def burst(start: int) -> None:
        await writer.write(
            Pod, [pod(uid=f"pod-{i}", name=f"p-{i}") for i in range(start, start + 500)]
        )

    await asyncio.gather(*(burst(start) for start in range(0, 3000, 500)))
    assert await Pod.all().count() == 3000
    assert writer.depth == 0


async def test_a_row_the_database_refuses_costs_only_itself(writer: Writer) -> None:
    rows = [pod(uid=f"pod-{i}", name=f"p-{i}") for i in range(20)]
    rows[7] = pod(uid="pod-7", name="p-7", status=None)
    errors = await writer.write(Pod, rows)
    assert [i for i, error in enumerate(errors) if error is not None] == [7]
    assert await Pod.all().count() == 19


async def test_gmt_modified_advances_through_the_writer(writer: Writer) -> None:
    await writer.write(Job, [job()])
    first = (await Job.get(job_id="job-1")).gmt_modified
    await clock_past(first)
    await writer.write(Job, [job(version="11")])
    assert (await Job.get(job_id="job-1")).gmt_modified > first


async def test_stopping_commits_what_is_queued(store: CountingStore) -> None:
    writer = Writer(store, batch_size=10, max_delay=0.05, queue_size=1000, flushers=1)
    writer.start()
    pending = [
        asyncio.ensure_future(writer.write(Pod, [pod(uid=f"pod-{i}", name=f"p-{i}")]))
        for i in range(200)
    ]
    # One turn of the loop, not a wait: each write runs until its row is queued, where
    # stop() must find it.
    await asyncio.sleep(0)
    await writer.stop()
    assert all(task.done() for task in pending)
    assert await Pod.all().count() == 200


def bisection_bound(rows: int, bad: int) -> int:
    """The transactions bisection may take: the batch's own, then two per level of halving
    down to each refused row."""
    return 1 + 2 * bad * math.ceil(math.log2(rows))


@pytest.mark.parametrize("bad", [[137], [0, 250, 499], [10, 11, 12, 13]])
async def test_refused_rows_are_found_by_bisection_in_few_transactions(
    store: CountingStore, bad: list[int]
) -> None:
    writer = Writer(store, batch_size=500, max_delay=0.005, queue_size=1000, flushers=1)
    writer.start()
    rows = [
        pod(uid=f"pod-{i:03}", name=f"p-{i}", status=None if i in bad else "Running")
        for i in range(500)
    ]
    try:
        errors = await writer.write(Pod, rows)
    finally:
        await writer.stop()
    assert [i for i, error in enumerate(errors) if error is not None] == bad
    assert await Pod.all().count() == 500 - len(bad)
    assert store.batches[0] == 500
    # One bad row: 19 transactions (1 + 2 * 9 halvings), where committing the rows one by
    # one after the batch failed took 501.
    assert len(store.batches) <= bisection_bound(500, len(bad)), store.batches
    print(f"{len(bad)} refused of 500: {len(store.batches)} transactions")


@pytest.fixture
def outage(database: str, db_url: str, request: pytest.FixtureRequest) -> Iterator[None]:
    """Takes the database away: stops the run's own MariaDB (never another server), or
    holds SQLite's file locked as another process would; gives it back at the end."""
    if db_url.startswith("sqlite"):
        holder = sqlite3.connect(db_url.removeprefix("sqlite://"), isolation_level=None)
        holder.execute("BEGIN EXCLUSIVE")
        try:
            yield
        finally:
            holder.rollback()
            holder.close()
        return
    server: MariaDBServer = request.getfixturevalue("private_mariadb")
    server.stop()
    try:
        yield
    finally:
        server.start()


async def test_stopping_during_an_outage_keeps_its_deadline_and_releases_every_writer(
    store: CountingStore, outage: None, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger=writing.__name__)
    writer = Writer(store, batch_size=2, max_delay=0.005, queue_size=5, flushers=2, stop_timeout=1)
    writer.start()
    # Two batches held by the flushers, five rows queued, the rest of the writers waiting
    # for room in the queue; one writer waits with three rows, two of them not queued yet.
    writes = [
        asyncio.ensure_future(writer.write(Pod, [pod(uid=f"pod-{i}", name=f"p-{i}")]))
        for i in range(20)
    ]
    writes.append(
        asyncio.ensure_future(writer.write(Pod, [pod(uid=f"more-{i}") for i in range(3)]))
    )

    async def full() -> bool:
        return writer.depth == 5

    await eventually(full, within=5)
    started = time.monotonic()
    await asyncio.wait_for(writer.stop(), 60)
    took = time.monotonic() - started
    # It waited its deadline for the database (exactly: nothing could be written), then
    # the flushers' grace at most; the ten seconds beyond only tell a deadline kept from
    # one that is not, and are generous, so that a busy machine never fails them.
    assert 1 <= took < 1 + writing.STOP_GRACE + 10, took
    assert all(task.done() for task in writes)
    results = [error for task in writes for error in task.result()]
    assert len(results) == 23
    assert all(isinstance(error, WriterStopped) for error in results)
    lines = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    gave_up = [line for line in lines if re.search(r"\b23 rows not written", line)]
    assert len(gave_up) == 1, lines
    assert "next start" in gave_up[0]
    # Later writes fail at once instead of waiting for flushers that are gone.
    late = await asyncio.wait_for(writer.write(Pod, [pod(uid="late")]), 10)
    assert isinstance(late[0], WriterStopped)


def objects(kind: str, outcome: str) -> float:
    labels = {"kind": kind, "outcome": outcome}
    return REGISTRY.get_sample_value("jobarchive_objects_total", labels) or 0.0


async def test_outcomes_are_counted_by_kind(writer: Writer) -> None:
    outcomes = [("TFJob", "stored"), ("TFJob", "skipped_stale"), ("PyTorchJob", "stored")]
    outcomes += [("Pod", "stored"), ("Pod", "skipped_stale"), ("Pod", "refused")]
    before = {key: objects(*key) for key in outcomes}
    batches = REGISTRY.get_sample_value("jobarchive_batch_rows_count") or 0.0
    lags = REGISTRY.get_sample_value("jobarchive_lag_seconds_count") or 0.0
    await writer.write(Job, [job(uid="t", version="10"), job(uid="p", kind="PyTorchJob")])
    await asyncio.gather(
        writer.write(Job, [job(uid="t", version="9")]),
        writer.write(Job, [job(uid="t", version="11")]),
        writer.write(Job, [job(uid="t", version="12")]),
    )
    refused = pod(uid="refused", status=None)
    changed = [time.time() - 3, None, None]
    await writer.write(Pod, [pod(uid="a"), pod(uid="b", version="1"), refused], changed)
    await writer.write(Pod, [pod(uid="b", version="0")])
    counted = {key: objects(*key) - before[key] for key in outcomes}
    # t: stored at 10, then 9, 11 and 12 race: 12 is stored, the other two are stale
    # (older than the batch's newest, or than the stored row when they commit apart).
    assert counted[("TFJob", "stored")] + counted[("TFJob", "skipped_stale")] == 4
    assert counted[("TFJob", "skipped_stale")] >= 1
    assert counted[("PyTorchJob", "stored")] == 1
    assert counted[("Pod", "stored")] == 2
    assert counted[("Pod", "skipped_stale")] == 1
    assert counted[("Pod", "refused")] == 1
    assert (await Job.get(job_id="t")).version == "12"
    assert (REGISTRY.get_sample_value("jobarchive_batch_rows_count") or 0.0) > batches
    assert (REGISTRY.get_sample_value("jobarchive_lag_seconds_count") or 0.0) == lags + 1


POLLUTED: contextvars.ContextVar[bool] = contextvars.ContextVar("polluted", default=False)


class ContextLeakingStore(Store):
    """Fails its first transaction the way Tortoise does when BEGIN hits a dead connection:
    leaving state in the caller's context (its transaction as the current connection)."""

    def __init__(self) -> None:
        super().__init__()
        self.attempts = 0

    async def write_batch(
        self, batch: Mapping[K, tuple[type[Stamped], Sequence[WrittenRow]]]
    ) -> dict[K, int]:
        self.attempts += 1
        assert not POLLUTED.get(), "a failed attempt's context reached the next one"
        if self.attempts == 1:
            POLLUTED.set(True)
            raise ConnectionError("BEGIN on a dead connection")
        return await super().write_batch(batch)


async def test_a_failed_transaction_leaves_nothing_behind_for_the_next(database: str) -> None:
    store = ContextLeakingStore()
    writer = Writer(store, flushers=1)
    writer.start()
    try:
        assert await asyncio.wait_for(writer.write(Pod, [pod(uid="after")]), 10) == [None]
        assert await writer.write(Pod, [pod(uid="later")]) == [None]
    finally:
        await writer.stop()
    assert store.attempts == 3


class HangingStore(Store):
    """A transaction that does not return until released: a pool out of connections."""

    def __init__(self) -> None:
        super().__init__()
        self.release = asyncio.Event()

    async def write_batch(
        self, batch: Mapping[K, tuple[type[Stamped], Sequence[WrittenRow]]]
    ) -> dict[K, int]:
        await self.release.wait()
        return await super().write_batch(batch)


async def test_a_hanging_transaction_shows_as_stuck_for_the_liveness_probe(database: str) -> None:
    store = HangingStore()
    writer = Writer(store, flushers=1)
    writer.start()
    try:
        assert writer.stuck_for() == 0
        pending = asyncio.ensure_future(writer.write(Pod, [pod()]))

        async def stuck() -> bool:
            return writer.stuck_for() > 0.2

        await eventually(stuck, within=5)
        assert writer.stuck_for() < 5 and writer.failing_for() == 0
        store.release.set()
        assert await pending == [None]
        assert writer.stuck_for() == 0
    finally:
        await writer.stop()
