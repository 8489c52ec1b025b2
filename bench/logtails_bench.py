"""Recording beside the log tails' capture: the real operator (``kopf run``) on an
emulated cluster whose 2,000 workers of one job all failed at once, each log read from
a slow node (``testbed.mass_failure``, the scenario of ``tests/e2e/test_log_tails.py``),
records batches of other pods in turns: with every read held, as without a capture,
and while the capture reads at its rate and concurrency. The medians of the turns are
compared: the capture must not slow the recording of everything else.
"""

import pathlib
import statistics
import tempfile
from collections.abc import Callable
from typing import Any

from jobarchive.config import DbTls
from jobarchive.storage import database as db
from jobarchive.storage.models import LogTail
from testbed import mass_failure
from testbed.cluster import EVENTS, PODS, Feed, emulated_cluster
from testbed.logs import Logs
from testbed.mariadb import Databases
from testbed.operator import OperatorProcess, write_kubeconfig

# The reads at once, as in the test: with the slow node, this limit binds beside the rate.
CONCURRENCY = 4
TARGET = 1.2


async def measure(url: str, args: Any) -> tuple[mass_failure.Turns, int]:
    """The turns' seconds, and how many tails were captured by the end."""
    env: dict[str, str | None] = {
        "JOBARCHIVE_DB_URL": url,
        "JOBARCHIVE_LOG_CONCURRENCY": str(CONCURRENCY),
        # Every failure queued, so that the reads go on through every turn.
        "JOBARCHIVE_LOG_TAILS_PER_NAMESPACE": str(args.logtails_failing),
    }
    with tempfile.TemporaryDirectory(prefix="jobarchive-bench-") as tmp:
        async with emulated_cluster() as cluster:
            logs, feed = Logs(cluster), Feed(cluster, PODS)
            kubeconfig = pathlib.Path(tmp) / "kubeconfig"
            write_kubeconfig(kubeconfig, cluster.url)
            process = OperatorProcess(pathlib.Path(tmp), kubeconfig, env)
            await process.start()
            try:
                await cluster.wait_watching([PODS, EVENTS, mass_failure.PYTORCHJOBS])
                pods = args.logtails_pods
                await mass_failure.record_pods(cluster, feed, "warm-up", pods)
                job = await mass_failure.fail_en_masse(cluster, feed, logs, args.logtails_failing)
                taken = await mass_failure.turns(cluster, feed, logs, args.logtails_rounds, pods)
                uid = job["metadata"]["uid"]
                captured = await LogTail.filter(job_id=uid, captured=True).count()
            finally:
                logs.resume()
                await process.stop()
    return taken, captured


async def run(
    databases: Databases, line: Callable[..., None], ratio: Callable[..., bool], args: Any
) -> list[bool]:
    """Record the turns; print their medians and ranges, and whether the ratio is met."""
    print(
        f"Log tails: {args.logtails_failing:,} failed workers' logs read "
        f"({CONCURRENCY} at once, {mass_failure.SLOW_NODE:g} s each); {args.logtails_rounds} "
        f"turns of {args.logtails_pods} other pods recorded, reads held / reading"
    )
    url = databases.create("jobarchive_bench_logtails")
    await db.open_database(url, encryption=DbTls())
    try:
        taken, captured = await measure(url, args)
    finally:
        await db.close_database()
    quiet, during = statistics.median(taken.quiet), statistics.median(taken.during)
    line(
        f"{args.logtails_pods} pods recorded, no reads / capture, s",
        f"{quiet:.2f} / {during:.2f}",
        f"p50; turns {min(taken.quiet):.2f}-{max(taken.quiet):.2f} / "
        f"{min(taken.during):.2f}-{max(taken.during):.2f}",
    )
    line("tails captured by the end", f"{captured:,}", f"of {args.logtails_failing:,}")
    return [ratio("during the capture / without reads", during / quiet, TARGET, False)]
