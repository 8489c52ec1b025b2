"""The log tails' table on both databases: written once per container instance,
through the one writer (a refused row costing only itself, the tails a bounded
share of its queue), read back newest failure first, pruned with its job and with
orphan pods."""

import asyncio
import datetime
import logging
from collections.abc import Mapping, Sequence
from typing import cast

import pytest
from prometheus_client import REGISTRY

from jobarchive.core.rows import LogTailRow, WrittenRow
from jobarchive.logtails import capture
from jobarchive.logtails import inserts as tails
from jobarchive.logtails.capture import Handover
from jobarchive.logtails.text import tail
from jobarchive.maintenance import retention
from jobarchive.reading import queries
from jobarchive.storage.models import Job, LogTail, Pod, Stamped
from jobarchive.storage.store import K, Store
from jobarchive.storage.writer import Writer
from tests.support import rows
from tests.support.rows import failure, write_tails
from tests.support.waiting import eventually

LONG_AGO = datetime.datetime(2026, 3, 1, tzinfo=datetime.UTC)
NOW = datetime.datetime(2026, 11, 29, tzinfo=datetime.UTC)


async def test_a_tail_is_written_once_and_its_text_kept_as_decoded(database: str) -> None:
    store = tails.TailStore()
    text = tail("loss: nan 🔥\n".encode() + b"\xff\n", 100, 1000)
    first = tails.row(failure("p1"), "job-1", text, None)
    gone = tails.row(failure("p2"), "job-1", None, "the pod or its log is gone (404)")
    await write_tails([first, gone])
    again = tails.row(failure("p1"), "job-1", tail(b"another read\n", 100, 1000), None)
    await write_tails([again])
    stored = {row.pod_id: row for row in await LogTail.all()}
    assert set(stored) == {"p1", "p2"}
    assert stored["p1"].log_tail == "loss: nan 🔥\n\ufffd\n"
    assert (stored["p2"].captured, stored["p2"].note) == (False, "the pod or its log is gone (404)")
    assert stored["p1"].gmt_created is not None and stored["p1"].gmt_modified is not None
    keys = [("p1", "pytorch", 0), ("p1", "pytorch", 1), ("p2", "pytorch", 0)]
    assert await store.existing(keys) == {("p1", "pytorch", 0), ("p2", "pytorch", 0)}


async def test_a_jobs_tails_are_read_newest_failure_first_and_narrowed(database: str) -> None:
    written = [
        tails.row(failure("p1", restart=0), "job-1", tail(b"first\n", 10, 100), None),
        tails.row(failure("p1", restart=1), "job-1", tail(b"second\n", 10, 100), None),
        tails.row(failure("p2", container="init", finished_at=LONG_AGO), "job-1", None, "gone"),
        tails.row(failure("p3"), "job-2", tail(b"other job\n", 10, 100), None),
    ]
    await write_tails(written)
    found = (await queries.job_log_tails("job-1")).items
    assert [(t["pod_id"], t["restart_count"]) for t in found] == [("p1", 1), ("p1", 0), ("p2", 0)]
    assert found[0]["log_tail"] == "second\n" and found[0]["gmt_failed"] == "2026-11-20T10:01:00Z"
    by_name = (await queries.job_log_tails("job-1", pod="name-of-p2")).items
    assert [t["note"] for t in by_name] == ["gone"]
    first = await queries.job_log_tails("job-1", pod="p1", limit=1)
    assert [t["pod_id"] for t in first.items] == ["p1"] and first.next_cursor is not None
    rest = await queries.job_log_tails("job-1", pod="p1", limit=1, cursor=first.next_cursor)
    assert [t["restart_count"] for t in rest.items] == [0] and rest.next_cursor is None
    assert (await queries.job_log_tails("job-1", container="nope")).items == []
    assert await queries.pods_with_log_tails("job-1", ["p1", "p2", "p3"]) == {"p1"}


