"""``jobarchive``: read the history from a terminal, and prune it.

Every command reads the database the operator writes (``JOBARCHIVE_DB_URL``, the
same variables and default as the operator, or ``--db-url-file`` or ``--db-url``),
prints a table or, with ``--output json``, the rows under the seed's JSON field names.
``--db-url`` stays for scripts that use it, but a command line is public (``ps``
shows it to every user of the machine), so a password in it is warned about.

Nothing here ever creates a database: a SQLite file that does not exist is
reported rather than opened, since opening creates it, empty, where the operator
would later find it. Failures are one line, never a traceback: bad input (an
unparseable date, an unknown status, a cursor from elsewhere, a database URL the
operator would refuse) exits with status 2 and says what to change; a database
that cannot be read exits with status 1 and names the cause in the driver's words,
never with the password.

The commands that read open the read side only, as the API does
(``JOBARCHIVE_READ_DB_URL`` when set): its statements are stopped by the database
after ``JOBARCHIVE_API_TIMEOUT`` seconds, which is one line too. ``prune`` and
``migrate`` write, through the operator's own URL.
"""

import asyncio
import contextlib
import datetime
import json
import logging
import os
import signal
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from jobarchive import config
from jobarchive.maintenance import retention
from jobarchive.reading import api, auth, queries
from jobarchive.storage import database as db
from jobarchive.storage import failures, migration, schema
from jobarchive.storage.reads import QueryTimeout, ReadPool
from jobarchive.times import duration
from jobarchive.visible import visible

T = TypeVar("T")
OUTPUTS = click.Choice(["table", "json"])


class BadSetting(click.ClickException):
    """A setting the operator would refuse: one line, exit status 2 as for all bad input."""

    exit_code = 2


def _settings(db_url: str | None) -> config.Settings:
    """The operator's settings, ``db_url`` (from the command line) taking the place of
    JOBARCHIVE_DB_URL and JOBARCHIVE_DB_URL_FILE, and of the read side's URL: the
    archive named on the command line is the one read."""
    environ = dict(os.environ)
    if db_url:
        environ["JOBARCHIVE_DB_URL"] = db_url
        for variable in (
            "JOBARCHIVE_DB_URL_FILE",
            "JOBARCHIVE_READ_DB_URL",
            "JOBARCHIVE_READ_DB_URL_FILE",
        ):
            environ.pop(variable, None)
    try:
        return config.load(environ)
    except config.ConfigError as exc:
        raise BadSetting(str(exc)) from None


def _read_pool(settings: config.Settings, timeout: float | None = None) -> ReadPool:
    """The read side, as the API's: JOBARCHIVE_READ_DB_URL, its pool size and timeout."""
    return ReadPool(
        _archive(settings.read_db_url), settings.api_concurrency, timeout or settings.api_timeout
    )


def _archive(url: str) -> str:
    """The URL of an archive; for SQLite, once its file is known to exist."""
    path = db.sqlite_file(url)
    if path is not None and not path.is_file():
        raise click.ClickException(
            f"no archive at {path}: run the operator first or set JOBARCHIVE_DB_URL"
        )
    return url


def _unreadable(url: str, error: BaseException) -> click.ClickException:
    # A driver's message may quote a stored value.
    return click.ClickException(
        visible(f"cannot use the archive at {config.redact_url(url)}: {failures.describe(error)}")
    )


def _run(
    db_url: str | None,
    work: Callable[[], Awaitable[T]],
    adopted: bool = True,
    writes: bool = False,
) -> T:
    """Run ``work`` on the open archive; one line, never a traceback, when it cannot.

    ``work`` reads through the read side unless it ``writes`` (then through the
    operator's URL). Unless ``adopted`` is false (``migrate``), a schema the reader
    cannot read yet is refused with a line that says how to bring it up to date.
    """
    settings = _settings(db_url)
    read_pool = None if writes else _read_pool(settings)
    url = _archive(settings.db_url) if read_pool is None else read_pool.url

    async def session() -> T:
        try:
            if read_pool is None:
                await db.open_database(url, create=False, encryption=settings.db_tls)
            else:
                await db.open_reader(read_pool, encryption=settings.db_tls)
            if adopted:
                await schema.require_readable(db.connection() if writes else db.reader())
            return await work()
        finally:
            await db.close_database()

    try:
        return asyncio.run(session())
    except queries.BadQuery as exc:
        raise click.UsageError(str(exc)) from None
    except QueryTimeout:
        raise click.ClickException(
            f"the query ran longer than {settings.api_timeout:g} s (JOBARCHIVE_API_TIMEOUT) "
            "and was stopped: narrow it, or allow it more time"
        ) from None
    except schema.NotAdopted as exc:
        raise click.ClickException(str(exc)) from None
    except failures.ERRORS as exc:
        raise _unreadable(url, exc) from None


