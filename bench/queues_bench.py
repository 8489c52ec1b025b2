"""Usage by Kueue's cluster queue over a month (decisions 44, 45): ``usage_bench``'s month
(``jobs`` jobs, ``jobs x pods`` pods), every job admitted by Kueue to one of four cluster
queues (one attempt each, a failed job's ended by a preemption), each queue's quota
changed mid-month; the attempts inserted behind the store's back, so that the roll-up
(``queue_span``) is filled as ``jobarchive migrate`` fills it (timed); rolled up by
cluster queue over the month, and per day, from the roll-up and from every pod (the
baseline)."""

import datetime
import random
import time
from typing import Any

from bench.query_bench import measure
from bench.usage_bench import MONTH, UNTIL, fill_month
from jobarchive.config import DbTls
from jobarchive.core.rows import QuotaRow
from jobarchive.reading import queries
from jobarchive.storage import database as db
from jobarchive.storage import spans
from jobarchive.storage.kueue import Quota
from jobarchive.storage.readpool import ReadPool
from jobarchive.storage.store import Store

# usage_bench's queues (NULL as "default"), each a cluster queue.
QUEUES = ("research", "production", "batch", "default")
MIDDLE = MONTH + datetime.timedelta(days=15)
# One attempt per job, from its creation; a failed job's preempted at its end.
ATTEMPTS = (
    "INSERT INTO job_attempt (attempt_id, version, job_id, workload_id, workload_name, "
    "namespace, cluster_queue, local_queue, flavors, quota_reserved_at, admitted_at, "
    "running_at, ended_at, end_reason, gmt_created, gmt_modified, cluster) "
    "SELECT CONCAT(j.job_id, '/1'), '1', j.job_id, CONCAT('wl-', j.job_id), j.name, "
    "j.namespace, CONCAT('cq-', COALESCE(j.queue, 'default')), 'lq', '{}', j.gmt_created, "
    "j.gmt_created, j.gmt_job_running, j.gmt_finished, CASE WHEN j.status = 'Failed' THEN "
    "'Preempted' WHEN j.gmt_finished IS NULL THEN NULL ELSE 'Finished' END, j.gmt_created, "
    "j.gmt_created, j.cluster FROM job_info j"
)


def _quotas() -> list[QuotaRow]:
    """Each queue's A100s: 2,000 until mid-month, 1,000 after."""
    rows: list[QuotaRow] = []
    for queue in QUEUES:
        for key, nominal, since, until in ((1, 2000, MONTH, MIDDLE), (2, 1000, MIDDLE, None)):
            rows.append(
                {
                    "quota_id": f"cq-{queue}/{key}",
                    "version": "1",
                    "queue_id": f"cq-{queue}",
                    "cluster_queue": f"cq-{queue}",
                    "cohort": None,
                    "flavor": "a100",
                    "resource": "nvidia.com/gpu",
                    "nominal": nominal,
                    "borrowing_limit": None,
                    "lending_limit": None,
                    "valid_from": since,
                    "valid_until": until,
                    "gmt_created": since,
                }
            )
    return rows


async def run(url: str, jobs: int, pods_per_job: int) -> dict[str, tuple[float, float]]:
    """Fill a database, then time each roll-up: name -> (p50 ms, p99 ms)."""
    await db.open_database(url, encryption=DbTls(), read_pool=ReadPool(url, timeout=600))
    try:
        started = time.perf_counter()
        await fill_month(jobs, pods_per_job)
        await db.connection().execute_script(ATTEMPTS)
        await Store().upsert(Quota, _quotas())
        print(f"  (filled in {time.perf_counter() - started:.0f} s)", flush=True)
        started = time.perf_counter()
        attempts = await spans.fill(db.connection())
        took = time.perf_counter() - started
        print(f"  (roll-up filled from {attempts:,} attempts in {took:.0f} s)", flush=True)
        await db.connection().execute_script(
            "ANALYZE TABLE job_info, replica_info, job_attempt, queue_quota, queue_span"
        )
        asked: dict[str, dict[str, Any]] = {
            "usage by clusterqueue: a month": {},
            "usage by clusterqueue: a month, every day": {"every": "day"},
            "baseline: a month from every pod": {"from_pods": True},
        }
        timings = {}
        for name, extra in asked.items():

            def query(rng: random.Random, extra: dict[str, Any] = extra) -> Any:
                return queries.rollup("clusterqueue", since=MONTH, until=UNTIL, **extra)

            timings[name] = await measure(query, repeat=3)
        return timings
    finally:
        await db.close_database()
