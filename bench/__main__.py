"""``make bench``: every benchmark, each figure beside its baseline measured in the same run.

Starts a MariaDB server of its own for the run (``testbed.mariadb``), or uses the
external one ``JOBARCHIVE_TEST_MYSQL_URL`` names, working in databases of its own
that it drops at the end.
"""

import argparse
import asyncio
import os
import sys
from collections.abc import Awaitable, Callable

from bench import (
    e2e_bench,
    efficiency_bench,
    logtails_bench,
    memory_bench,
    reads_bench,
    reviews_bench,
    scale_bench,
    sections,
    workloads_bench,
)
from bench.report import Run, line, ratio
from jobarchive.config import DEFAULTS
from testbed.mariadb import Databases, server_for_run

Section = Callable[[Run], Awaitable[list[bool]]]


async def _e2e(run: Run) -> list[bool]:
    return await e2e_bench.run(run.databases, line, ratio, run.args, run.server_pid)


async def _reads(run: Run) -> list[bool]:
    return await reads_bench.run(run.databases, run.server_pid, line, ratio, run.args)


async def _reviews(run: Run) -> list[bool]:
    return await reviews_bench.run(run.databases, line, ratio, run.args)


async def _logtails(run: Run) -> list[bool]:
    return await logtails_bench.run(run.databases, line, ratio, run.args)


async def _efficiency(run: Run) -> list[bool]:
    return await efficiency_bench.run(run.databases, line, ratio, run.args)


async def _workloads(run: Run) -> list[bool]:
    return await workloads_bench.run(run.databases, line, ratio, run.args)


async def _scale(run: Run) -> list[bool]:
    return [await scale_bench.run(run.databases, line, run.args, run.server_pid)]


async def _memory(run: Run) -> list[bool]:
    return [await memory_bench.run(run.databases, line, run.args)]


# Every benchmark by its name for ``--only``, in the order a run measures them.
SECTIONS: dict[str, Section] = {
    "store": sections.store,
    "e2e": _e2e,
    "queries": sections.queries,
    "usage": sections.usage,
    "queues": sections.queues,
    "reads": _reads,
    "reviews": _reviews,
    "fair": sections.fair,
    "logtails": _logtails,
    "efficiency": _efficiency,
    "workloads": _workloads,
    "console": sections.console,
    "kubectl": sections.kubectl,
    "cli": sections.cli,
    "firstrun": sections.first_run,
    "export": sections.export,
    "scale": _scale,
    "memory": _memory,
}
BENCHES = list(SECTIONS)


async def main(args: argparse.Namespace) -> int:
    with server_for_run(os.environ.get("JOBARCHIVE_TEST_MYSQL_URL")) as (server_url, server):
        return await _measure(Run(Databases(server_url), args, server.pid if server else None))


async def _measure(run: Run) -> int:
    results: list[bool] = []
    try:
        for name, section in SECTIONS.items():
            if name in run.args.only:
                results.extend(await section(run))
    finally:
        run.databases.drop_all()
    print("all targets met" if all(results) else "some targets missed")
    return 0


def parse(argv: list[str]) -> argparse.Namespace:
    """``make bench``'s arguments: which benchmarks, and each one's sizes."""
    parser = argparse.ArgumentParser(prog="make bench")
    parser.add_argument("--only", nargs="+", default=BENCHES, choices=BENCHES)
    _recording(parser)
    _archives(parser)
    _reading(parser)
    _operators(parser)
    args = parser.parse_args(argv)
    if args.large and 100_000 not in args.catch_up_sizes:
        args.catch_up_sizes.append(100_000)
    if args.large and 100_000 not in args.memory_sizes:
        args.memory_sizes.append(100_000)
    return args