def _time(value: str | None, name: str) -> datetime.datetime | None:
    if value is None:
        return None
    try:
        return queries.parse_time(value, name)
    except queries.BadQuery as exc:
        raise click.UsageError(str(exc)) from None


def _print_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2, ensure_ascii=True))


def _echo(line: str) -> None:
    """A line with values in it, which nothing in them can act on or break."""
    click.echo(visible(line))


def _short(value: str | None) -> str:
    """An RFC 3339 time as ``2026-11-29 10:00:00``: to the second, UTC implied."""
    return (value or "-").replace("T", " ").removesuffix("Z").partition(".")[0]


def _print_page(
    page: queries.Page,
    output: str,
    noun: str,
    columns: Sequence[str],
    rows: Callable[[Sequence[Mapping[str, Any]]], list[list[str]]],
) -> None:
    if output == "json":
        _print_json(page.as_json())
        return
    _table(f"{len(page.items)} {noun}", columns, rows(page.items))
    if page.next_cursor:
        _echo(f"more: --cursor {page.next_cursor}")


def _table(title: str, columns: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """A table of values as Text, which rich neither parses for markup (``[link=...]``
    would be a hyperlink, ``[/]`` an error) nor highlights."""
    table = Table(title=Text(visible(title)), title_justify="left", show_edge=False, pad_edge=False)
    for column in columns:
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*(Text(visible(cell, lines=True)) for cell in row))
    width = max(Console().width, 160)
    Console(width=width, markup=False, emoji=False, highlight=False).print(table)


def _job_rows(jobs: Sequence[Mapping[str, Any]]) -> list[list[str]]:
    return [
        [
            f"{job['namespace']}/{job['name']}",
            job["kind"],
            job["status"],
            _short(job["gmt_created"]),
            _short(job["gmt_finished"]),
            duration(job["duration_seconds"]),
            job["owner"] or "-",
            "yes" if job["is_in_etcd"] else "no",
            job["job_id"],
        ]
        for job in jobs
    ]


JOB_COLUMNS = ("job", "kind", "status", "created", "finished", "took", "owner", "in cluster", "uid")


# What --db-url with a password prints on stderr; the command then runs as asked.
PASSWORD_WARNING = (
    "Warning: --db-url shows the database password to every user of this machine "
    "(ps lists command lines): use --db-url-file PATH or JOBARCHIVE_DB_URL instead"
)


@click.group()
@click.option(
    "--db-url",
    help="Database URL, in place of JOBARCHIVE_DB_URL. Every user of the machine can "
    "read it in the process list: prefer --db-url-file or the environment.",
)
@click.option(
    "--db-url-file",
    metavar="PATH",
    help="A file holding the database URL (a mounted Secret, say), in place of "
    "JOBARCHIVE_DB_URL_FILE.",
)
@click.pass_context
def main(context: click.Context, db_url: str | None, db_url_file: str | None) -> None:
    """Read the history of training jobs, their pods and Events."""
    # Checked here, to be named as the option they came from: a message naming
    # JOBARCHIVE_DB_URL would send the user looking in the environment.
    try:
        if db_url and db_url_file:
            raise config.ConfigError("--db-url and --db-url-file are both given: keep one")
        if db_url:
            if config.has_password(db_url):
                click.echo(PASSWORD_WARNING, err=True)
            config.validate_db_url(db_url, "--db-url")
        if db_url_file:
            db_url = config.read_url_file(db_url_file, "--db-url-file")
            config.validate_db_url(db_url, "--db-url-file")
    except config.ConfigError as exc:
        raise BadSetting(str(exc)) from None
    context.obj = db_url


