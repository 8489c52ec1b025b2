"""The ``jobarchive`` command: where it reads (its database options, or a kubeconfig
for the aggregated API), checked before any command runs, and its commands."""

import os
import sys
from typing import Any, NoReturn

import click

from jobarchive import __version__, config
from jobarchive.cli import admin, export, reads, seff, serve
from jobarchive.cli.archive import Kubeconfig, Where
from jobarchive.cli.options import BadSetting

# What --db-url with a password prints on stderr; the command then runs as asked.
PASSWORD_WARNING = (
    "Warning: --db-url shows the database password to every user of this machine "
    "(ps lists command lines): use --db-url-file PATH or JOBARCHIVE_DB_URL instead"
)


class Commands(click.Group):
    """The command group, whose bad input is one line: click's own usage and hint lines
    left out (``--help`` shows them), as every other failure is one line."""

    def main(self, *args: Any, **kwargs: Any) -> NoReturn:
        """Run as click does, but say a usage error in its one line."""
        try:
            done = super().main(*args, **{**kwargs, "standalone_mode": False})
        except click.exceptions.NoArgsIsHelpError as exc:
            # No command at all: the help, as click shows it.
            exc.show()
            sys.exit(exc.exit_code)
        except click.UsageError as exc:
            click.echo(f"Error: {exc.format_message()}", err=True)
            sys.exit(exc.exit_code)
        except click.ClickException as exc:
            exc.show()
            sys.exit(exc.exit_code)
        except click.Abort:
            click.echo("Aborted!", err=True)
            sys.exit(1)
        # As click's own standalone mode ends: with the code a command exited with, else 0.
        sys.exit(done if isinstance(done, int) else 0)


@click.group(
    cls=Commands, commands=[*reads.COMMANDS, seff.eff, export.export, serve.serve, *admin.COMMANDS]
)
@click.version_option(__version__, prog_name="jobarchive", message="%(prog)s %(version)s")
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
@click.option(
    "--kubeconfig",
    metavar="PATH",
    help="Read through the cluster's aggregated API (archive.jobarchive.io) with this "
    "kubeconfig's credentials, not the database. Without it, KUBECONFIG does the same "
    "when no database URL is set (JOBARCHIVE_DB_URL, ...).",
)
@click.option(
    "--context", "context_name", help="The kubeconfig's context (default: its current one)."
)
@click.pass_context
def main(
    context: click.Context,
    db_url: str | None,
    db_url_file: str | None,
    kubeconfig: str | None,
    context_name: str | None,
) -> None:
    """Read the history of training jobs, their pods and Events."""
    # Checked here, to be named as the option they came from: a message naming
    # JOBARCHIVE_DB_URL would send the user looking in the environment.
    try:
        if db_url and db_url_file:
            raise config.ConfigError("--db-url and --db-url-file are both given: keep one")
        if (db_url or db_url_file) and (kubeconfig or context_name):
            raise config.ConfigError(
                "a database option and a kubeconfig option are both given: the commands "
                "read the database or the API, keep one"
            )
        if db_url:
            if config.has_password(db_url):
                click.echo(PASSWORD_WARNING, err=True)
            config.validate_db_url(db_url, "--db-url")
        if db_url_file:
            db_url = config.read_url_file(db_url_file, "--db-url-file")
            config.validate_db_url(db_url, "--db-url-file")
    except config.ConfigError as exc:
        raise BadSetting(str(exc)) from None
    context.obj = Where(db_url, _kubeconfig(kubeconfig, context_name, db_url))


def _kubeconfig(path: str | None, name: str | None, db_url: str | None) -> Kubeconfig | None:
    """The kubeconfig the read commands go through, if any: the one named, else
    KUBECONFIG's when no database is named on the command line or in the environment."""
    if path is not None or name is not None:
        return Kubeconfig(path, name)
    if db_url is None and config.reads_through_api(os.environ):
        return Kubeconfig(given=False)
    return None
