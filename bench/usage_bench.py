"""Usage over a month (decision 33): an archive whose month holds ``jobs`` jobs and
``jobs x pods`` pods of 0-8 GPUs, queued, run and finished through the month (those
whose run ends past the month still running), written through the store (which keeps
the daily roll-up, its failed jobs filed under failure classes, its finished pods
summarised, nine in ten measured, as the summarising pass would), rolled up by
namespace, by queue per day, by failure class and one namespace's by owner, each from
the daily roll-up and from the pods (the indexed query), beside
``jobarchive jobs``'s first page, in the same run; and the per-job facts of the month
streamed (jobs/s)."""

import datetime
import random
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

from bench.query_bench import measure
from jobarchive.config import DbTls
from jobarchive.core.efficiency import MEASURED, NO_DATA, PodEfficiency, memory_given
from jobarchive.core.rows import FailureRow, Row
from jobarchive.reading import queries
from jobarchive.reading.queries import JobQuery
from jobarchive.storage import database as db
from jobarchive.storage.failed import FailedJob
from jobarchive.storage.models import Event, Job, Pod, Stamped
from jobarchive.storage.readpool import ReadPool
from jobarchive.storage.store import Store
from jobarchive.storage.summaries import Summary
from testbed import bulk

MONTH = datetime.datetime(2026, 10, 1, tzinfo=datetime.UTC)
UNTIL = datetime.datetime(2026, 11, 1, tzinfo=datetime.UTC)
QUEUES = ("research", "production", "batch", None)
GPUS = (0, 1, 1, 2, 4, 8)
OUTCOMES = ("Succeeded", "Succeeded", "Succeeded", "Failed")
CHUNK = 2000
NODES = 500


def _month(jobs: int, pods_per_job: int) -> Iterator[tuple[type[Stamped], Row]]:
    """``testbed.bulk``'s archive moved into one month, with the usage facts filled: each
    job waits 0-30 minutes, then its pods run 10 minutes to a day, some never start; a
    job whose run ends after the month is still running."""
    rng = random.Random(11)
    spread = (UNTIL - MONTH).total_seconds()
    job: dict[str, Any] = {}
    for model, row in bulk.archive(jobs, pods_per_job):
        if model is Event:
            continue
        fields: dict[str, Any] = dict(row)
        if model is Job:
            created = MONTH + datetime.timedelta(seconds=rng.randrange(int(spread)))
            running = created + datetime.timedelta(seconds=rng.randrange(1800))
            ran = datetime.timedelta(seconds=rng.randrange(600, 86400))
            done = running + ran < UNTIL
            fields.update(
                gmt_created=created,
                gmt_job_running=running,
                gmt_finished=running + ran if done else None,
                status=rng.choice(OUTCOMES) if done else "Running",
                queue=rng.choice(QUEUES),
            )
            job = fields
        else:
            started = None if rng.random() < 0.02 else job["gmt_job_running"]
            fields.update(
                gmt_created=job["gmt_created"],
                gmt_started=started,
                gmt_finished=job["gmt_finished"] if started else None,
                gpus=rng.choice(GPUS),
                cpu_millis=4000,
                node_name=f"node-{rng.randrange(NODES)}" if started else None,
            )
        yield model, fields  # type: ignore[misc]


async def fill_month(jobs: int, pods_per_job: int) -> None:
    """Write ``_month``'s archive through the store, ``CHUNK`` rows per statement."""
    store = Store()
    pending: dict[type[Stamped], list[Row]] = {Job: [], Pod: []}
    for model, row in _month(jobs, pods_per_job):
        rows = pending[model]
        rows.append(row)
        if len(rows) >= CHUNK:
            await store.upsert(model, rows)
            rows.clear()
    for model, rows in pending.items():
        await store.upsert(model, rows)


CLASSES = ("OOMKilled", "GPUOutOfMemory", "NCCLError", "Unknown")


async def classify_month() -> int:
    """File three in four failed jobs under a failure class as the classifying pass
    would (``job_failure``), the rest left unclassified: usage reads the classes as it
    rolls up (decision 42). Returns the jobs classified."""
    failed = await Job.filter(status="Failed").order_by("id").values_list("job_id", "namespace")
    rows: list[FailureRow] = [
        {
            "job_id": uid,
            "version": "1",
            "namespace": namespace,
            "failure_class": CLASSES[n % len(CLASSES)],
            "pod_id": f"{uid}-0",
            "pod_name": f"{uid}-0",
            "container": "pytorch",
            "exit_code": 1,
            "signal": None,
            "detail": None,
            "derived_exit_code": 1,
            "gmt_created": None,
        }
        for n, (uid, namespace) in enumerate(failed)
        if n % 4
    ]
    for start in range(0, len(rows), CHUNK):
        await Store().upsert(FailedJob, rows[start : start + CHUNK])
    return len(rows)


