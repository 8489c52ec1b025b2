"""One tenant cannot hold the read pool (issue 35): another tenant's list requests,
alone and while the first keeps its costliest usage requests in flight, measured in
the same run against the same real ``jobarchive serve`` (``--auth none``, each client
address a caller of its own, every other setting its default).

The archive: ``jobs`` jobs in the attacker's namespace ``big``, ``pods`` pods each that
never finished (so the usage roll-up reads every one live: the worst case), and a few
jobs in the victim's ``small``. The attacker keeps ``in_flight`` requests of
``usage?namespace=big&since=1000-01-02&until=9999-01-01`` going from 127.0.0.2; the
victim lists ``small``'s jobs ``requests`` times, one after another, from 127.0.0.1.
The figures: the victim's p50 and p99 alone and beside the attacker, how many of its
requests were turned away (503), and what the attacker's requests were answered."""

import asyncio
import collections
import dataclasses
import pathlib
import tempfile
import time

import aiohttp

from bench.e2e_bench import percentiles
from bench.kubectl_bench import serving
from jobarchive.config import DbTls
from jobarchive.storage import database as db
from jobarchive.storage.models import Job
from jobarchive.storage.readpool import ReadPool
from jobarchive.storage.store import Store
from testbed import bulk

WORST = "/api/v1/usage?namespace=big&since=1000-01-02&until=9999-01-01"
LISTED = "/api/v1/jobs?namespace=small"


@dataclasses.dataclass
class Figures:
    """The victim's seconds per request and statuses; the attacker's statuses."""

    victim: list[float] = dataclasses.field(default_factory=list)
    victim_statuses: collections.Counter[int] = dataclasses.field(
        default_factory=collections.Counter
    )
    attacker_statuses: collections.Counter[int] = dataclasses.field(
        default_factory=collections.Counter
    )


async def _fill(url: str, jobs: int, pods: int) -> None:
    await db.open_database(url, encryption=DbTls(), read_pool=ReadPool(url))
    try:
        await bulk.fill(jobs, pods, namespace="big", events=False)
        small = [row for _, row in bulk.archive(5, 0, seed=3, namespace="small")]
        await Store().upsert(Job, small)
        await db.connection().execute_script("ANALYZE TABLE job_info, replica_info, usage_day")
    finally:
        await db.close_database()


def _client(address: str) -> aiohttp.ClientSession:
    """A client whose connections come from ``address``: a caller of its own."""
    connector = aiohttp.TCPConnector(local_addr=(address, 0), limit=0)
    return aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=300))


async def _victim(session: aiohttp.ClientSession, url: str, requests: int, into: Figures) -> None:
    for _ in range(requests):
        started = time.perf_counter()
        async with session.get(url) as response:
            await response.read()
            into.victim_statuses[response.status] += 1
        into.victim.append(time.perf_counter() - started)


async def _attacked(origin: str, requests: int, in_flight: int) -> Figures:
    """The victim's requests while the attacker keeps ``in_flight`` going; they start
    once the attacker's first answer came (the pool is then the attacker's)."""
    figures, stop, answered = Figures(), asyncio.Event(), asyncio.Event()
    async with _client("127.0.0.2") as attacker, _client("127.0.0.1") as victim:

        async def attack() -> None:
            while not stop.is_set():
                async with attacker.get(origin + WORST) as response:
                    await response.read()
                    figures.attacker_statuses[response.status] += 1
                answered.set()

        attacks = [asyncio.create_task(attack()) for _ in range(in_flight)]
        try:
            await asyncio.wait_for(answered.wait(), 300)
            await _victim(victim, origin + LISTED, requests, figures)
        finally:
            stop.set()
            await asyncio.gather(*attacks)
    return figures


async def run(url: str, jobs: int, pods: int, requests: int, in_flight: int) -> list[Figures]:
    """Fill a database, then measure the victim alone, then beside the attacker."""
    started = time.perf_counter()
    await _fill(url, jobs, pods)
    print(f"  (filled in {time.perf_counter() - started:.0f} s)", flush=True)
    with tempfile.TemporaryDirectory() as workdir:
        async with serving(url, pathlib.Path(workdir)) as origin:
            alone = Figures()
            async with _client("127.0.0.1") as victim:
                await _victim(victim, origin + LISTED, 3, Figures())  # warm the path
                await _victim(victim, origin + LISTED, requests, alone)
            return [alone, await _attacked(origin, requests, in_flight)]


def p50(figures: Figures) -> float:
    """The victim's median seconds per request."""
    return percentiles(figures.victim)[0]


def shown(alone: Figures, attacked: Figures) -> dict[str, str]:
    """The figures as printed, label -> value."""
    return {
        "victim list p50 / p99 ms, alone": _ms(alone),
        "victim list p50 / p99 ms, beside the attacker": _ms(attacked),
        "victim answers beside the attacker": _statuses(attacked.victim_statuses),
        "attacker answers meanwhile": _statuses(attacked.attacker_statuses),
    }


def _ms(figures: Figures) -> str:
    median, p99 = percentiles(figures.victim)
    return f"{median * 1000:.0f} / {p99 * 1000:.0f}"


def _statuses(counted: collections.Counter[int]) -> str:
    return ", ".join(f"{count} x {status}" for status, count in sorted(counted.items()))
