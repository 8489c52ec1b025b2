"""What the commands print: tables, JSON under the seed's field names, and lines with
stored values in them, each value neutralised first (``visible``) so that nothing a
tenant wrote can move the cursor, forge a line or act on the terminal."""

import datetime
import json
from collections.abc import Mapping, Sequence
from typing import Any

import click

from jobarchive.cli.archive import Found
from jobarchive.cli.kueue_lines import kueue_lines
from jobarchive.cli.options import again, elsewhere
from jobarchive.cli.widths import Column, cluster, fitted, print_table, reason, reason_cell, width
from jobarchive.core.times import duration, rfc3339, timestamp
from jobarchive.core.visible import visible
from jobarchive.reading.params import Page
from jobarchive.reading.usage import EFFICIENCY

# As kubectl's: what names a row, then what is most asked of it; the rest with -o wide.
# In a narrow terminal the columns are taken by rank while they fit (``tables.fit``),
# the kept ones always.
JOB_COLUMNS = (
    Column("job", 0),
    Column("kind", 2),
    Column("status", 1, kept=True),
    Column("age", 3),
    Column("took", 4),
    Column("owner", 5, least=8),
    # A failed job's class (decision 42): in a narrow terminal after the owner.
    Column("failure", 6, least=8),
    Column("created", 7, wide=True),
    Column("finished", 8, wide=True),
    Column("in cluster", 9, wide=True),
    Column("uid", 10, wide=True),
    Column("cluster", 11, wide=True),
)
EVENT_COLUMNS = (
    Column("age", 4),
    Column("type", 1, kept=True),
    Column("reason", 2, kept=True),
    Column("object", 0),
    Column("message", 3, least=16, kept=True),
    Column("first", 5, wide=True),
    Column("last", 6, wide=True),
    Column("count", 7, wide=True),
    Column("cluster", 8, wide=True),
)
POD_COLUMNS = (
    Column("pod", 0),
    Column("type", 4),
    Column("status", 1, kept=True),
    Column("remark", 2, least=20, kept=True, telling=reason),
    Column("log tail", 5),
    Column("node", 3),
    Column("started", 6, wide=True),
    Column("finished", 7, wide=True),
)
# A usage table's columns after its group's, by the names of ``reading.usage.columns``:
# at 80 columns the counts, the GPU-hours, the queue's waits and how jobs failed.
USAGE_COLUMNS = {
    "period": Column("period", 1, kept=True),
    "jobs": Column("jobs", 3),
    "succeeded": Column("succeeded", 8, wide=True),
    "failed": Column("failed", 4),
    "gpu_hours": Column("gpu hours", 2),
    "failed_gpu_hours": Column("failed gpu hours", 9, wide=True),
    "cpu_hours": Column("cpu hours", 10, wide=True),
    "queue_wait_p50_s": Column("wait p50", 5, kept=True),
    "queue_wait_p95_s": Column("wait p95", 6, kept=True),
    "top_failure_reasons": Column("top failure classes", 7, least=20, kept=True, telling=reason),
    # How well they were used (decision 47, ``reading.usage.EFFICIENCY``): -o wide.
    **{name: Column(name.replace("_", " "), 11, wide=True) for name in EFFICIENCY},
}
REPLICA_COUNTS = ("active", "succeeded", "failed", "stopped")
STATS_COLUMNS = ("jobs", "finished", "average", "longest")


def print_json(value: Any) -> None:
    """``value`` as indented JSON, ASCII only."""
    click.echo(json.dumps(value, indent=2, ensure_ascii=True))


def echo(line: str) -> None:
    """A line with values in it, which nothing in them can act on or break."""
    click.echo(visible(line))


def short(value: str | None) -> str:
    """An RFC 3339 time as ``2026-11-29 10:00:00``: to the second, UTC implied."""
    return (value or "-").replace("T", " ").removesuffix("Z").partition(".")[0]


def age(moment: str | None, now: datetime.datetime) -> str:
    """How long before ``now`` an RFC 3339 time was, as a duration (kubectl's AGE)."""
    when = timestamp(moment)
    return "-" if when is None else duration(max((now - when).total_seconds(), 0))


