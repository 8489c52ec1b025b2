"""The ``jobarchive`` console script run as a user runs it: in a directory of the test's
choosing, with the database settings of the test's choosing and no others."""

import os
import pathlib
import subprocess
import sys
from collections.abc import Mapping

JOBARCHIVE = pathlib.Path(sys.executable).with_name("jobarchive")
# The variables that choose the database; the test runner's own are never passed on.
DATABASE_VARIABLES = frozenset(
    {
        "JOBARCHIVE_DB_URL",
        "MYSQL_HOST",
        "MYSQL_PORT",
        "MYSQL_USER",
        "MYSQL_PASSWORD",
        "MYSQL_DB_NAME",
    }
)


def jobarchive(
    *args: str, cwd: pathlib.Path, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``jobarchive ARGS`` in ``cwd``, with ``env`` as its only database settings."""
    inherited = {key: value for key, value in os.environ.items() if key not in DATABASE_VARIABLES}
    return subprocess.run(
        [str(JOBARCHIVE), *args],
        cwd=cwd,
        env={**inherited, **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
    )
