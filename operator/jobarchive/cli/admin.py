"""The commands that write, through the operator's own URL: ``prune`` (retention's
rules, at once) and ``migrate`` (adopting a database KubeDL or an older jobarchive
created)."""

from collections.abc import Callable
from typing import Any, TypeVar

import click

from jobarchive.cli import rendering
from jobarchive.cli.archive import Where
from jobarchive.cli.options import outputs
from jobarchive.core.rows import valid_cluster
from jobarchive.infra import identity

F = TypeVar("F", bound=Callable[..., Any])


def cluster_name(_: click.Context, __: click.Parameter, value: str | None) -> str | None:
    """``--cluster`` checked as JOBARCHIVE_CLUSTER is (decision 35)."""
    if value is None:
        return None
    try:
        return valid_cluster(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def cluster_option(help: str) -> Callable[[F], F]:
    """The commands' ``--cluster NAME``."""
    return click.option("--cluster", metavar="NAME", callback=cluster_name, help=help)


@click.command()
@click.option("--days", type=click.IntRange(min=1), help="Default: JOBARCHIVE_RETENTION_DAYS.")
@click.option("--dry-run", is_flag=True, help="Count what would go, delete nothing.")
@cluster_option("Only this cluster's rows (default: every cluster's).")
@outputs(("table", "json"))
@click.pass_obj
def prune(where: Where, days: int | None, dry_run: bool, cluster: str | None, output: str) -> None:
    """Delete jobs that finished over DAYS ago and left the cluster, with pods and Events."""
    # Imported here, when it runs, so that --help imports no database (decision 30).
    from jobarchive.cli import session
    from jobarchive.maintenance import retention

    db_url = where.database()
    keep = days or session.settings_of(db_url).retention_days
    if not keep:
        raise click.UsageError("--days is needed: JOBARCHIVE_RETENTION_DAYS keeps everything")
    before = retention.cutoff(keep)
    pruned = session.writing(
        db_url, lambda: retention.prune(before, dry_run=dry_run, cluster=cluster)
    )
    counts = {
        "jobs": pruned.jobs,
        "pods": pruned.pods,
        "events": pruned.events,
        "log_tails": pruned.log_tails,
        "attempts": pruned.attempts,
        "waits": pruned.waits,
    }
    if output == "json":
        rendering.print_json({**counts, "dry_run": dry_run, "finished_before": before.isoformat()})
        return
    verb = "Would delete" if dry_run else "Deleted"
    click.echo(
        f"{verb} {pruned.jobs} jobs finished before {before:%Y-%m-%d %H:%M} UTC, "
        f"{pruned.pods} pods, {pruned.events} Events, {pruned.log_tails} log tails and "
        f"{pruned.attempts} Kueue attempts ({pruned.waits} waits)"
    )


@click.command()
@click.option("--dry-run", is_flag=True, help="Count what would change, change nothing.")
@cluster_option(
    "The cluster the rows of a table without the cluster column come from (default: "
    "JOBARCHIVE_CLUSTER, else the kubeconfig's cluster's kube-system uid)."
)
@click.pass_obj
def migrate(where: Where, dry_run: bool, cluster: str | None) -> None:
    """Bring a database KubeDL (or an older jobarchive) created to jobarchive's schema.

    Merges rows of one uid, fills NULLs and both finish times, widens narrow columns,
    adds the unique keys and indexes, gives the rows their cluster; safe to interrupt
    and run again.
    """
    # Imported here, when it runs, as for prune.
    from jobarchive.cli import session
    from jobarchive.core.rows import DEFAULT_CLUSTER
    from jobarchive.storage import database as db
    from jobarchive.storage import migration

    def report(step: migration.Step) -> None:
        rendering.echo(step.describe(dry_run))

    from jobarchive.infra import rules
    from jobarchive.maintenance import classifying

    # Pods' GPUs are counted as the operator counts them (decision 32).
    settings = session.settings_of(where.database())
    try:
        failure_rules = rules.load_rules(settings.failure_rules_file)
    except ValueError as exc:
        raise click.ClickException(f"JOBARCHIVE_FAILURE_RULES_FILE: {exc}") from None

    async def work() -> list[migration.Step]:
        conn = db.connection()
        named = cluster or settings.cluster
        if named is None and await migration.lacking_clusters(conn):
            try:
                named = (await identity.identify(None)).name
            except identity.Unknown as exc:
                raise click.ClickException(
                    f"which cluster the rows come from is not known: {exc}, or pass --cluster"
                ) from None
        steps = await migration.Migration(
            conn, accelerators=settings.accelerators, cluster=named or DEFAULT_CLUSTER
        ).run(dry_run, report)
        # Failed jobs recorded before the taxonomy get their classes (decision 42).
        classified = await classifying.classify_archive(conn, failure_rules, dry_run)
        if classified is not None:
            report(classified)
            steps.append(classified)
        return steps

    steps = session.writing(where.database(), work, adopted=False)
    if not steps:
        click.echo("Nothing to migrate: the database has jobarchive's schema")
    elif dry_run:
        click.echo(f"{len(steps)} steps would run; nothing was changed")
    else:
        click.echo(f"Migrated in {len(steps)} steps")


COMMANDS = (prune, migrate)