def table(
    title: str, columns: Sequence[Column], rows: Sequence[Sequence[str]], output: str
) -> None:
    """A title line, then a table that fits the terminal, every column with ``-o wide``
    (``tables``)."""
    echo(title)
    print_table(columns, rows, output == "wide")


def more(shown: int, noun: str, option: str, cursor: str, of: int | None = None) -> None:
    """The line that says a list goes on, and the command that shows what follows: this
    one with ``option`` set to ``cursor``."""
    counted = f"{shown:,} of {of:,}" if of is not None else f"{shown:,}"
    echo(f"Showing {counted} {noun}; more: {again(option, cursor)}")


def job_rows(
    jobs: Sequence[Mapping[str, Any]], wide: bool, now: datetime.datetime
) -> list[list[str]]:
    """Jobs as the rows of a table of ``JOB_COLUMNS``, their ages at ``now``."""
    return [
        [
            f"{job['namespace']}/{job['name']}",
            job["kind"],
            job["status"],
            age(job["gmt_created"], now),
            duration(job["duration_seconds"]),
            job["owner"] or "-",
            failure_class(job),
            short(job["gmt_created"]),
            short(job["gmt_finished"]),
            "yes" if job["is_in_etcd"] else "no",
            job["job_id"],
            cluster(job["cluster"], wide),
        ]
        for job in jobs
    ]


def failure_class(job: Mapping[str, Any]) -> str:
    """A failed job's class as the list reads it (``failure_class``), or as its detail
    has it (``failure``); "" for any other job."""
    failure = job.get("failure") or {}
    return str(job.get("failure_class") or failure.get("class") or "")


def event_rows(
    events: Sequence[Mapping[str, Any]], wide: bool, now: datetime.datetime
) -> list[list[str]]:
    """Events as the rows of a table of ``EVENT_COLUMNS``, aged (since last seen) at
    ``now``."""
    return [
        [
            age(event["last_timestamp"], now),
            event["type"],
            event["reason"],
            f"{event['kind']} {event['obj_name']}",
            event["message"],
            short(event["first_timestamp"]),
            short(event["last_timestamp"]),
            str(event["count"]),
            cluster(event["cluster"], wide),
        ]
        for event in events
    ]


def now() -> datetime.datetime:
    """The moment ages are counted to."""
    return datetime.datetime.now(datetime.UTC)


def print_jobs(page: Page, output: str) -> None:
    """A page of jobs, and how to ask for the next one."""
    rows = job_rows(page.items, output == "wide", now())
    _print_page(page, output, "jobs", JOB_COLUMNS, rows)


def print_events(page: Page, output: str) -> None:
    """A page of Events, and how to ask for the next one."""
    rows = event_rows(page.items, output == "wide", now())
    _print_page(page, output, "Events", EVENT_COLUMNS, rows)


def _print_page(
    page: Page, output: str, noun: str, columns: Sequence[Column], rows: list[list[str]]
) -> None:
    if output == "json":
        print_json(page.as_json())
        return
    table(f"{len(page.items)} {noun}", columns, rows, output)
    if page.next_cursor:
        more(len(page.items), noun, "--cursor", page.next_cursor)


def print_namesakes(found: Found[Any], reference: str, output: str, command: str) -> None:
    """The jobs a name stands for, when it stands for more than one, how to pick one and,
    past a page of them, the job list that shows the rest."""
    if output == "json":
        print_json(Page(found.jobs, found.next_cursor).as_json())
        return
    rows = job_rows(found.jobs, output == "wide", now())
    table(f"{len(found.jobs)} jobs named {reference}", JOB_COLUMNS, rows, output)
    namespace, name = found.jobs[0]["namespace"], found.jobs[0]["name"]
    echo(f"Name one by its uid: {elsewhere([command, f'{namespace}/UID'])}")
    if found.next_cursor:
        named = ["--namespace", namespace, "--exact-name", name]
        rest = elsewhere(["jobs", *named, "--cursor", found.next_cursor])
        echo(f"Showing {len(found.jobs):,} jobs named {reference}; more: {rest}")


