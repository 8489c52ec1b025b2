"""``jobarchive --help`` answers at once (decision 30): the command line, its help and
every command's help import no database, ORM, HTTP or Kubernetes client, templates or
table printer; those come with the command that needs them, and a read through the
aggregated API imports no database or server at all. Guarded by what is imported,
which a busy machine does not change, rather than by time alone."""

import os
import socket
import subprocess
import sys

import pytest

HEAVY = (
    "tortoise",
    "aiohttp",
    "kubernetes_asyncio",
    "jinja2",
    "aiomysql",
    "aiosqlite",
    "rich",
    "pyarrow",
)
# What only reading the database needs: the ORM, its drivers, the queries, the
# storage, and the aggregated API's routes (the server side of what the CLI asks).
DATABASE = ("tortoise", "aiomysql", "aiosqlite", "pypika", "jinja2")
SERVER = ("jobarchive.storage", "jobarchive.reading.queries", "jobarchive.reading.kube.routes")
# Runs the console script's entry point with the given arguments, then names every
# heavy package the process imported, whatever the command's exit status, and on a
# second line what of the database and the server it imported.
PROGRAM = f"""
import atexit, sys
def named():
    print("imported:", sorted({{
        name.split(".")[0] for name in sys.modules if name.split(".")[0] in {HEAVY!r}
    }}), file=sys.stderr)
    print("database:", sorted(
        name for name in sys.modules
        if name.split(".")[0] in {DATABASE!r} and "." not in name or name in {SERVER!r}
    ), file=sys.stderr)
atexit.register(named)
from jobarchive.cli import main
sys.argv = ["jobarchive", *sys.argv[1:]]
main()
"""
COMMANDS = ["jobs", "job", "logs", "events", "stats", "export", "serve", "prune", "migrate"]


def imported(*args: str, **variables: str) -> tuple[subprocess.CompletedProcess[str], str]:
    """The process's answer, and its line naming the heavy packages it imported."""
    environ = {**os.environ, **variables}
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, *args],
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
    )
    [line] = [line for line in done.stderr.splitlines() if line.startswith("imported:")]
    return done, line


def database(done: subprocess.CompletedProcess[str]) -> str:
    """The process's line naming what of the database and the server it imported."""
    [line] = [line for line in done.stderr.splitlines() if line.startswith("database:")]
    return line


def test_importing_the_command_line_imports_nothing_heavy() -> None:
    done = subprocess.run(
        [sys.executable, "-c", "import jobarchive.cli, sys; print(*sys.modules, sep='\\n')"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    modules = done.stdout.split()
    assert [name for name in modules if name.split(".")[0] in HEAVY] == []
    assert "jobarchive.reading.queries" not in modules
    assert "jobarchive.storage" not in modules


@pytest.mark.parametrize("command", [[], *([name] for name in COMMANDS)], ids=str)
def test_help_imports_nothing_heavy(command: list[str]) -> None:
    done, line = imported(*command, "--help")
    assert done.returncode == 0, done.stderr
    assert "Usage: jobarchive" in done.stdout
    assert line == "imported: []"


def test_a_command_imports_what_it_needs_only_when_it_runs(tmp_path: os.PathLike[str]) -> None:
    # No archive there: the command opens none, but it did import the read side.
    done, line = imported("jobs", JOBARCHIVE_DB_URL=f"sqlite:///{tmp_path}/none.sqlite3")
    assert done.returncode == 1 and "no archive at" in done.stderr
    assert "tortoise" in line


def test_a_read_through_the_api_imports_no_database_or_server(tmp_path: os.PathLike[str]) -> None:
    # A port nothing listens on: the command imports all it reads with, then finds
    # no answer there.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    kubeconfig = f"{tmp_path}/kubeconfig"
    with open(kubeconfig, "w") as file:
        file.write(
            "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
            f"clusters: [{{name: c, cluster: {{server: 'http://127.0.0.1:{port}'}}}}]\n"
            "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
            "users: [{name: u, user: {}}]\n"
        )
    quiet = {name: "" for name in ("JOBARCHIVE_DB_URL", "JOBARCHIVE_DB_URL_FILE", "MYSQL_HOST")}
    for command in (["jobs"], ["job", "team-a/mnist"], ["events"], ["logs", "x"], ["stats"]):
        done, line = imported("--kubeconfig", kubeconfig, *command, **quiet)
        assert done.returncode == 1 and "no answer from" in done.stderr, done.stderr
        assert "kubernetes_asyncio" in line
        assert database(done) == "database: []", command
    # The database mode does import them: the line names what it should.
    done = imported("jobs", JOBARCHIVE_DB_URL=f"sqlite:///{tmp_path}/none.sqlite3")[0]
    assert "tortoise" in database(done) and "jobarchive.storage" in database(done)
