"""The roll-up of usage by cluster queue (``queue_span``, ``queue_job``: decision 46) on
both databases: on a generated archive, written in every order (pods before their
attempts, after, in pieces; one job's row never), its figures are those of every pod
read live; ``jobarchive migrate`` fills it for an archive written without it;
retention prunes it with its job."""

import datetime
import random
from typing import Any

import pytest

from jobarchive.core.rows import AttemptRow, JobRow, PodRow, QuotaRow
from jobarchive.maintenance import retention
from jobarchive.reading.queries import rollup
from jobarchive.storage import database as db
from jobarchive.storage import spans
from jobarchive.storage.kueue import Attempt, QueueJob, QueueSpan, Quota
from jobarchive.storage.migration import Migration
from jobarchive.storage.models import Job, Pod
from jobarchive.storage.store import Store
from tests.support import rows
from tests.support.queue_rows import attempt, quota

START = datetime.datetime(2026, 11, 2, tzinfo=datetime.UTC)
SINCE, UNTIL = START, START + datetime.timedelta(days=14)
QUEUES = ("gpu-a", "gpu-b", "Gpu-A")
# Windows whose edges fall inside days, and whole ones, each cut or not.
WINDOWS: list[tuple[datetime.datetime, datetime.datetime, str | None]] = [
    (SINCE, UNTIL, None),
    (SINCE, UNTIL, "day"),
    (SINCE + datetime.timedelta(hours=7), UNTIL - datetime.timedelta(hours=5), "week"),
    (SINCE + datetime.timedelta(days=3, minutes=13), SINCE + datetime.timedelta(days=4), None),
]


def _minute(rng: random.Random, after: datetime.datetime, most: int) -> datetime.datetime:
    return after + datetime.timedelta(minutes=rng.randrange(1, most))


def _job(rng: random.Random, n: int) -> tuple[JobRow, list[AttemptRow], list[PodRow]]:
    """A job of one to three attempts, each with pods that started in it (or before the
    first, in none), some still running, some preempted; whole minutes."""
    created = _minute(rng, START - datetime.timedelta(days=1), 15 * 24 * 60)
    job = rows.job(f"j{n}", namespace=f"team-{n % 3}", gmt_created=created)
    attempts: list[AttemptRow] = []
    pods: list[PodRow] = []
    reserved = _minute(rng, created, 120)
    for k in range(rng.randrange(1, 4)):
        ended = _minute(rng, reserved, 36 * 60)
        last = k == 2 or rng.random() < 0.4
        why = "Finished" if last else rng.choice(("Preempted", "Evicted"))
        queue = rng.choice(QUEUES) if rng.random() > 0.05 else None
        attempts.append(
            attempt(f"a{n}-{k}", job["job_id"], queue, reserved, ended_at=ended, end_reason=why)  # type: ignore[arg-type]
        )
        for p in range(rng.randrange(0, 4)):
            started = reserved + datetime.timedelta(minutes=rng.randrange(-30, 60))
            running = last and rng.random() < 0.3
            pods.append(
                rows.pod(
                    f"p{n}-{k}-{p}",
                    job_id=job["job_id"],
                    gpus=rng.choice((0, 1, 2, 8)),
                    gmt_started=started,
                    gmt_finished=None if running else max(started, ended),
                )
            )
        if last:
            break
        reserved = _minute(rng, ended, 90)
    return job, attempts, pods


async def _write(rng: random.Random, store: Store, first: int, count: int) -> None:
    """``count`` jobs written through ``store``, each in an order of its own."""
    for n in range(first, first + count):
        job, attempts, pods = _job(rng, n)
        order: list[tuple[Any, list[Any]]] = [(Job, [job]), (Pod, pods), (Attempt, attempts)]
        rng.shuffle(order)
        if rng.random() < 0.3 and len(pods) > 1:
            # A pod written again after the rest, as a later version would be.
            order.append((Pod, pods[:1]))
        for model, written in order:
            if written:
                await store.upsert(model, written)


def _quotas() -> list[QuotaRow]:
    middle = START + datetime.timedelta(days=6, hours=3)
    found = [quota("q1", "a100", 4, START, middle), quota("q2", "a100", 2, middle, None)]
    b = quota("q3", "h100", 3, START + datetime.timedelta(days=2), None)
    b["queue_id"], b["cluster_queue"] = "cq-uid-b", "gpu-b"
    return [*found, b]


@pytest.fixture
async def archive(database: str) -> None:
    rng = random.Random(45)
    await Store().upsert(Quota, _quotas())
    await _write(rng, Store(), 0, 120)
    await _write(rng, Store(cluster="other"), 120, 30)
    # A job whose row never came: its spans and waits count nowhere, as its pods.
    _, attempts, pods = _job(rng, 150)
    await Store().upsert(Attempt, attempts)
    await Store().upsert(Pod, pods)


async def _same_as_the_pods(cluster: str | None = None) -> None:
    for since, until, every in WINDOWS:
        kept = await rollup("clusterqueue", every, since=since, until=until, cluster=cluster)
        live = await rollup(
            "clusterqueue", every, since=since, until=until, cluster=cluster, from_pods=True
        )
        assert kept == live, (since, until, every)
        assert any(row["allocated_gpu_hours"] for row in kept)


async def test_the_roll_up_answers_what_the_pods_do(archive: None) -> None:
    await _same_as_the_pods()
    await _same_as_the_pods("other")
    assert await QueueSpan.filter(preempted=True).exists()


async def test_migrate_fills_the_roll_up_of_an_archive_written_without_it(
    archive: None,
) -> None:
    before = (
        await QueueSpan.all()
        .order_by("job_id", "started")
        .values_list("job_id", "cluster_queue", "preempted", "gpus", "cluster", "job_cluster")
    )
    waits = await _waits()
    await QueueSpan.all().delete()
    await QueueJob.all().delete()
    assert await spans.left(db.connection())
    found = await Migration(db.connection()).run(dry_run=False, report=lambda step: None)
    assert any(step.table == "queue_span" for step in found)
    assert not await spans.left(db.connection())
    after = (
        await QueueSpan.all()
        .order_by("job_id", "started")
        .values_list("job_id", "cluster_queue", "preempted", "gpus", "cluster", "job_cluster")
    )
    assert after == before
    assert await _waits() == waits
    await _same_as_the_pods()


async def _waits() -> list[Any]:
    return list(
        await QueueJob.all()
        .order_by("job_id")
        .values_list("job_id", "cluster_queue", "first_reserved", "start_wait_s", "job_cluster")
    )


async def test_retention_prunes_a_job_s_spans_with_it(archive: None) -> None:
    spanned = await QueueSpan.filter(cluster="other").values_list("job_id", flat=True)
    assert spanned
    await Job.filter(job_id__in=spanned).update(is_in_etcd=False, gmt_finished=START)
    await Pod.filter(job_id__in=spanned).update(is_in_etcd=False)
    await retention.prune(datetime.datetime.now(datetime.UTC), cluster="other")
    assert not await QueueSpan.filter(job_id__in=spanned).exists()
    assert not await QueueJob.filter(job_id__in=spanned).exists()
    assert await QueueSpan.filter(cluster="default").exists()
    assert await QueueJob.filter(job_cluster="default").exists()
