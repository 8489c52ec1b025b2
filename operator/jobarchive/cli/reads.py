"""The commands that read: ``jobs``, ``job``, ``logs``, ``events`` and ``stats``, each
the read side's use case (``reading.queries``) with the API's parameters as options,
run on the read side (``session.reading``) and printed (``rendering``)."""

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import click

from jobarchive.cli import rendering, session
from jobarchive.cli.options import options, output_option
from jobarchive.reading import queries
from jobarchive.reading.queries import KnownKinds
from jobarchive.visible import visible

T = TypeVar("T")


def _list(
    name: str, listing: queries.Listing, show: Callable[[queries.Page, str], None], summary: str
) -> click.Command:
    """The command that prints a page of ``listing``, its filters as options."""

    @click.command(name, help=summary)
    @options(listing.params + queries.PAGE)
    @output_option
    @click.pass_obj
    def command(
        db_url: str | None, /, limit: int | None, cursor: str | None, output: str, **filters: Any
    ) -> None:
        page = session.reading(db_url, lambda kinds: listing.page(filters, limit, cursor, kinds))
        show(page, output)

    return command


jobs = _list("jobs", queries.JOBS, rendering.print_jobs, "List jobs, newest first.")
events = _list("events", queries.EVENTS, rendering.print_events, "List Events, most recent first.")


@click.command()
@click.argument("reference")
@options(queries.DETAIL_PARAMS)
@output_option
@click.pass_obj
def job(db_url: str | None, /, reference: str, output: str, **page: Any) -> None:
    """One job (NAMESPACE/NAME or UID) with a page of its pods and of its Events."""
    detail = _the_job(db_url, reference, output, "job", lambda uid: queries.job_detail(uid, **page))
    if detail is None:
        return
    if output == "json":
        rendering.print_json(detail)
    else:
        rendering.print_job(detail)


@click.command()
@click.argument("reference")
@options(queries.LOG_PARAMS)
@output_option
@click.pass_obj
def logs(db_url: str | None, /, reference: str, output: str, **narrowed: Any) -> None:
    """The last lines of the logs of a job's (NAMESPACE/NAME or UID) failed containers,
    newest failure first."""

    async def tails(uid: str) -> tuple[str, queries.Page]:
        return uid, await queries.job_log_tails(uid, **narrowed)

    found = _the_job(db_url, reference, output, "logs", tails)
    if found is not None:
        uid, page = found
        rendering.print_tails(page, output, uid)


def _the_job(
    db_url: str | None,
    reference: str,
    output: str,
    command: str,
    read: Callable[[str], Awaitable[T | None]],
) -> T | None:
    """What ``read`` finds of the one job ``reference`` names; None once the jobs it
    names are printed, when it names several; one line, exit 1, when it names none."""

    async def look_up(_: KnownKinds) -> tuple[list[dict[str, Any]], T | None]:
        found = await queries.find_jobs(reference)
        return found, (await read(found[0]["job_id"]) if len(found) == 1 else None)

    found, result = session.reading(db_url, look_up)
    if len(found) > 1:
        rendering.print_namesakes(found, reference, output, command)
        return None
    if result is None:
        raise click.ClickException(visible(f"no job {reference}"))
    return result


@click.command()
@options(queries.STATS_PARAMS)
@output_option
@click.pass_obj
def stats(db_url: str | None, /, output: str, **window: Any) -> None:
    """Count jobs and their durations by status, kind, owner, namespace or tenant."""
    rows = session.reading(db_url, lambda _: queries.stats(**window))
    rendering.print_stats(rows, window["group_by"] or queries.DEFAULT_GROUP, output)


COMMANDS = (jobs, job, logs, events, stats)
