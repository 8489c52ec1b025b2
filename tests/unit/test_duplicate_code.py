"""The package says a thing once: the duplicate-code scan (`duplicates`, the command
the house rules name) finds few pairs of places in operator/jobarchive that share six
or more lines of the same shape."""

import re
import shutil
import subprocess

import pytest

from testbed.operator import REPO

PACKAGE = REPO / "operator" / "jobarchive"
# All 8 left are of the same shape only: two models' field declarations, the two
# dialects' class heads, small frozen dataclasses beside each other, the two list
# queries' import blocks, two console views' heads, two repeated template fragments.
MOST_PAIRS = 8
# What the scan may take on a busy machine; past it, it says `incomplete:`.
SCAN_SECONDS = 120


def scan() -> list[str]:
    """The scan's answer for the package, line by line; a failure if it cannot be run."""
    command = shutil.which("duplicates")
    if command is None:
        pytest.fail("the duplicate-code scan needs the command `duplicates` on PATH")
    listed = ["--repo", str(PACKAGE), "--most", "200", "--seconds", str(SCAN_SECONDS)]
    answer = subprocess.run(
        [command, *listed], capture_output=True, text=True, timeout=SCAN_SECONDS + 60
    )
    assert answer.returncode == 0, answer.stderr
    return answer.stdout.splitlines()


def test_the_package_has_at_most_eight_pairs_of_duplicated_places() -> None:
    answer = scan()
    incomplete = [line for line in answer if line.startswith("incomplete:")]
    assert incomplete == []
    counted = re.match(r"(\d+) pairs? of places|no duplicates", answer[0] if answer else "")
    assert counted is not None, answer
    pairs = int(counted.group(1) or 0)
    rows = [line for line in answer if re.match(r"D\d+ ", line)]
    assert len(rows) == pairs
    assert pairs <= MOST_PAIRS, "\n".join(rows)
