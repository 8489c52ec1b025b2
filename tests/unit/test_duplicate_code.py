"""The package says a thing once: pylint's similarity checker (``duplicate-code``, a test
dependency) finds no two places in operator/jobarchive sharing six or more lines, imports,
docstrings and comments aside."""

import subprocess
import sys

from testbed.operator import REPO

PACKAGE = REPO / "operator" / "jobarchive"
LEAST_LINES = 6


def test_no_six_lines_of_the_package_stand_twice() -> None:
    answer = subprocess.run(
        [
            sys.executable, "-m", "pylint", "--disable=all", "--enable=duplicate-code",
            f"--min-similarity-lines={LEAST_LINES}", "--ignore-imports=y",
            "--ignore-docstrings=y", "--ignore-comments=y", "--score=n", "--persistent=n",
            str(PACKAGE),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )  # fmt: skip
    assert answer.returncode == 0, answer.stdout + answer.stderr
    assert "R0801" not in answer.stdout
