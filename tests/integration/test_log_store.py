"""The log tails' table on both databases: written once per container instance,
read back newest failure first, pruned with its job and with orphan pods."""

import datetime

from jobarchive.logtails import inserts as tails
from jobarchive.logtails.text import tail
from jobarchive.maintenance import retention
from jobarchive.reading import queries
from jobarchive.storage.models import Job, LogTail, Pod
from jobarchive.storage.store import Store
from tests.support import rows
from tests.support.rows import failure

LONG_AGO = datetime.datetime(2026, 3, 1, tzinfo=datetime.UTC)
NOW = datetime.datetime(2026, 11, 29, tzinfo=datetime.UTC)


async def test_a_tail_is_written_once_and_its_text_kept_as_decoded(database: str) -> None:
    store = tails.TailStore()
    text = tail("loss: nan 🔥\n".encode() + b"\xff\n", 100, 1000)
    first = tails.row(failure("p1"), "job-1", text, None)
    gone = tails.row(failure("p2"), "job-1", None, "the pod or its log is gone (404)")
    await store.insert([first, gone])
    again = tails.row(failure("p1"), "job-1", tail(b"another read\n", 100, 1000), None)
    await store.insert([again])
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
    await tails.TailStore().insert(written)
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
    await tails.TailStore().insert(
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
