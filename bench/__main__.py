"""``make bench``: every benchmark, each figure beside its baseline measured in the same run.

Starts a MariaDB server of its own for the run (``testbed.mariadb``), or uses the
external one ``JOBARCHIVE_TEST_MYSQL_URL`` names, working in databases of its own
that it drops at the end.
"""

import argparse
import asyncio
import os
import sys

from bench import (
    cli_bench,
    console_bench,
    e2e_bench,
    efficiency_bench,
    export_bench,
    fair_bench,
    first_run_bench,
    kubectl_bench,
    logtails_bench,
    memory_bench,
    query_bench,
    queues_bench,
    reads_bench,
    reviews_bench,
    scale_bench,
    store_bench,
    usage_bench,
    workloads_bench,
)
from jobarchive.config import DEFAULTS
from testbed.mariadb import Databases, server_for_run

BENCHES = [
    "store",
    "e2e",
    "queries",
    "usage",
    "queues",
    "reads",
    "reviews",
    "fair",
    "logtails",
    "workloads",
    "console",
    "kubectl",
    "cli",
    "firstrun",
    "export",
    "scale",
    "memory",
    "efficiency",
]


def line(label: str, value: str, note: str = "") -> None:
    print(f"  {label:<44} {value:>14}  {note}".rstrip(), flush=True)


def ratio(label: str, value: float, target: float, higher_is_better: bool = True) -> bool:
    met = value >= target if higher_is_better else value <= target
    sign = ">=" if higher_is_better else "<="
    line(label, f"{value:.2f}", f"target {sign} {target}: {'met' if met else 'MISSED'}")
    return met


async def main(args: argparse.Namespace) -> int:
    with server_for_run(os.environ.get("JOBARCHIVE_TEST_MYSQL_URL")) as (server_url, server):
        return await _measure(args, Databases(server_url), server.pid if server else None)


