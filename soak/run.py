"""One soak: a private MariaDB server, the emulated API, the real operator; the workload
and the faults for the time asked; then a quiet period in which the operator catches
up and reconciles, and the comparison of the archive with the truth, repeated until it
holds or the settling time is over. The last comparison's violations are the verdict.
"""

import asyncio
import collections
import dataclasses
import functools
import pathlib
import random
import shutil
import tempfile
import time
from collections.abc import Callable

from jobarchive.core.kinds import BUILTIN_KINDS, INTERMEDIATE_KINDS
from soak import faults
from soak.checker import Checker, read_tables
from soak.operators import Supervisor
from soak.timeline import Timeline
from soak.truth import EVENTS, JOBS, PODS, Row, Truth
from soak.workload import Workload
from testbed.cluster import EVENTS as EVENT_RESOURCE
from testbed.cluster import PODS as POD_RESOURCE
from testbed.cluster import Cluster, emulated_cluster, job_resource
from testbed.mariadb import Databases, MariaDBServer
from testbed.operator import write_kubeconfig
from testbed.watches import Watches

WATCHED = [POD_RESOURCE, EVENT_RESOURCE, *map(job_resource, (*BUILTIN_KINDS, *INTERMEDIATE_KINDS))]
# Pause between two comparisons while the operator settles.
RECHECK_EVERY = 5.0
VIOLATIONS_SHOWN = 200
# The emulator forgets the requests it served but the last few, this often: a request
# is matched to its reaction without a pause once it is logged, unless the emulator's
# lock is held by another one being stored.
FORGET_EVERY, REQUESTS_KEPT = 0.05, 16


@dataclasses.dataclass(frozen=True)
class Options:
    """What a soak runs: for how long, how hard, from which seed, how patient."""

    minutes: float = 10.0
    seed: int = 0
    jobs_per_minute: float = 12.0
    faults_per_minute: float = 3.0
    # JOBARCHIVE_RESYNC_INTERVAL: deletes missed while the operator was down are found.
    resync: int = 10
    # Seconds a state must last in healthy time to be owed a row, and the catch-up
    # margin after each disruption.
    lag: float = 10.0
    catch_up: float = 20.0
    # Longest wait after the workload for the archive to match the truth.
    settle: float = 120.0
    event_ttl: float = 120.0
    keep: bool = False


@dataclasses.dataclass
class Summary:
    """What a soak did and found."""

    seed: int
    objects: collections.Counter[str]
    faults: collections.Counter[str]
    seconds: float
    violations: list[str]
    workdir: pathlib.Path

    def lines(self) -> list[str]:
        """The summary as printed: objects, faults, duration and violations."""
        objects = ", ".join(f"{n} {what}" for what, n in sorted(self.objects.items()))
        injected = ", ".join(f"{self.faults[kind]} {kind}" for kind in faults.TYPES)
        return [
            f"soak seed {self.seed}: {objects}",
            f"faults: {injected}",
            f"duration {self.seconds:.0f} s, violations {len(self.violations)}",
        ]


async def soak(options: Options, say: Callable[[str], None] = print) -> Summary:
    """Run one soak, print its violations and summary, and return the summary."""
    workdir = pathlib.Path(tempfile.mkdtemp(prefix="jobarchive-soak-"))
    server = MariaDBServer()
    try:
        await asyncio.to_thread(server.start)
        url = Databases(server.url).create("jobarchive_soak")
        summary = await _soak(options, server, url, workdir, say)
    finally:
        await asyncio.to_thread(server.remove)
    for line in summary.violations[:VIOLATIONS_SHOWN]:
        say(f"VIOLATION {line}")
    if len(summary.violations) > VIOLATIONS_SHOWN:
        say(f"... and {len(summary.violations) - VIOLATIONS_SHOWN} more")
    for line in summary.lines():
        say(line)
    if options.keep or summary.violations:
        say(f"operator logs kept in {workdir}")
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    return summary


