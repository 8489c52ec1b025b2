"""``make demo`` as CI runs it: it ends by itself, well under a minute, and shows the
three jobs' lives as the archive recorded them."""

import subprocess
import sys
import time

import pytest

from testbed.operator import REPO

pytestmark = pytest.mark.e2e


def test_the_demo_tells_its_story_in_under_a_minute() -> None:
    started = time.monotonic()
    result = subprocess.run(
        ["make", "--no-print-directory", "demo", f"PY={sys.executable}"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    took = time.monotonic() - started
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert took < 60
    for line in ("$ jobarchive jobs", "$ jobarchive job nlp/bert-finetune"):
        assert line in out
    jobs = out.split("$ jobarchive job nlp/")[0]
    assert "research/mnist-ddp" in jobs and "Succeeded" in jobs
    assert "nlp/bert-finetune" in jobs and "Failed" in jobs
    assert "research/resnet-sweep-3" in jobs and "Stopped" in jobs
    detail = out.split("$ jobarchive job nlp/bert-finetune")[1]
    for text in ("OOMKilled (exit code 137)", "OOMKilling", "TFJobFailed", "10.0.3.12"):
        assert text in detail