async def _measure(args: argparse.Namespace, databases: Databases, server_pid: int | None) -> int:
    results: list[bool] = []
    try:
        if "store" in args.only:
            url = databases.create("jobarchive_bench")
            print(
                f"Store: {args.jobs} jobs x {args.pods} pods + 1 Event each, insert and update pass"
            )
            figures = await store_bench.run(url, args.jobs, args.pods)
            for name in ("naive", "store", "raw"):
                line(f"{name} upserts/s", f"{figures[name]:,.0f}")
            results.append(ratio("store/naive", figures["store"] / figures["naive"], 10))
            results.append(ratio("store/raw", figures["store"] / figures["raw"], 0.6))
        if "e2e" in args.only:
            results.extend(await e2e_bench.run(databases, line, ratio, args, server_pid))
        if "queries" in args.only:
            url = databases.create("jobarchive_bench_queries")
            pods = args.query_jobs * args.query_pods
            print(
                f"Queries: {args.query_jobs:,} jobs, {pods:,} pods, {pods:,} Events; p50 / p99 ms"
            )
            timings = await query_bench.run(url, args.query_jobs, args.query_pods)
            for name, (p50, p99) in timings.items():
                line(name, f"{p50:.1f} / {p99:.1f}")
            cursor = timings["jobs: deep page by cursor"][0]
            offset = timings["baseline: deep page by OFFSET"][0]
            line("deep page: OFFSET p50 / cursor p50", f"{offset / cursor:.1f}x")
        if "usage" in args.only:
            url = databases.create("jobarchive_bench_usage")
            pods = args.usage_jobs * args.usage_pods
            print(f"Usage: a month of {args.usage_jobs:,} jobs and {pods:,} pods; p50 / p99 ms")
            timings = await usage_bench.run(url, args.usage_jobs, args.usage_pods)
            for name, (p50, p99) in timings.items():
                line(name, f"{p50:,.0f}" if p99 == 0 else f"{p50:.1f} / {p99:.1f}")
            month = timings["usage: a month by namespace, from the roll-up table"][0] / 1000
            results.append(ratio("usage of a month p50, s", month, 1.0, higher_is_better=False))
        if "queues" in args.only:
            url = databases.create("jobarchive_bench_queues")
            pods = args.usage_jobs * args.usage_pods
            print(f"Queues: a month of {args.usage_jobs:,} jobs and {pods:,} pods; p50 / p99 ms")
            timings = await queues_bench.run(url, args.usage_jobs, args.usage_pods)
            for name, (p50, p99) in timings.items():
                line(name, f"{p50:.1f} / {p99:.1f}")
            month = timings["usage by clusterqueue: a month"][0] / 1000
            live = timings["baseline: a month from every pod"][0] / 1000
            line("a month from every pod / from the roll-up", f"{live / month:.1f}x")
            results.append(ratio("usage by clusterqueue of a month p50, s", month, 1.0, False))
        if "reads" in args.only:
            results.extend(await reads_bench.run(databases, server_pid, line, ratio, args))
        if "reviews" in args.only:
            results.extend(await reviews_bench.run(databases, line, ratio, args))
        if "fair" in args.only:
            url = databases.create("jobarchive_bench_fair")
            print(
                f"Fair reads: {args.fair_jobs:,} jobs of {args.fair_pods} running pods; one "
                f"tenant keeps {args.fair_in_flight} worst usage requests in flight, another "
                f"lists jobs {args.fair_requests} times"
            )
            alone, attacked = await fair_bench.run(
                url, args.fair_jobs, args.fair_pods, args.fair_requests, args.fair_in_flight
            )
            for label, shown in fair_bench.shown(alone, attacked).items():
                line(label, shown)
            slower = fair_bench.p50(attacked) / fair_bench.p50(alone)
            results.append(ratio("victim p50 beside the attacker / alone", slower, 3.0, False))
        if "logtails" in args.only:
            results.extend(await logtails_bench.run(databases, line, ratio, args))
        if "efficiency" in args.only:
            results.extend(await efficiency_bench.run(databases, line, ratio, args))
        if "workloads" in args.only:
            results.extend(await workloads_bench.run(databases, line, ratio, args))
        if "console" in args.only:
            url = databases.create("jobarchive_bench_console")
            print(f"Console: the page of a {args.console_pods:,}-pod job; p50 / p99 ms, size")
            pages = await console_bench.run(url, args.console_pods)
            for name, (p50, p99, size) in pages.items():
                line(name, f"{p50 * 1000:.0f} / {p99 * 1000:.0f}", f"{size / 1000:,.0f} kB")
            page_p50, _, page_size = pages["console: job page"]
            results.append(ratio("job page p50, s", page_p50, 0.5, higher_is_better=False))
            results.append(ratio("job page weight, kB", page_size / 1000, 200, False))
        if "kubectl" in args.only:
            url = databases.create("jobarchive_bench_kubectl")
            print(
                f"kubectl: a namespace of {args.kubectl_jobs:,} jobs, pages of 500; "
                "p50 / p99 ms per page, pages"
            )
            paging, took = await kubectl_bench.run(url, args.kubectl_jobs)
            for name, (p50, p99, count) in paging.items():
                line(name, f"{p50 * 1000:.0f} / {p99 * 1000:.0f}", f"{count} pages")
            line("kubectl get, the whole run, s", f"{took:.1f}", "discovery, pages, printing")
            kubectl_p50 = paging["kubectl get --chunk-size=500 page"][0]
            json_p50 = paging["JSON API /api/v1/jobs page"][0]
            line("kubectl page p50 / JSON API page p50", f"{kubectl_p50 / json_p50:.2f}x")
        if "cli" in args.only:
            print("Command line: start to exit, p50 / p99 ms")
            started = await cli_bench.run()
            for name, (p50, p99) in started.items():
                line(name, f"{p50 * 1000:.0f} / {p99 * 1000:.0f}")
            help_p50 = started["jobarchive --help"][0]
            results.append(ratio("jobarchive --help p50, s", help_p50, 0.5, False))
        if "firstrun" in args.only:
            print("First run: make run without a cluster, make demo, discovery; seconds")
            url = databases.create("jobarchive_bench_first_run")
            for name, (took, target) in (await first_run_bench.run(url)).items():
                if target:
                    results.append(ratio(name, took, target, higher_is_better=False))
                else:
                    line(name, f"{took:.2f}")
        if "export" in args.only:
            url = databases.create("jobarchive_bench_export")
            pods = args.usage_jobs * args.usage_pods
            print(f"Export: a month of {args.usage_jobs:,} jobs and {pods:,} pods, and a day")
            for name, (value, note) in (
                await export_bench.run(url, args.usage_jobs, args.usage_pods)
            ).items():
                line(name, f"{value:,.2f}", note)
        if "scale" in args.only:
            results.append(await scale_bench.run(databases, line, args, server_pid))
        if "memory" in args.only:
            results.append(await memory_bench.run(databases, line, args))
    finally:
        databases.drop_all()
    print("all targets met" if all(results) else "some targets missed")
    return 0


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="make bench")
    parser.add_argument(
        "--only",
        nargs="+",
        default=BENCHES,
        choices=BENCHES,
    )
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
    args = parser.parse_args(argv)
    if args.large and 100_000 not in args.catch_up_sizes:
        args.catch_up_sizes.append(100_000)
    if args.large and 100_000 not in args.memory_sizes:
        args.memory_sizes.append(100_000)
    return args


if __name__ == "__main__":
    sys.exit(asyncio.run(main(parse(sys.argv[1:]))))