def print_job(detail: Mapping[str, Any], reference: str, output: str) -> None:
    """A job's detail: the job, its replicas' counts, a page of its pods and of its
    Events, and the commands that show more (naming the job as ``reference`` did); of
    the lists the API left out (``omitted``), neither a table nor a column. Why it
    failed, its Kueue attempts and waits first."""
    wide, moment = output == "wide", now()
    # Lines, not tables: cut to the terminal's width as the tables are, whole when wide.
    room = None if wide else width()
    if detail.get("failure"):
        echo(fitted(why(detail["failure"]), room))
    for line in kueue_lines(detail, moment, room):
        echo(line)
    table("job", JOB_COLUMNS, job_rows([detail], wide, moment), output)
    replicas = [
        [replica, *(str(counts[key]) for key in REPLICA_COUNTS)]
        for replica, counts in detail["replicas"].items()
    ]
    counts = (Column("type", 0), *(Column(count, 1) for count in REPLICA_COUNTS))
    table("replicas", counts, replicas, output)
    if "pods" in detail:
        _print_pods(detail, reference, output)
    if "events" in detail:
        table("events", EVENT_COLUMNS, event_rows(detail["events"], wide, moment), output)
        if detail["events_next_cursor"]:
            more(len(detail["events"]), "Events", "--events-cursor", detail["events_next_cursor"])


def why(failure: Mapping[str, Any]) -> str:
    """A failed job's "why" line: ``Why: GPUOutOfMemory (pod p, container c, exit code
    1): <detail>``, its highest exit code when another pod's is higher."""
    where = [
        f"{name} {failure[key]}"
        for name, key in (("pod", "pod"), ("container", "container"), ("exit code", "exit_code"))
        if failure.get(key) is not None
    ]
    if failure.get("signal") is not None:
        where.append(f"signal {failure['signal']}")
    derived = failure.get("derived_exit_code")
    if derived is not None and derived != failure.get("exit_code"):
        where.append(f"highest exit code {derived}")
    placed = f" ({', '.join(where)})" if where else ""
    detail = f": {failure['detail']}" if failure.get("detail") else ""
    return f"Why: {failure['class']}{placed}{detail}"


def _print_pods(detail: Mapping[str, Any], reference: str, output: str) -> None:
    """A job's page of pods; their log tails' column when the API said which have one."""
    logged = all("has_log_tail" in pod for pod in detail["pods"])
    pods = [
        [
            pod["name"],
            pod["replica_type"],
            pod["status"],
            reason_cell(pod.get("failure_class"), pod["remark"]),
            *(["yes" if pod["has_log_tail"] else "-"] if logged else []),
            pod["node_name"] or pod["host_ip"] or "-",
            short(pod["gmt_started"]),
            short(pod["gmt_finished"]),
        ]
        for pod in detail["pods"]
    ]
    columns = POD_COLUMNS if logged else tuple(c for c in POD_COLUMNS if c.header != "log tail")
    table("pods", columns, pods, output)
    if logged and any(pod["has_log_tail"] for pod in detail["pods"]):
        echo(f"Log tails: {elsewhere(['logs', reference])}")
    if detail["pods_next_cursor"]:
        every = sum(sum(counts.values()) for counts in detail["replicas"].values())
        more(len(pods), "pods", "--pods-cursor", detail["pods_next_cursor"], every)


def print_omitted(detail: Mapping[str, Any]) -> None:
    """On stderr, a line for each list the API left out of a job's detail, and why, so
    that what stdout prints keeps its shape."""
    for omission in detail.get("omitted", ()):
        line = f"Not shown: {omission['field']} ({omission['reason']})"
        click.echo(visible(line), err=True)