async def _soak(
    options: Options,
    server: MariaDBServer,
    url: str,
    workdir: pathlib.Path,
    say: Callable[[str], None],
) -> Summary:
    rng = random.Random(options.seed)
    seconds = options.minutes * 60
    count = round(options.faults_per_minute * options.minutes)
    plan = faults.plan(random.Random(rng.random()), seconds, count)
    say(
        f"soak seed {options.seed}: {options.minutes:g} min of workload, {len(plan)} faults planned"
    )
    began = time.monotonic()
    async with emulated_cluster() as cluster:
        watches = Watches(cluster, WATCHED)
        forgetting = asyncio.create_task(_forget_requests(cluster))
        write_kubeconfig(workdir / "kubeconfig", cluster.url)
        loop = asyncio.get_running_loop()
        timeline = Timeline(options.lag, options.catch_up, loop.time)
        supervisor = Supervisor(
            workdir, workdir / "kubeconfig", _environment(url, options), watches, timeline
        )
        truth = Truth(cluster, loop.time)
        injector = faults.Injector(supervisor, server, watches, timeline, say)
        read = functools.partial(read_tables, server.url, url.rsplit("/", 1)[1])
        try:
            violations = await _run(
                options, rng, plan, truth, timeline, supervisor, injector, read, say
            )
        finally:
            code = await supervisor.stop()
            forgetting.cancel()
        if code not in (0, None):
            violations.append(f"the operator's SIGTERM ended it with status {code}")
        violations[:0] = [
            *supervisor.failures,
            *(f"operator traceback: {line}" for line in supervisor.tracebacks()),
        ]
    objects: collections.Counter[str] = collections.Counter()
    names = {JOBS: "jobs", PODS: "pods", EVENTS: "Events", None: "unrelated objects"}
    for tracked in truth.objects.values():
        objects[names[tracked.table]] += 1
    seconds = time.monotonic() - began
    return Summary(options.seed, objects, injector.counts, seconds, violations, workdir)


def _environment(url: str, options: Options) -> dict[str, str | None]:
    """The operator's environment: the soak's database, a short resync, retention on,
    and nothing inherited that would point it elsewhere (None removes a variable)."""
    env: dict[str, str | None] = {
        "JOBARCHIVE_DB_URL": url,
        "JOBARCHIVE_RESYNC_INTERVAL": str(options.resync),
        # On, as in production; nothing the soak makes is old enough to be pruned.
        "JOBARCHIVE_RETENTION_DAYS": "30",
    }
    for inherited in (
        "REGION",
        "MYSQL_HOST",
        "JOBARCHIVE_DB_URL_FILE",
        "JOBARCHIVE_READ_DB_URL",
        "JOBARCHIVE_READ_DB_URL_FILE",
        "JOBARCHIVE_DB_TLS",
        "JOBARCHIVE_DB_TLS_CA",
        "JOBARCHIVE_API_PORT",
    ):
        env[inherited] = None
    return env


async def _run(
    options: Options,
    rng: random.Random,
    plan: list[faults.Fault],
    truth: Truth,
    timeline: Timeline,
    supervisor: Supervisor,
    injector: faults.Injector,
    read: Callable[[], dict[str, list[Row]]],
    say: Callable[[str], None],
) -> list[str]:
    """Start the operator, play the workload and the faults, settle; the violations."""
    await supervisor.start()
    while timeline.disrupted_now and not supervisor.failures:
        await asyncio.sleep(0.1)
    if supervisor.failures:
        say(supervisor.log_tail())
        return ["the operator did not start"]
    workload = Workload(truth, rng, options.jobs_per_minute, options.event_ttl)
    say(f"+{timeline.offset():.1f} s  the operator watches; workload starts")
    started = timeline.clock()
    await asyncio.gather(workload.run(options.minutes * 60), injector.run(plan, started))
    say(f"+{timeline.offset():.1f} s  workload over ({workload.lives} job lives); settling")
    return [*workload.errors, *await _settle(options, truth, timeline, read, say)]


async def _forget_requests(cluster: Cluster) -> None:
    """Keep the emulator's cost per request flat (``Cluster.forget_requests``)."""
    while True:
        cluster.forget_requests(REQUESTS_KEPT)
        await asyncio.sleep(FORGET_EVERY)


async def _settle(
    options: Options,
    truth: Truth,
    timeline: Timeline,
    read: Callable[[], dict[str, list[Row]]],
    say: Callable[[str], None],
) -> list[str]:
    """Compare until the archive matches or ``settle`` seconds have passed."""
    checker = Checker(truth, timeline)
    deadline = timeline.clock() + options.settle
    while True:
        now = timeline.clock()
        violations = checker.check(await asyncio.to_thread(read), now)
        if not violations or now > deadline:
            say(f"+{timeline.offset():.1f} s  {len(violations)} violations; {checker.coverage}")
            return violations
        await asyncio.sleep(RECHECK_EVERY)