def _recording(parser: argparse.ArgumentParser) -> None:
    """The sizes of the store's, the end-to-end and the catch-up's runs."""
    parser.add_argument("--jobs", type=int, default=20)
    parser.add_argument("--pods", type=int, default=250)
    parser.add_argument(
        "--catch-up-sizes",
        type=int,
        nargs="+",
        default=[20_000],
        help="pods (and as many Events) per catch-up size",
    )
    parser.add_argument(
        "--large",
        action="store_true",
        help="also catch up 100,000 pods and 100,000 Events (end to end, memory)",
    )
    parser.add_argument("--runs", type=int, default=3, help="runs of each end-to-end figure")
    parser.add_argument("--rate", type=int, default=500)
    parser.add_argument("--seconds", type=int, default=10)


def _archives(parser: argparse.ArgumentParser) -> None:
    """The sizes of the archives the read benchmarks query."""
    parser.add_argument("--query-jobs", type=int, default=100_000)
    parser.add_argument("--query-pods", type=int, default=10, help="pods (and Events) per job")
    parser.add_argument("--usage-jobs", type=int, default=100_000, help="jobs of the month")
    parser.add_argument("--usage-pods", type=int, default=10, help="pods per job")
    parser.add_argument(
        "--kubectl-jobs", type=int, default=100_000, help="jobs of the namespace kubectl pages"
    )
    parser.add_argument("--fair-jobs", type=int, default=100_000, help="the attacker's jobs")
    parser.add_argument("--fair-pods", type=int, default=4, help="running pods per job")
    parser.add_argument("--fair-requests", type=int, default=20, help="the victim's lists")
    parser.add_argument("--fair-in-flight", type=int, default=4, help="the attacker's usage")
    parser.add_argument("--console-pods", type=int, default=2000, help="pods of the job drawn")


def _reading(parser: argparse.ArgumentParser) -> None:
    """The sizes of the reads beside recording, the reviews and the log tails."""
    parser.add_argument("--reads-jobs", type=int, default=20_000, help="jobs archived")
    parser.add_argument("--reads-pods", type=int, default=10, help="pods (and Events) per job")
    parser.add_argument("--reads-record", type=int, default=500, help="pods per burst")
    parser.add_argument("--reads-rounds", type=int, default=5, help="bursts, idle and flooded")
    parser.add_argument("--reads-clients", type=int, default=30, help="requests in flight")
    parser.add_argument(
        "--reads-concurrency",
        type=int,
        default=DEFAULTS.api_concurrency,
        help="JOBARCHIVE_API_CONCURRENCY",
    )
    parser.add_argument("--reviews-clients", type=int, default=30, help="the flood's in flight")
    parser.add_argument("--reviews-seconds", type=int, default=10, help="each figure's window")
    parser.add_argument("--logtails-failing", type=int, default=2000, help="failed workers")
    parser.add_argument("--logtails-pods", type=int, default=300, help="other pods per turn")
    parser.add_argument("--logtails-rounds", type=int, default=9, help="turns of each")


def _operators(parser: argparse.ArgumentParser) -> None:
    """The sizes of the runs of whole operators: efficiency, Workloads, memory, scale."""
    parser.add_argument("--efficiency-pods", type=int, default=2000, help="workers summarised")
    parser.add_argument("--workloads-jobs", type=int, default=200, help="jobs, a Workload each")
    parser.add_argument("--workloads-pods", type=int, default=20, help="pods (and Events) per job")
    parser.add_argument(
        "--memory-sizes",
        type=int,
        nargs="+",
        default=[20_000],
        help="kubelet-written pods (and as many Events) per memory catch-up",
    )
    parser.add_argument("--scale-pods", type=int, default=100_000, help="pods (and Events)")
    parser.add_argument("--scale-jobs", type=int, default=5000, help="jobs the pods spread over")
    parser.add_argument(
        "--scale-namespaces", type=int, default=100, help="namespaces; each shard serves half"
    )
    parser.add_argument(
        "--scale-env",
        nargs="*",
        type=scale_bench.setting,
        default=[],
        metavar="NAME=VALUE",
        help="settings of every operator of the scale run, e.g. JOBARCHIVE_WAITING_MAX=200000",
    )


if __name__ == "__main__":
    sys.exit(asyncio.run(main(parse(sys.argv[1:]))))