def print_tails(page: Page, output: str, job_uid: str) -> None:
    """A page of a job's log tails, each a header and its lines, and how to ask for more."""
    if output == "json":
        print_json(page.as_json())
        return
    if not page.items:
        echo(f"No log tails of failed containers of job {job_uid}")
    for tail in page.items:
        _print_tail(tail)
    if page.next_cursor:
        more(len(page.items), "log tails", "--cursor", page.next_cursor)


def _print_tail(tail: Mapping[str, Any]) -> None:
    """One tail: a header naming the container instance and how it ended, then its text."""
    kind = "" if tail["container_type"] == "container" else f", {tail['container_type']}"
    ended = " ".join(
        part
        for part in (
            f"exit code {tail['exit_code']}" if tail["exit_code"] is not None else "",
            tail["reason"] or "",
            f"at {short(tail['gmt_failed'])}" if tail["gmt_failed"] else "",
        )
        if part
    )
    header = (
        f"==> {tail['namespace']}/{tail['pod_name']} container {tail['container']} "
        f"(restart {tail['restart_count']}{kind}): {ended or 'failed'}"
    )
    if not tail["captured"]:
        echo(f"{header}: not captured: {tail['note'] or 'unknown'}")
        return
    echo(f"{header}{' (last lines only)' if tail['truncated'] else ''}")
    text = tail["log_tail"] or ""
    for line in text.removesuffix("\n").split("\n") if text else []:
        # As a terminal showed it: what a carriage return overwrote (progress bars) is gone.
        echo(line.rstrip("\r").rpartition("\r")[2])


def print_stats(rows: list[dict[str, Any]], group: str, output: str) -> None:
    """Jobs counted by ``group``, with their durations."""
    if output == "json":
        print_json({"items": rows})
        return
    counted = [
        [
            str(row[group] or "-"),
            str(row["jobs"]),
            str(row["finished"]),
            duration(row["avg_duration_seconds"]),
            duration(row["max_duration_seconds"]),
        ]
        for row in rows
    ]
    headers = (Column(group, 0), *(Column(header, 1) for header in STATS_COLUMNS))
    table(f"jobs by {group}", headers, counted, output)


def print_usage(
    rows: list[dict[str, Any]],
    names: Sequence[str],
    output: str,
    window: tuple[datetime.datetime, datetime.datetime],
) -> None:
    """Usage rows under ``names`` (``reading.usage.columns``): a table (titled with its
    ``window``, or a line saying it holds nothing), JSON or CSV."""
    if output == "json":
        print_json({"items": rows})
        return
    from jobarchive.reading import usage

    if output == "csv":
        # Whole, not cut into lines: only LF and CRLF stay (between rows, or inside a
        # quoted cell), every other line break or control written as its escape.
        click.echo(visible(usage.to_csv(rows, names), lines=True), nl=False)
        return
    wide = output == "wide"
    cells = [[_usage_cell(name, row.get(name), wide) for name in names] for row in rows]
    since, until = (short(rfc3339(moment)) for moment in window)
    if not rows:
        echo(f"No job lived from {since} to {until} UTC: no usage by {names[0]}")
        return
    headers = [Column(names[0], 0), *(_usage_column(name) for name in names[1:])]
    table(f"usage by {names[0]}, {since} to {until} UTC", headers, cells, output)


def _usage_column(name: str) -> Column:
    """A usage figure's column: as ``USAGE_COLUMNS`` says, else ranked after them."""
    # The seconds' columns show durations, so their unit leaves the header.
    header = name.replace("_", " ").removesuffix(" s")
    return USAGE_COLUMNS.get(name, Column(header, len(USAGE_COLUMNS) + 1))


def _usage_cell(name: str, value: Any, wide: bool) -> str:
    """A usage figure as a table shows it: seconds (``*_s``) as a duration, the reasons
    as their text, a cluster by its name or its uid's first characters."""
    from jobarchive.reading import usage

    if name == usage.REASONS:
        return usage.reasons_text(value)
    if name.endswith("_s"):
        return duration(value)
    if name == "cluster" and value:
        return cluster(str(value), wide)
    return _figure(value)


def _figure(value: Any) -> str:
    return "-" if value is None else str(value)