@main.command()
@click.option("--namespace", "-n")
@click.option("--name", "name_prefix", help="Name starts with this.")
@click.option("--name-contains", help="Name contains this (scans what other filters leave).")
@click.option("--kind")
@click.option("--status", help=f"One of {', '.join(queries.JOB_STATUSES)}.")
@click.option("--region")
@click.option("--tenant")
@click.option("--owner")
@click.option("--created-since", help="RFC 3339 time or date, UTC unless stated.")
@click.option("--created-until")
@click.option("--finished-since")
@click.option("--finished-until")
@click.option("--in-cluster/--gone", default=None, help="Still in the cluster, or not.")
@click.option("--limit", type=int, default=queries.DEFAULT_PAGE, show_default=True)
@click.option("--cursor", help="From a previous page's next_cursor.")
@click.option("--output", "-o", type=OUTPUTS, default="table", show_default=True)
@click.pass_obj
def jobs(
    db_url: str | None, /, limit: int, cursor: str | None, output: str, **filters: Any
) -> None:
    """List jobs, newest first."""
    for name in ("created_since", "created_until", "finished_since", "finished_until"):
        filters[name] = _time(filters[name], "--" + name.replace("_", "-"))
    query = queries.JobQuery(**filters)
    kinds = queries.known_kinds(_settings(db_url).kinds)
    page = _run(db_url, lambda: queries.list_jobs(query, limit, cursor, kinds))
    _print_page(page, output, "jobs", JOB_COLUMNS, _job_rows)


@main.command()
@click.argument("reference")
@click.option(
    "--limit",
    type=int,
    default=queries.DEFAULT_PAGE,
    show_default=True,
    help="Pods and Events shown.",
)
@click.option("--pods-cursor", help="The pods' next cursor of the previous answer.")
@click.option("--events-cursor", help="The Events' next cursor of the previous answer.")
@click.option("--output", "-o", type=OUTPUTS, default="table", show_default=True)
@click.pass_obj
def job(
    db_url: str | None,
    reference: str,
    limit: int,
    pods_cursor: str | None,
    events_cursor: str | None,
    output: str,
) -> None:
    """One job (NAMESPACE/NAME or UID) with a page of its pods and of its Events."""

    async def look_up() -> list[dict[str, Any]]:
        found = await queries.find_jobs(reference)
        if len(found) != 1:
            return found
        detail = await queries.job_detail(found[0]["job_id"], limit, pods_cursor, events_cursor)
        return [] if detail is None else [detail]

    found = _run(db_url, look_up)
    if not found:
        raise click.ClickException(visible(f"no job {reference}"))
    if len(found) > 1:
        if output == "json":
            _print_json(queries.Page(found, None).as_json())
        else:
            _table(f"{len(found)} jobs named {reference}", JOB_COLUMNS, _job_rows(found))
            click.echo("Name one by its uid: jobarchive job UID")
        return
    detail = found[0]
    if output == "json":
        _print_json(detail)
        return
    _print_job(detail)


def _print_job(detail: Mapping[str, Any]) -> None:
    _table("job", JOB_COLUMNS, _job_rows([detail]))
    replicas = [
        [replica, *(str(counts[key]) for key in ("active", "succeeded", "failed", "stopped"))]
        for replica, counts in detail["replicas"].items()
    ]
    _table("replicas", ("type", "active", "succeeded", "failed", "stopped"), replicas)
    pods = [
        [
            pod["name"],
            pod["replica_type"],
            pod["status"],
            pod["host_ip"] or "-",
            _short(pod["gmt_started"]),
            _short(pod["gmt_finished"]),
            pod["remark"] or "",
            "yes" if pod.get("has_log_tail") else "-",
        ]
        for pod in detail["pods"]
    ]
    columns = ("pod", "type", "status", "node", "started", "finished", "remark", "log tail")
    _table("pods", columns, pods)
    if any(pod.get("has_log_tail") for pod in detail["pods"]):
        _echo(f"Log tails: jobarchive logs {detail['job_id']} [--pod POD]")
    _table("events", EVENT_COLUMNS, _event_rows(detail["events"]))
    for what in ("pods", "events"):
        if detail[f"{what}_next_cursor"]:
            _echo(
                f"More {what}: jobarchive job {detail['job_id']} "
                f"--{what}-cursor {detail[f'{what}_next_cursor']}"
            )


EVENT_COLUMNS = ("first", "last", "type", "reason", "object", "count", "message")


def _event_rows(events: Sequence[Mapping[str, Any]]) -> list[list[str]]:
    return [
        [
            _short(event["first_timestamp"]),
            _short(event["last_timestamp"]),
            event["type"],
            event["reason"],
            f"{event['kind']} {event['obj_name']}",
            str(event["count"]),
            event["message"],
        ]
        for event in events
    ]