async def test_retention_prunes_tails_with_their_job_and_with_orphan_pods(database: str) -> None:
    store = Store()
    await store.upsert(
        Job, [rows.job("old", name="old", status="Failed", is_in_etcd=False, gmt_finished=LONG_AGO)]
    )
    await store.upsert(Job, [rows.job("live", name="live")])
    await store.upsert(
        Pod,
        [
            rows.pod("old-pod", name="old-pod", job_id="old", is_in_etcd=False),
            rows.pod("live-pod", name="live-pod", job_id="live"),
            rows.pod("orphan-pod", name="orphan-pod", job_id="never", is_in_etcd=False),
        ],
    )
    await write_tails(
        [
            tails.row(failure("old-pod"), "old", tail(b"x\n", 10, 100), None),
            tails.row(failure("live-pod"), "live", tail(b"x\n", 10, 100), None),
            tails.row(failure("orphan-pod"), "never", tail(b"x\n", 10, 100), None),
        ]
    )
    # The orphan pod was last written long ago.
    await Pod.filter(pod_id="orphan-pod").update(gmt_modified=LONG_AGO)
    before = retention.cutoff(90, NOW)
    assert (await retention.prune(before, dry_run=True)).log_tails == 2
    pruned = await retention.prune(before)
    assert pruned.log_tails == 2
    assert {str(uid) for uid in await LogTail.all().values_list("pod_id", flat=True)} == {
        "live-pod"
    }


class CountingStore(Store):
    """The real store, remembering how many rows each transaction was given."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[int] = []

    async def write_batch(
        self, batch: Mapping[K, tuple[type[Stamped], Sequence[WrittenRow]]]
    ) -> dict[K, int]:
        self.batches.append(sum(len(written) for _, written in batch.values()))
        return await super().write_batch(batch)


def counted(metric: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(metric, labels) or 0.0


async def test_a_refused_tail_is_named_and_counted_and_the_rest_of_its_batch_written(
    database: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger=capture.__name__)
    store = CountingStore()
    writer = Writer(store, batch_size=100, max_delay=0.05, flushers=1)
    handover = Handover(writer)
    good = tails.row(failure("p1"), "job-1", tail(b"x\n", 10, 100), None)
    # A NULL the table does not take: the database refuses the row.
    refused = cast(LogTailRow, {**tails.row(failure("p2"), "job-1", None, "n"), "captured": None})
    also = tails.row(failure("p3"), "job-1", None, "gone")
    before = counted("jobarchive_log_tails_total", outcome="failed", reason="refused")
    objects = counted("jobarchive_objects_total", kind="LogTail", outcome="refused")
    writer.start()
    try:
        # Queued at once, a pod's row behind them: one batch, its transaction refused.
        for row in (good, refused, also):
            await handover.put(row)
        assert await writer.write(Pod, [rows.pod("pod-1")]) == [None]

        async def said() -> list[str]:
            return [r.getMessage() for r in caplog.records if "log tail" in r.getMessage()]

        [line] = await eventually(said)
    finally:
        await writer.stop()
    assert line.startswith(
        "Could not store the log tail of ml/name-of-p2 container pytorch (restart 0): "
    )
    assert counted("jobarchive_log_tails_total", outcome="failed", reason="refused") == before + 1
    # A tail is not a Kubernetes object: counted by the capture alone.
    assert counted("jobarchive_objects_total", kind="LogTail", outcome="refused") == objects
    assert store.batches[0] == 4, store.batches
    stored = await LogTail.all().values_list("pod_id", flat=True)
    assert sorted(str(uid) for uid in stored) == ["p1", "p3"]
    assert await Pod.filter(pod_id="pod-1").count() == 1


async def test_the_tails_hold_a_bounded_share_of_the_writers_queue(database: str) -> None:
    writer = Writer(Store(), queue_size=8, max_delay=0.005)
    handover = Handover(writer)
    assert handover.held == 2
    # No flusher yet, as while the database is away: nothing is committed.
    for index in range(handover.held):
        await handover.put(tails.row(failure(f"p{index}"), "job-1", None, "n"))
    third = asyncio.ensure_future(handover.put(tails.row(failure("p9"), "job-1", None, "n")))
    for _ in range(10):
        await asyncio.sleep(0)
    # The third waits for room in the tails' share (a read would hold its slot), while the
    # rest of the queue takes the recorder's rows.
    assert not third.done() and handover.unqueued == 1
    assert writer.depth == handover.held
    written = asyncio.ensure_future(writer.write(Pod, [rows.pod(f"pod-{i}") for i in range(6)]))
    for _ in range(10):
        await asyncio.sleep(0)
    assert writer.depth == 8
    writer.start()
    try:
        assert await written == [None] * 6
        await third
    finally:
        await writer.stop()
    assert handover.unqueued == 0
    assert await LogTail.all().count() == 3
    assert await Pod.all().count() == 6
