"""The sections of ``make bench`` that print their own benchmark's figures: each given
the run (``report.Run``), each returning whether its targets were met."""

from bench import (
    cli_bench,
    console_bench,
    export_bench,
    fair_bench,
    first_run_bench,
    kubectl_bench,
    query_bench,
    queues_bench,
    store_bench,
    usage_bench,
)
from bench.report import Run, line, ratio


async def store(run: Run) -> list[bool]:
    """The store's upserts against a naive ORM loop and raw SQL."""
    args = run.args
    url = run.databases.create("jobarchive_bench")
    print(f"Store: {args.jobs} jobs x {args.pods} pods + 1 Event each, insert and update pass")
    figures = await store_bench.run(url, args.jobs, args.pods)
    for name in ("naive", "store", "raw"):
        line(f"{name} upserts/s", f"{figures[name]:,.0f}")
    return [
        ratio("store/naive", figures["store"] / figures["naive"], 10),
        ratio("store/raw", figures["store"] / figures["raw"], 0.6),
    ]


async def queries(run: Run) -> list[bool]:
    """The read queries of a large archive, a deep page by cursor against OFFSET."""
    args = run.args
    url = run.databases.create("jobarchive_bench_queries")
    pods = args.query_jobs * args.query_pods
    print(f"Queries: {args.query_jobs:,} jobs, {pods:,} pods, {pods:,} Events; p50 / p99 ms")
    timings = await query_bench.run(url, args.query_jobs, args.query_pods)
    for name, (p50, p99) in timings.items():
        line(name, f"{p50:.1f} / {p99:.1f}")
    cursor = timings["jobs: deep page by cursor"][0]
    offset = timings["baseline: deep page by OFFSET"][0]
    line("deep page: OFFSET p50 / cursor p50", f"{offset / cursor:.1f}x")
    return []


async def usage(run: Run) -> list[bool]:
    """Usage of a month from the daily roll-up, against reading the pods."""
    args = run.args
    url = run.databases.create("jobarchive_bench_usage")
    pods = args.usage_jobs * args.usage_pods
    print(f"Usage: a month of {args.usage_jobs:,} jobs and {pods:,} pods; p50 / p99 ms")
    timings = await usage_bench.run(url, args.usage_jobs, args.usage_pods)
    for name, (p50, p99) in timings.items():
        line(name, f"{p50:,.0f}" if p99 == 0 else f"{p50:.1f} / {p99:.1f}")
    month = timings["usage: a month by namespace, from the roll-up table"][0] / 1000
    return [ratio("usage of a month p50, s", month, 1.0, higher_is_better=False)]


async def queues(run: Run) -> list[bool]:
    """Usage by cluster queue of a month from its roll-up, against every pod."""
    args = run.args
    url = run.databases.create("jobarchive_bench_queues")
    pods = args.usage_jobs * args.usage_pods
    print(f"Queues: a month of {args.usage_jobs:,} jobs and {pods:,} pods; p50 / p99 ms")
    timings = await queues_bench.run(url, args.usage_jobs, args.usage_pods)
    for name, (p50, p99) in timings.items():
        line(name, f"{p50:.1f} / {p99:.1f}")
    month = timings["usage by clusterqueue: a month"][0] / 1000
    live = timings["baseline: a month from every pod"][0] / 1000
    line("a month from every pod / from the roll-up", f"{live / month:.1f}x")
    return [ratio("usage by clusterqueue of a month p50, s", month, 1.0, False)]


async def fair(run: Run) -> list[bool]:
    """A tenant's job lists beside another's worst usage requests, against alone."""
    args = run.args
    url = run.databases.create("jobarchive_bench_fair")
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
    return [ratio("victim p50 beside the attacker / alone", slower, 3.0, False)]


async def console(run: Run) -> list[bool]:
    """The console's page of a large job: its time and its weight."""
    url = run.databases.create("jobarchive_bench_console")
    print(f"Console: the page of a {run.args.console_pods:,}-pod job; p50 / p99 ms, size")
    pages = await console_bench.run(url, run.args.console_pods)
    for name, (p50, p99, size) in pages.items():
        line(name, f"{p50 * 1000:.0f} / {p99 * 1000:.0f}", f"{size / 1000:,.0f} kB")
    page_p50, _, page_size = pages["console: job page"]
    return [
        ratio("job page p50, s", page_p50, 0.5, higher_is_better=False),
        ratio("job page weight, kB", page_size / 1000, 200, False),
    ]


async def kubectl(run: Run) -> list[bool]:
    """kubectl paging a large namespace's ArchivedJobs, against the JSON API's pages."""
    url = run.databases.create("jobarchive_bench_kubectl")
    print(
        f"kubectl: a namespace of {run.args.kubectl_jobs:,} jobs, pages of 500; "
        "p50 / p99 ms per page, pages"
    )
    paging, took = await kubectl_bench.run(url, run.args.kubectl_jobs)
    for name, (p50, p99, count) in paging.items():
        line(name, f"{p50 * 1000:.0f} / {p99 * 1000:.0f}", f"{count} pages")
    line("kubectl get, the whole run, s", f"{took:.1f}", "discovery, pages, printing")
    kubectl_p50 = paging["kubectl get --chunk-size=500 page"][0]
    json_p50 = paging["JSON API /api/v1/jobs page"][0]
    line("kubectl page p50 / JSON API page p50", f"{kubectl_p50 / json_p50:.2f}x")
    return []


async def cli(run: Run) -> list[bool]:
    """The command line's start to exit."""
    print("Command line: start to exit, p50 / p99 ms")
    started = await cli_bench.run()
    for name, (p50, p99) in started.items():
        line(name, f"{p50 * 1000:.0f} / {p99 * 1000:.0f}")
    return [ratio("jobarchive --help p50, s", started["jobarchive --help"][0], 0.5, False)]


async def first_run(run: Run) -> list[bool]:
    """A newcomer's first commands, each against its target where it has one."""
    print("First run: make run without a cluster, make demo, discovery; seconds")
    url = run.databases.create("jobarchive_bench_first_run")
    results = []
    for name, (took, target) in (await first_run_bench.run(url)).items():
        if target:
            results.append(ratio(name, took, target, higher_is_better=False))
        else:
            line(name, f"{took:.2f}")
    return results


async def export(run: Run) -> list[bool]:
    """The export of a month and of a day."""
    args = run.args
    url = run.databases.create("jobarchive_bench_export")
    pods = args.usage_jobs * args.usage_pods
    print(f"Export: a month of {args.usage_jobs:,} jobs and {pods:,} pods, and a day")
    exported = await export_bench.run(url, args.usage_jobs, args.usage_pods)
    for name, (value, note) in exported.items():
        line(name, f"{value:,.2f}", note)
    return []