def _summary(pod: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """A finished pod's summary as the summarising pass writes it: nine in ten
    measured, with figures drawn at random, the rest without data."""
    from jobarchive.maintenance.summarising import summary_row

    if rng.random() < 0.1:
        return dict(summary_row(pod, PodEfficiency(NO_DATA)))
    gpus = pod["gpus"] or 0
    # As the pass finds it: the peak's ratio to the pod's limit (else its request).
    given = memory_given(pod["resources"], pod["memory_bytes"])
    ratio = rng.random() if given else None
    found = PodEfficiency(
        MEASURED,
        gpu_activity_mean=rng.random() if gpus else None,
        unused_gpus=rng.randrange(gpus + 1) if gpus else None,
        energy_joules=rng.uniform(0, 1e7) if gpus else None,
        cpu_efficiency=rng.random(),
        memory_peak_bytes=ratio * given if ratio is not None and given else None,
        memory_peak_ratio=ratio,
    )
    return dict(summary_row(pod, found))


async def summarise_month() -> int:
    """Write a summary (``pod_efficiency``, decision 45) of every finished pod, through
    the store, which rewrites their jobs' days with their efficiency weights (decision
    47), ``CHUNK`` pods a batch by id. Returns the pods summarised."""
    rng, after, count = random.Random(13), 0, 0
    fields = (
        *("id", "pod_id", "version", "job_id", "namespace", "name", "gpus"),
        *("memory_bytes", "resources"),
    )
    while True:
        query = Pod.filter(id__gt=after, gmt_finished__isnull=False).order_by("id")
        pods = await query.limit(CHUNK).values(*fields)
        if not pods:
            return count
        after = pods[-1]["id"]
        await Store().upsert(Summary, [_summary(pod, rng) for pod in pods])  # type: ignore[misc]
        count += len(pods)


Asked = Callable[[random.Random], dict[str, Any]]


def _asking(asked: Asked, from_pods: bool) -> Callable[[random.Random], Awaitable[Any]]:
    """The roll-up of the month ``asked`` says, from the daily roll-up or the pods."""

    def query(rng: random.Random) -> Awaitable[Any]:
        return queries.rollup(since=MONTH, until=UNTIL, from_pods=from_pods, **asked(rng))

    return query


async def _streamed() -> float:
    started, count = time.perf_counter(), 0
    async for batch in queries.job_usage(MONTH, UNTIL):
        count += len(batch)
    return count / (time.perf_counter() - started)


async def run(url: str, jobs: int, pods_per_job: int) -> dict[str, tuple[float, float]]:
    """Fill a database, then time each question; name -> (p50 ms, p99 ms); the per-job
    facts' rate as (jobs/s, 0)."""
    # The figure is the query's, not the API's budget (JOBARCHIVE_API_TIMEOUT).
    await db.open_database(url, encryption=DbTls(), read_pool=ReadPool(url, timeout=600))
    try:
        started = time.perf_counter()
        await fill_month(jobs, pods_per_job)
        classified = await classify_month()
        summarised = await summarise_month()
        await db.connection().execute_script(
            "ANALYZE TABLE job_info, replica_info, usage_day, job_failure, pod_efficiency"
        )
        print(
            f"  (filled in {time.perf_counter() - started:.0f} s; {classified:,} classified, "
            f"{summarised:,} pods summarised)"
        )
        jobs_page = "jobarchive jobs: newest page (baseline)"
        questions: dict[str, Asked] = {
            "a month by namespace": lambda rng: {"group_by": "namespace"},
            "a month by queue, every day": lambda rng: {"group_by": "queue", "every": "day"},
            "a month by failure class": lambda rng: {"group_by": "failure"},
            "a month of one namespace by owner": lambda rng: {
                "group_by": "owner",
                "namespace": f"team-{rng.randrange(60)}",
            },
        }
        timings = {jobs_page: await measure(lambda rng: queries.list_jobs(JobQuery()), repeat=5)}
        for question, asked in questions.items():
            for source, from_pods, repeat in (("roll-up table", False, 5), ("pods", True, 3)):
                name = f"usage: {question}, from the {source}"
                timings[name] = await measure(_asking(asked, from_pods), repeat=repeat)
            rolled = await _asking(asked, False)(random.Random(1))
            live = await _asking(asked, True)(random.Random(1))
            print(f"  ({question}: the same rows from both: {'yes' if rolled == live else 'NO'})")
            for one, other in [
                pair for pair in zip(rolled, live, strict=False) if pair[0] != pair[1]
            ][:3]:
                print("    ", {k: (v, other.get(k)) for k, v in one.items() if other.get(k) != v})
        timings["usage: per-job facts of the month, jobs/s"] = (await _streamed(), 0.0)
        return timings
    finally:
        await db.close_database()
