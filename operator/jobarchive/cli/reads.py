"""The commands that read: ``jobs``, ``job``, ``logs``, ``events``, ``stats`` and ``usage``, each
the read side's use case with the API's parameters as options, asked of the archive
(``archive.Archive``) and printed (``rendering``)."""

import datetime
from collections.abc import Callable
from typing import Any, TypeVar

import click

from jobarchive.cli import rendering
from jobarchive.cli.archive import Archive, Found, Where
from jobarchive.cli.options import OUTPUTS, options, output_option, outputs
from jobarchive.core import times
from jobarchive.core.visible import visible
from jobarchive.reading import params
from jobarchive.reading.params import Page, Param

T = TypeVar("T")


def archive(where: Where) -> Archive:
    """The archive the commands read: through the API with a kubeconfig, else the database."""
    # Imported here, when a command runs, so that --help imports neither a database nor
    # a Kubernetes client (decision 30).
    if where.kubeconfig is not None:
        from jobarchive.cli.remote import Remote

        return Remote(where.kubeconfig)
    from jobarchive.cli.direct import Direct

    return Direct(where.db_url)


def _list(
    name: str,
    table: tuple[Param, ...],
    read: Callable[[Archive], Callable[..., Page]],
    show: Callable[[Page, str], None],
    summary: str,
) -> click.Command:
    """The command that prints a page of a list, its ``table``'s filters as options."""

    @click.command(name, help=summary)
    @options(table + params.PAGE)
    @output_option
    @click.pass_obj
    def command(
        where: Where, /, limit: int | None, cursor: str | None, output: str, **filters: Any
    ) -> None:
        show(read(archive(where))(filters, limit, cursor), output)

    return command


jobs = _list(
    "jobs",
    params.NAMED_JOB_PARAMS,
    lambda archive: archive.jobs,
    rendering.print_jobs,
    "List jobs, newest first.",
)
# What `events` reads when its filters only sift (--type Warning alone): Events of these
# last days, said so, rather than the read side's refusal of a scan.
RECENT_DAYS = 7


def _events(archive: Archive) -> Callable[..., Page]:
    def read(filters: dict[str, Any], limit: int | None, cursor: str | None) -> Page:
        sifting = [key for key, value in filters.items() if value is not None]
        if not sifting or any(filters.get(key) is not None for key in params.EVENT_LEADING):
            return archive.events(filters, limit, cursor)
        now = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
        since = now - datetime.timedelta(days=RECENT_DAYS)
        page = archive.events({**filters, "since": since}, limit, cursor)
        # Said once the read has answered: a refusal stays the one line it is.
        click.echo(
            f"Events of the last {RECENT_DAYS} days (--since {times.rfc3339(since)}); "
            "name an earlier --since, or a --namespace, to read further back",
            err=True,
        )
        return page

    return read


events = _list(
    "events",
    params.EVENT_PARAMS,
    _events,
    rendering.print_events,
    "List Events, most recent first.",
)


@click.command()
@click.argument("reference")
@options(params.DETAIL_PARAMS)
@output_option
@click.pass_obj
def job(where: Where, /, reference: str, output: str, **page: Any) -> None:
    """One job (NAMESPACE/NAME, NAMESPACE/UID or UID) with a page of its pods and of its
    Events."""
    detail = one_job(archive(where).job(reference, **page), reference, output, "job")
    if detail is None:
        return
    if output == "json":
        rendering.print_json(detail)
    else:
        rendering.print_job(detail, reference, output)
    rendering.print_omitted(detail)


@click.command()
@click.argument("reference")
@options(params.LOG_PARAMS)
@output_option
@click.pass_obj
def logs(where: Where, /, reference: str, output: str, **narrowed: Any) -> None:
    """The last lines of the logs of a job's (NAMESPACE/NAME, NAMESPACE/UID or UID)
    failed containers, newest failure first."""
    found = archive(where).logs(reference, **narrowed)
    page = one_job(found, reference, output, "logs")
    if page is not None:
        rendering.print_tails(page, output, found.jobs[0]["job_id"])


def one_job(found: Found[T], reference: str, output: str, command: str) -> T | None:
    """What was read of the one job ``reference`` names; None once the jobs it names are
    printed, when it names several; one line, exit 1, when it names none."""
    if len(found.jobs) > 1:
        rendering.print_namesakes(found, reference, output, command)
        return None
    if found.read is None:
        raise click.ClickException(visible(f"no job {reference}"))
    return found.read


@click.command()
@options(params.STATS_PARAMS)
@output_option
@click.pass_obj
def stats(where: Where, /, output: str, **window: Any) -> None:
    """Count jobs and their durations by status, kind, owner, namespace or tenant."""
    rows = archive(where).stats(**window)
    rendering.print_stats(rows, window["group_by"] or params.DEFAULT_GROUP, output)


@click.command()
@options(params.USAGE_PARAMS)
@outputs((*OUTPUTS, "csv"))
@click.pass_obj
def usage(where: Where, /, output: str, **window: Any) -> None:
    """GPU- and CPU-hours, jobs, outcomes, queue waits and the costliest failure classes
    by namespace, owner, tenant, queue, kind, node, cluster, Kueue cluster queue or
    failure class (failed jobs) over a window of UTC time (the last 30 days by default),
    per day, week or month with --every."""
    # Checked before any database or client is opened: bad input is one line, exit 2.
    from jobarchive.reading import usage as arithmetic

    group = arithmetic.group_of(window["group_by"])
    span = arithmetic.window(window["since"], window["until"])
    params.one_of("every", window["every"], arithmetic.EVERY)
    rows = archive(where).usage(**window)
    rendering.print_usage(rows, arithmetic.columns(group, window["every"]), output, span)


COMMANDS = (jobs, job, logs, events, stats, usage)
