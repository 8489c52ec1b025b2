"""The ``jobarchive`` console script run as a user runs it: in a directory of the test's
choosing, with the database settings of the test's choosing and no others."""

import os
import pathlib
import subprocess
import sys
from collections.abc import Mapping

JOBARCHIVE = pathlib.Path(sys.executable).with_name("jobarchive")
# Installed as a user has it: on the PATH, so the commands it prints name it `jobarchive`.
ON_PATH = {"PATH": os.pathsep.join([str(JOBARCHIVE.parent), os.environ.get("PATH", "")])}
# The variables that choose the database, and KUBECONFIG, which the read commands read
# through when no database is named; the test runner's own are never passed on.
DATABASE_VARIABLES = frozenset(
    {
        "KUBECONFIG",
        "JOBARCHIVE_CLUSTER",
        "JOBARCHIVE_DB_URL",
        "JOBARCHIVE_DB_URL_FILE",
        "JOBARCHIVE_READ_DB_URL",
        "JOBARCHIVE_READ_DB_URL_FILE",
        "JOBARCHIVE_DB_TLS",
        "JOBARCHIVE_DB_TLS_CA",
        "MYSQL_HOST",
        "MYSQL_PORT",
        "MYSQL_USER",
        "MYSQL_PASSWORD",
        "MYSQL_DB_NAME",
    }
)


# The console script's entry point, with every logger of the process at DEBUG first.
_VERBOSE = (
    "import logging, sys; logging.basicConfig(level=logging.DEBUG); "
    "from jobarchive.cli import main; sys.argv[0] = 'jobarchive'; main()"
)


def jobarchive(
    *args: str, cwd: pathlib.Path, env: Mapping[str, str] | None = None, debug: bool = False
) -> subprocess.CompletedProcess[str]:
    """Run ``jobarchive ARGS`` in ``cwd``, with ``env`` as its only database settings;
    with ``debug``, every library's DEBUG records go to its stderr too."""
    inherited = {key: value for key, value in os.environ.items() if key not in DATABASE_VARIABLES}
    command = [sys.executable, "-c", _VERBOSE] if debug else [str(JOBARCHIVE)]
    return subprocess.run(
        [*command, *args],
        cwd=cwd,
        env={**inherited, **ON_PATH, **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
    )
