"""Read latency with 100,000 jobs and 1,000,000 pods (and as many Events) stored.

Each main query runs many times with varied arguments; p50 and p99 are printed in
milliseconds. The baseline, measured on the same data in the same run, is how
KubeDL's console read these tables: pages by OFFSET and names by ``LIKE '%x%'``.
"""

import random
import time
from collections.abc import Awaitable, Callable
from typing import Any

from bench.e2e_bench import percentiles
from jobarchive.config import DbTls
from jobarchive.reading import queries
from jobarchive.reading.queries import EventQuery, JobQuery
from jobarchive.storage import database as db
from jobarchive.storage.models import Job
from jobarchive.storage.readpool import ReadPool
from testbed import bulk

REPEAT = 60
Query = Callable[[random.Random], Awaitable[Any]]


async def measure(query: Query, seed: int = 1, repeat: int = REPEAT) -> tuple[float, float]:
    rng = random.Random(seed)
    await query(rng)  # warm the buffer pool for this access path
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        await query(rng)
        samples.append(time.perf_counter() - started)
    p50, p99 = percentiles(samples)
    return p50 * 1000, p99 * 1000


async def _deep_cursor(depth: int) -> str:
    row = await Job.all().order_by("-gmt_created", "-id").offset(depth).first()
    if row is None:
        raise ValueError(f"the archive holds no job {depth} deep")
    return queries.encode_cursor("jobs", row.gmt_created, row.id)


async def _offset_page(depth: int) -> list[Any]:
    rows: list[Any] = await Job.all().order_by("-gmt_created", "-id").offset(depth).limit(50)
    return rows


async def run(url: str, jobs: int, pods_per_job: int) -> dict[str, tuple[float, float]]:
    """Fill a database, then time each query; returns name -> (p50 ms, p99 ms)."""
    await db.open_database(url, encryption=DbTls(), read_pool=ReadPool(url))
    try:
        started = time.perf_counter()
        await bulk.fill(jobs, pods_per_job)
        await db.connection().execute_script("ANALYZE TABLE job_info, replica_info, event_info")
        print(f"  (filled in {time.perf_counter() - started:.0f} s)", flush=True)
        uids = [str(uid) for uid in await Job.all().limit(2000).values_list("job_id", flat=True)]
        # Page 101 of 50, or halfway through a smaller archive.
        depth = min(5000, jobs // 2)
        deep = await _deep_cursor(depth)
        since = queries.parse_time("2026-09-01", "since")
        cases: dict[str, Query] = {
            "jobs: newest page": lambda rng: queries.list_jobs(JobQuery()),
            "jobs: deep page by cursor": lambda rng: queries.list_jobs(JobQuery(), cursor=deep),
            "baseline: deep page by OFFSET": lambda rng: _offset_page(depth),
            "jobs: namespace + status": lambda rng: queries.list_jobs(
                JobQuery(namespace=f"team-{rng.randrange(60)}", status="Failed")
            ),
            "jobs: owner since a date": lambda rng: queries.list_jobs(
                JobQuery(owner=f"user-{rng.randrange(300)}", created_since=since)
            ),
            "jobs: name prefix in namespace": lambda rng: queries.list_jobs(
                JobQuery(namespace=f"team-{rng.randrange(60)}", name_prefix="llama")
            ),
            "baseline: name LIKE '%x%' in namespace": lambda rng: queries.list_jobs(
                JobQuery(namespace=f"team-{rng.randrange(60)}", name_contains="llama")
            ),
            "job: detail with pods and Events": lambda rng: queries.job_detail(rng.choice(uids)),
            "events: Warnings of a reason since": lambda rng: queries.list_events(
                EventQuery(reason="OOMKilling", since=since)
            ),
            "stats: by status over 90 days": lambda rng: queries.stats("status", since),
        }
        return {name: await measure(query) for name, query in cases.items()}
    finally:
        await db.close_database()
