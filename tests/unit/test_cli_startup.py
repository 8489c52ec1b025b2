"""``jobarchive --help`` answers at once (decision 30): the command line, its help and
every command's help import no database, ORM, HTTP or Kubernetes client, templates or
table printer; those come with the command that needs them. Guarded by what is
imported, which a busy machine does not change, rather than by time alone."""

import os
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
# Runs the console script's entry point with the given arguments, then names every
# heavy package the process imported, whatever the command's exit status.
PROGRAM = f"""
import atexit, sys
atexit.register(lambda: print("imported:", sorted({{
    name.split(".")[0] for name in sys.modules if name.split(".")[0] in {HEAVY!r}
}}), file=sys.stderr))
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