@main.command()
@click.argument("reference")
@click.option("--pod", help="Only this pod (name or uid).")
@click.option("--container", help="Only this container.")
@click.option(
    "--limit",
    type=int,
    default=queries.LOG_TAILS_PAGE,
    show_default=True,
    help=f"Most tails shown (up to {queries.LOG_TAILS_MAX}).",
)
@click.option("--output", "-o", type=OUTPUTS, default="table", show_default=True)
@click.pass_obj
def logs(
    db_url: str | None,
    reference: str,
    pod: str | None,
    container: str | None,
    limit: int,
    output: str,
) -> None:
    """The last lines of the logs of a job's (NAMESPACE/NAME or UID) failed containers,
    newest failure first."""

    async def look_up() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        found = await queries.find_jobs(reference)
        if len(found) != 1:
            return found, []
        page = await queries.job_log_tails(found[0]["job_id"], pod, container, limit)
        return found, page.items

    found, tails = _run(db_url, look_up)
    if not found:
        raise click.ClickException(visible(f"no job {reference}"))
    if len(found) > 1:
        _table(f"{len(found)} jobs named {reference}", JOB_COLUMNS, _job_rows(found))
        click.echo("Name one by its uid: jobarchive logs UID")
        return
    if output == "json":
        _print_json({"items": tails})
        return
    if not tails:
        _echo(f"No log tails of failed containers of job {found[0]['job_id']}")
    for tail in tails:
        _print_tail(tail)


def _print_tail(tail: Mapping[str, Any]) -> None:
    """One tail: a header naming the container instance and how it ended, then its text."""
    kind = "" if tail["container_type"] == "container" else f", {tail['container_type']}"
    ended = " ".join(
        part
        for part in (
            f"exit code {tail['exit_code']}" if tail["exit_code"] is not None else "",
            tail["reason"] or "",
            f"at {_short(tail['gmt_failed'])}" if tail["gmt_failed"] else "",
        )
        if part
    )
    header = (
        f"==> {tail['namespace']}/{tail['pod_name']} container {tail['container']} "
        f"(restart {tail['restart_count']}{kind}): {ended or 'failed'}"
    )
    if not tail["captured"]:
        _echo(f"{header}: not captured: {tail['note'] or 'unknown'}")
        return
    _echo(f"{header}{' (last lines only)' if tail['truncated'] else ''}")
    text = tail["log_tail"] or ""
    for line in text.removesuffix("\n").split("\n") if text else []:
        # As a terminal showed it: what a carriage return overwrote (progress bars) is gone.
        _echo(line.rstrip("\r").rpartition("\r")[2])


@main.command()
@click.option("--namespace", "-n", help="The involved object's namespace.")
@click.option("--object", "object_name", help="The involved object's name.")
@click.option("--uid", "object_uid", help="The involved object's uid.")
@click.option("--kind", "object_kind", help="The involved object's kind (Pod, TFJob, ...).")
@click.option("--type", "type_", help="Normal or Warning.")
@click.option("--reason")
@click.option("--since", help="Last occurred at or after (RFC 3339 time or date).")
@click.option("--until", help="Last occurred before.")
@click.option("--limit", type=int, default=queries.DEFAULT_PAGE, show_default=True)
@click.option("--cursor")
@click.option("--output", "-o", type=OUTPUTS, default="table", show_default=True)
@click.pass_obj
def events(
    db_url: str | None,
    /,
    type_: str | None,
    since: str | None,
    until: str | None,
    limit: int,
    cursor: str | None,
    output: str,
    **filters: Any,
) -> None:
    """List Events, most recent first."""
    query = queries.EventQuery(
        type=type_, since=_time(since, "--since"), until=_time(until, "--until"), **filters
    )
    kinds = queries.known_kinds(_settings(db_url).kinds)
    page = _run(db_url, lambda: queries.list_events(query, limit, cursor, kinds))
    _print_page(page, output, "Events", EVENT_COLUMNS, _event_rows)


@main.command()
@click.option("--by", type=click.Choice(queries.STATS_GROUPS), default="status", show_default=True)
@click.option("--since", help="Jobs created at or after (RFC 3339 time or date).")
@click.option("--until", help="Jobs created before.")
@click.option("--output", "-o", type=OUTPUTS, default="table", show_default=True)
@click.pass_obj
def stats(db_url: str | None, by: str, since: str | None, until: str | None, output: str) -> None:
    """Count jobs and their durations by status, kind, owner, namespace or tenant."""
    window = (_time(since, "--since"), _time(until, "--until"))
    rows = _run(db_url, lambda: queries.stats(by, *window))
    if output == "json":
        _print_json({"items": rows})
        return
    table = [
        [
            str(row[by] or "-"),
            str(row["jobs"]),
            str(row["finished"]),
            duration(row["avg_duration_seconds"]),
            duration(row["max_duration_seconds"]),
        ]
        for row in rows
    ]
    _table(f"jobs by {by}", (by, "jobs", "finished", "average", "longest"), table)


