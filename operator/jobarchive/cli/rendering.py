"""What the commands print: tables, JSON under the seed's field names, and lines with
stored values in them, each value neutralised first (``visible``) so that nothing a
tenant wrote can move the cursor, forge a line or act on the terminal."""

import json
from collections.abc import Mapping, Sequence
from typing import Any

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from jobarchive.reading import queries
from jobarchive.times import duration
from jobarchive.visible import visible

JOB_COLUMNS = ("job", "kind", "status", "created", "finished", "took", "owner", "in cluster", "uid")
EVENT_COLUMNS = ("first", "last", "type", "reason", "object", "count", "message")
POD_COLUMNS = ("pod", "type", "status", "node", "started", "finished", "remark", "log tail")
REPLICA_COUNTS = ("active", "succeeded", "failed", "stopped")


def print_json(value: Any) -> None:
    """``value`` as indented JSON, ASCII only."""
    click.echo(json.dumps(value, indent=2, ensure_ascii=True))


def echo(line: str) -> None:
    """A line with values in it, which nothing in them can act on or break."""
    click.echo(visible(line))


def short(value: str | None) -> str:
    """An RFC 3339 time as ``2026-11-29 10:00:00``: to the second, UTC implied."""
    return (value or "-").replace("T", " ").removesuffix("Z").partition(".")[0]


def table(title: str, columns: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """A table of values as Text, which rich neither parses for markup (``[link=...]``
    would be a hyperlink, ``[/]`` an error) nor highlights."""
    shown = Table(title=Text(visible(title)), title_justify="left", show_edge=False, pad_edge=False)
    for column in columns:
        shown.add_column(column, overflow="fold")
    for row in rows:
        shown.add_row(*(Text(visible(cell, lines=True)) for cell in row))
    width = max(Console().width, 160)
    Console(width=width, markup=False, emoji=False, highlight=False).print(shown)


def job_rows(jobs: Sequence[Mapping[str, Any]]) -> list[list[str]]:
    """Jobs as the rows of a table of ``JOB_COLUMNS``."""
    return [
        [
            f"{job['namespace']}/{job['name']}",
            job["kind"],
            job["status"],
            short(job["gmt_created"]),
            short(job["gmt_finished"]),
            duration(job["duration_seconds"]),
            job["owner"] or "-",
            "yes" if job["is_in_etcd"] else "no",
            job["job_id"],
        ]
        for job in jobs
    ]


def event_rows(events: Sequence[Mapping[str, Any]]) -> list[list[str]]:
    """Events as the rows of a table of ``EVENT_COLUMNS``."""
    return [
        [
            short(event["first_timestamp"]),
            short(event["last_timestamp"]),
            event["type"],
            event["reason"],
            f"{event['kind']} {event['obj_name']}",
            str(event["count"]),
            event["message"],
        ]
        for event in events
    ]


def print_jobs(page: queries.Page, output: str) -> None:
    """A page of jobs, and how to ask for the next one."""
    _print_page(page, output, "jobs", JOB_COLUMNS, job_rows(page.items))


def print_events(page: queries.Page, output: str) -> None:
    """A page of Events, and how to ask for the next one."""
    _print_page(page, output, "Events", EVENT_COLUMNS, event_rows(page.items))


def _print_page(
    page: queries.Page, output: str, noun: str, columns: Sequence[str], rows: list[list[str]]
) -> None:
    if output == "json":
        print_json(page.as_json())
        return
    table(f"{len(page.items)} {noun}", columns, rows)
    if page.next_cursor:
        echo(f"more: --cursor {page.next_cursor}")


def print_namesakes(jobs: list[dict[str, Any]], reference: str, output: str, command: str) -> None:
    """The jobs a name stands for, when it stands for more than one, and how to pick one."""
    if output == "json":
        print_json(queries.Page(jobs, None).as_json())
        return
    table(f"{len(jobs)} jobs named {reference}", JOB_COLUMNS, job_rows(jobs))
    click.echo(f"Name one by its uid: jobarchive {command} UID")


def print_job(detail: Mapping[str, Any]) -> None:
    """A job's detail: the job, its replicas' counts, a page of its pods and of its
    Events, and the commands that show more."""
    table("job", JOB_COLUMNS, job_rows([detail]))
    replicas = [
        [replica, *(str(counts[key]) for key in REPLICA_COUNTS)]
        for replica, counts in detail["replicas"].items()
    ]
    table("replicas", ("type", *REPLICA_COUNTS), replicas)
    pods = [
        [
            pod["name"],
            pod["replica_type"],
            pod["status"],
            pod["host_ip"] or "-",
            short(pod["gmt_started"]),
            short(pod["gmt_finished"]),
            pod["remark"] or "",
            "yes" if pod["has_log_tail"] else "-",
        ]
        for pod in detail["pods"]
    ]
    table("pods", POD_COLUMNS, pods)
    if any(pod["has_log_tail"] for pod in detail["pods"]):
        echo(f"Log tails: jobarchive logs {detail['job_id']} [--pod POD]")
    table("events", EVENT_COLUMNS, event_rows(detail["events"]))
    for what in ("pods", "events"):
        if detail[f"{what}_next_cursor"]:
            echo(
                f"More {what}: jobarchive job {detail['job_id']} "
                f"--{what}-cursor {detail[f'{what}_next_cursor']}"
            )


def print_tails(page: queries.Page, output: str, job_uid: str) -> None:
    """A page of a job's log tails, each a header and its lines, and how to ask for more."""
    if output == "json":
        print_json(page.as_json())
        return
    if not page.items:
        echo(f"No log tails of failed containers of job {job_uid}")
    for tail in page.items:
        _print_tail(tail)
    if page.next_cursor:
        echo(f"more: --cursor {page.next_cursor}")


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
    table(f"jobs by {group}", (group, "jobs", "finished", "average", "longest"), counted)
