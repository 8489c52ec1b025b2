"""Retention on both databases: exactly the jobs that finished long ago and left the
cluster go, with their pods and every Event stored under them; pods and Events whose
job never arrived go after the same period; nothing still in the cluster goes; and only
the active replica prunes."""

import asyncio
import datetime
import logging
from collections.abc import Sequence
from typing import Any

import pytest

from jobarchive.core.rows import DEFAULT_CLUSTER, EventRow, JobRow, PodRow
from jobarchive.maintenance import retention
from jobarchive.maintenance.peering import Activity, Peering
from jobarchive.storage.models import Event, Job, Pod, utcnow
from jobarchive.storage.store import Store
from tests.support import rows
from tests.support.history import History
from tests.support.waiting import clock_past, eventually

NOW = datetime.datetime(2026, 11, 29, tzinfo=datetime.UTC)
LONG_AGO = datetime.datetime(2026, 3, 1, tzinfo=datetime.UTC)
WAITING = "Pruning waits until this replica is the active one"


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


async def store(
    jobs: Sequence[JobRow] = (), pods: Sequence[PodRow] = (), events: Sequence[EventRow] = ()
) -> None:
    """Write rows as the operator would: each stamped with the time it is written."""
    for model, written in ((Job, jobs), (Pod, pods), (Event, events)):
        if written:
            await Store().upsert(model, written)


def old_job(uid: str, **fields: Any) -> JobRow:
    """A job that finished long ago and left the cluster."""
    gone: dict[str, Any] = {"name": uid, "status": "Succeeded", "is_in_etcd": False}
    return rows.job(uid, **gone | {"gmt_finished": LONG_AGO} | fields)


def gone_pod(uid: str, job_uid: str, **fields: Any) -> PodRow:
    return rows.pod(uid, name=uid, job_id=job_uid, is_in_etcd=False, **fields)


def event_about(uid: str, kind: str, obj_uid: str, job_uid: str | None) -> EventRow:
    return rows.event(uid, kind=kind, obj_uid=obj_uid, obj_name=obj_uid, job_id=job_uid)


async def uids(model: type[Job] | type[Pod] | type[Event]) -> set[str]:
    key = {Job: "job_id", Pod: "pod_id", Event: "event_id"}[model]
    return {str(uid) for uid in await model.all().values_list(key, flat=True)}


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


async def test_a_pruned_job_takes_every_event_stored_under_it_whatever_it_is_about(
    database: str,
) -> None:
    recent = datetime.datetime(2026, 11, 20, tzinfo=datetime.UTC)
    await store(
        [old_job("old"), old_job("recent", gmt_finished=recent)],
        [gone_pod("old-pod", "old"), gone_pod("recent-pod", "recent")],
        [
            event_about("about-job", "TFJob", "old", "old"),
            event_about("about-pod", "Pod", "old-pod", "old"),
            event_about("about-jobset", "JobSet", "jobset-of-old", "old"),
            event_about("about-raycluster", "RayCluster", "raycluster-of-old", "old"),
            # Written before event_info.job_id existed: known by their object only.
            event_about("legacy-about-job", "TFJob", "old", None),
            event_about("legacy-about-pod", "Pod", "old-pod", None),
            event_about("recent-about-job", "TFJob", "recent", "recent"),
            event_about("recent-about-raycluster", "RayCluster", "raycluster-of-recent", "recent"),
        ],
    )
    before = retention.cutoff(90, NOW)

    dry = await retention.prune(before, dry_run=True)
    pruned = await retention.prune(before, chunk=2)

    assert (pruned.jobs, pruned.pods, pruned.events) == (1, 1, 6)
    assert dry == pruned
    assert await uids(Job) == {"recent"}
    assert await uids(Pod) == {"recent-pod"}
    assert await uids(Event) == {"recent-about-job", "recent-about-raycluster"}


async def test_a_job_is_kept_while_one_of_its_pods_is_still_in_the_cluster(database: str) -> None:
    live = rows.pod("live-pod", name="live-pod", job_id="old", is_in_etcd=True)
    await store(
        [old_job("old")],
        [gone_pod("gone-pod", "old"), live],
        [
            event_about("about-gone-pod", "Pod", "gone-pod", "old"),
            event_about("about-live-pod", "Pod", "live-pod", "old"),
        ],
    )
    before = retention.cutoff(90, NOW)

    assert await retention.prune(before) == retention.Pruned()
    assert await uids(Job) == {"old"}
    assert await uids(Pod) == {"gone-pod", "live-pod"}
    assert await Event.all().count() == 2

    await store(pods=[{**live, "version": "11", "is_in_etcd": False}])
    pruned = await retention.prune(before)
    assert (pruned.jobs, pruned.pods, pruned.events) == (1, 2, 2)
    assert not await uids(Job) | await uids(Pod) | await uids(Event)