@main.command()
@click.option("--days", type=click.IntRange(min=1), help="Default: JOBARCHIVE_RETENTION_DAYS.")
@click.option("--dry-run", is_flag=True, help="Count what would go, delete nothing.")
@click.option("--output", "-o", type=OUTPUTS, default="table", show_default=True)
@click.pass_obj
def prune(db_url: str | None, days: int | None, dry_run: bool, output: str) -> None:
    """Delete jobs that finished over DAYS ago and left the cluster, with pods and Events."""
    keep = days or _settings(db_url).retention_days
    if not keep:
        raise click.UsageError("--days is needed: JOBARCHIVE_RETENTION_DAYS keeps everything")
    before = retention.cutoff(keep)
    pruned = _run(db_url, lambda: retention.prune(before, dry_run=dry_run), writes=True)
    counts = {
        "jobs": pruned.jobs,
        "pods": pruned.pods,
        "events": pruned.events,
        "log_tails": pruned.log_tails,
    }
    if output == "json":
        _print_json({**counts, "dry_run": dry_run, "finished_before": before.isoformat()})
        return
    verb = "Would delete" if dry_run else "Deleted"
    click.echo(
        f"{verb} {pruned.jobs} jobs finished before {before:%Y-%m-%d %H:%M} UTC, "
        f"{pruned.pods} pods, {pruned.events} Events and {pruned.log_tails} log tails"
    )


@main.command()
@click.option("--dry-run", is_flag=True, help="Count what would change, change nothing.")
@click.pass_obj
def migrate(db_url: str | None, dry_run: bool) -> None:
    """Bring a database KubeDL (or an older jobarchive) created to jobarchive's schema.

    Merges rows of one uid, fills NULLs and both finish times, widens narrow columns,
    adds the unique keys and indexes; safe to interrupt and run again.
    """

    def report(step: migration.Step) -> None:
        _echo(step.describe(dry_run))

    async def work() -> list[migration.Step]:
        return await migration.Migration(db.connection()).run(dry_run, report)

    steps = _run(db_url, work, adopted=False, writes=True)
    if not steps:
        click.echo("Nothing to migrate: the database has jobarchive's schema")
    elif dry_run:
        click.echo(f"{len(steps)} steps would run; nothing was changed")
    else:
        click.echo(f"Migrated in {len(steps)} steps")


async def _stopped() -> None:
    """Until SIGTERM or SIGINT: as a container's first process, a signal without a
    handler is ignored, and the kubelet would kill serve mid-answer."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    await stop.wait()
    logging.getLogger(__name__).info("Stopping: answering no more requests")


@main.command()
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on; 0.0.0.0 for every interface.",
)
@click.option("--port", type=click.IntRange(1, 65535), default=8080, show_default=True)
@click.option(
    "--auth",
    "auth_mode",
    type=click.Choice(config.API_AUTH_MODES),
    help="kubernetes: callers' bearer tokens and access reviewed by the kubeconfig's "
    "cluster; none: anyone may read (JOBARCHIVE_API_AUTH, default kubernetes).",
)
@click.option("--timeout", type=float, help="Seconds a query may take (JOBARCHIVE_API_TIMEOUT).")
@click.pass_obj
def serve(
    db_url: str | None, host: str, port: int, auth_mode: str | None, timeout: float | None
) -> None:
    """Serve the read-only HTTP API (/api/v1, OpenAPI at /api/v1/openapi.json) and the
    web console (/).

    With --auth kubernetes (the default) every request needs a bearer token, and the
    cluster of the current kubeconfig says whose it is and which namespaces it may read.
    """
    settings = _settings(db_url)
    read_pool = _read_pool(settings, timeout)
    url = read_pool.url
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")

    async def run_forever() -> None:
        try:
            await db.open_reader(read_pool, encryption=settings.db_tls)
            try:
                access = await auth.access(auth_mode or settings.api_auth)
            except auth.NoCluster as exc:
                raise click.ClickException(
                    f"--auth kubernetes: {exc}; or serve this machine only with --auth none"
                ) from None
            runner = await api.serve(
                host,
                port,
                access,
                read_pool.timeout,
                read_pool.size,
                kinds=queries.known_kinds(settings.kinds),
            )
            if runner is None:
                raise click.ClickException(f"cannot listen on {host}:{port}")
            try:
                await _stopped()
            finally:
                await runner.cleanup()
        finally:
            await db.close_database()

    try:
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(run_forever())
    except failures.ERRORS as exc:
        raise _unreadable(url, exc) from None
