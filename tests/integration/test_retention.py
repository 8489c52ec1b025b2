"""Retention on both databases: exactly the jobs that finished long ago and left the
cluster go, with their pods and their and their pods' Events; nothing else does."""

import asyncio
import datetime

from jobarchive.maintenance import retention
from jobarchive.storage.models import Event, Job, Pod
from tests.support.history import History
from tests.support.waiting import eventually

NOW = datetime.datetime(2026, 11, 29, tzinfo=datetime.UTC)


async def record(history: History, name: str, finished: str | None, gone: bool, pods: int) -> None:
    status = "Succeeded" if finished else "Running"
    job = await history.job(
        name, created="2026-01-01T00:00:00Z", status=status, finished=finished, gone=gone
    )
    await history.event(job, "SuccessfulCreatePod", "Created pods")
    for index in range(pods):
        pod = await history.pod(job, "Worker", index, gone=gone)
        await history.event(pod, "Scheduled", "Assigned")
        await history.event(pod, "Pulled", "Pulled image")


async def test_prune_deletes_old_gone_jobs_with_their_pods_and_events_in_batches(
    database: str,
) -> None:
    async with History() as history:
        for index in range(5):
            await record(history, f"old-{index}", "2026-03-01T00:00:00Z", gone=True, pods=3)
        await record(history, "old-but-still-in-cluster", "2026-03-01T00:00:00Z", False, 2)
        await record(history, "recent", "2026-11-20T00:00:00Z", gone=True, pods=2)
        await record(history, "running", None, gone=False, pods=2)
    before = retention.cutoff(90, NOW)

    dry = await retention.prune(before, dry_run=True, batch=2)
    assert (dry.jobs, dry.pods, dry.events) == (5, 15, 5 + 30)
    assert await Job.all().count() == 8

    pruned = await retention.prune(before, batch=2)
    assert (pruned.jobs, pruned.pods, pruned.events) == (5, 15, 35)
    kept = sorted(job.name for job in await Job.all())
    assert kept == ["old-but-still-in-cluster", "recent", "running"]
    assert await Pod.all().count() == 6
    assert await Event.all().count() == 3 + 12
    assert await retention.prune(before) == retention.Pruned()


def test_the_cutoff_is_days_before_now() -> None:
    assert retention.cutoff(30, NOW) == datetime.datetime(2026, 10, 30, tzinfo=datetime.UTC)


async def test_a_standby_replica_does_not_prune_until_it_is_active(database: str) -> None:
    async with History() as history:
        await record(history, "old", "2026-03-01T00:00:00Z", gone=True, pods=1)
    active = False
    asked = 0

    def standing_by() -> bool:
        nonlocal asked
        asked += 1
        return not active

    async def asked_five_times() -> bool:
        return asked >= 5

    async def pruned() -> bool:
        return not await Job.all().exists()

    task = asyncio.create_task(retention.prune_forever(90, 0.02, standing_by))
    try:
        await eventually(asked_five_times)
        assert await Job.all().count() == 1
        active = True
        await eventually(pruned, within=2)
    finally:
        task.cancel()