async def test_pods_whose_job_never_arrived_are_pruned_after_the_same_period(
    database: str,
) -> None:
    await store(
        [rows.job("running", name="running")],
        [
            gone_pod("orphan-old", "never-recorded"),
            rows.pod("orphan-live", name="orphan-live", job_id="never-recorded"),
            gone_pod("pod-of-running", "running"),
        ],
        [
            event_about("about-orphan-old", "Pod", "orphan-old", "never-recorded"),
            event_about("legacy-about-orphan-old", "Pod", "orphan-old", None),
            event_about("about-orphan-live", "Pod", "orphan-live", "never-recorded"),
        ],
    )
    cut = utcnow()
    await clock_past(cut)
    await store(
        pods=[gone_pod("orphan-recent", "never-recorded")],
        events=[event_about("about-orphan-recent", "Pod", "orphan-recent", "never-recorded")],
    )

    dry = await retention.prune(cut, dry_run=True)
    pruned = await retention.prune(cut, chunk=1)

    assert pruned == retention.Pruned(pods=1, events=2, orphan_pods=1, orphan_events=2)
    assert dry == pruned
    assert await uids(Pod) == {"orphan-live", "pod-of-running", "orphan-recent"}
    assert await uids(Event) == {"about-orphan-live", "about-orphan-recent"}
    assert await uids(Job) == {"running"}


async def test_events_whose_job_never_arrived_are_pruned_after_the_same_period(
    database: str,
) -> None:
    await store(
        [rows.job("running", name="running")],
        [rows.pod("pod-of-running", name="pod-of-running", job_id="running")],
        [
            event_about("about-a-job-never-recorded", "TFJob", "never-recorded", "never-recorded"),
            event_about("about-its-raycluster", "RayCluster", "raycluster", "never-recorded"),
            event_about("legacy-about-nothing-stored", "RayCluster", "other-raycluster", None),
            event_about("legacy-about-a-stored-job", "TFJob", "running", None),
            event_about("about-a-stored-pod", "Pod", "pod-of-running", "never-recorded"),
            event_about("under-a-stored-job", "RayCluster", "raycluster-of-running", "running"),
        ],
    )
    cut = utcnow()
    await clock_past(cut)
    await store(events=[event_about("recent", "TFJob", "never-recorded", "never-recorded")])

    dry = await retention.prune(cut, dry_run=True)
    pruned = await retention.prune(cut, chunk=1)

    assert pruned == retention.Pruned(events=3, orphan_events=3)
    assert dry == pruned
    assert await uids(Event) == {
        "legacy-about-a-stored-job",
        "about-a-stored-pod",
        "under-a-stored-job",
        "recent",
    }
    assert (await uids(Job), await uids(Pod)) == ({"running"}, {"pod-of-running"})


async def test_a_gone_job_without_a_finish_time_is_pruned_once_last_written_before_the_cutoff(
    database: str,
) -> None:
    await store([old_job("unfinished-old", gmt_finished=None)])
    cut = utcnow()
    await clock_past(cut)
    await store([old_job("unfinished-recent", gmt_finished=None)])

    assert await retention.prune(cut) == retention.Pruned(jobs=1)
    assert await uids(Job) == {"unfinished-recent"}


def test_the_cutoff_is_days_before_now() -> None:
    assert retention.cutoff(30, NOW) == datetime.datetime(2026, 10, 30, tzinfo=datetime.UTC)


async def pruning_until_active(
    activity: Activity, caplog: pytest.LogCaptureFixture
) -> asyncio.Task[None]:
    """prune_forever, once it waits: the old job is still there."""
    await store([old_job("old")])
    caplog.set_level(logging.INFO, logger=retention.__name__)
    task = asyncio.create_task(retention.prune_forever(90, 3600, activity, DEFAULT_CLUSTER))

    async def waiting() -> bool:
        return WAITING in caplog.text

    await eventually(waiting)
    assert await uids(Job) == {"old"}
    return task


async def pruned() -> bool:
    return not await Job.all().exists()


@pytest.mark.parametrize("known", [False, True], ids=["not-known-yet", "standing-by"])
async def test_a_replica_prunes_only_once_it_knows_it_is_the_active_one(
    database: str, caplog: pytest.LogCaptureFixture, known: bool
) -> None:
    activity = Activity(Peering(name="jobarchive", priority=100))
    if known:
        activity.record(False)
    task = await pruning_until_active(activity, caplog)
    try:
        activity.record(True)
        await eventually(pruned, within=5)
    finally:
        task.cancel()


async def test_a_standalone_replica_is_the_active_one_from_the_start(
    database: str, caplog: pytest.LogCaptureFixture
) -> None:
    await store([old_job("old")])
    caplog.set_level(logging.INFO, logger=retention.__name__)
    task = asyncio.create_task(
        retention.prune_forever(90, 3600, Activity(Peering(name=None, priority=0)), DEFAULT_CLUSTER)
    )
    try:
        await eventually(pruned, within=5)
        assert WAITING not in caplog.text
    finally:
        task.cancel()
