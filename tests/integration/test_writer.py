"""Group commit on both databases: batching, durability, backpressure, failure isolation."""

import asyncio
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import pytest

from jobarchive.models import Job, Pod, Stamped
from jobarchive.store import Store
from jobarchive.writer import Writer
from tests.integration.test_store import job, pod


class CountingStore(Store):
    """The real store, counting its transactions."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[int] = []

    async def write_batch(self, batch: Mapping[type[Stamped], Sequence[Mapping[str, Any]]]) -> None:
        self.batches.append(sum(len(rows) for rows in batch.values()))
        await super().write_batch(batch)


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
    rows[7]["status"] = None
    errors = await writer.write(Pod, rows)
    assert [i for i, error in enumerate(errors) if error is not None] == [7]
    assert await Pod.all().count() == 19


async def test_gmt_modified_advances_through_the_writer(writer: Writer) -> None:
    await writer.write(Job, [job()])
    first = (await Job.get(job_id="job-1")).gmt_modified
    await asyncio.sleep(0.002)
    await writer.write(Job, [job(version="11")])
    assert (await Job.get(job_id="job-1")).gmt_modified > first


async def test_stopping_commits_what_is_queued(store: CountingStore) -> None:
    writer = Writer(store, batch_size=10, max_delay=0.05, queue_size=1000, flushers=1)
    writer.start()
    pending = [
        asyncio.ensure_future(writer.write(Pod, [pod(uid=f"pod-{i}", name=f"p-{i}")]))
        for i in range(200)
    ]
    await asyncio.sleep(0)
    await writer.stop()
    assert all(task.done() for task in pending)
    assert await Pod.all().count() == 200
