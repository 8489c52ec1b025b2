"""``make demo`` as CI runs it: it ends by itself, well under a minute, and shows the
jobs' lives as the archive recorded them, with owners, GPUs and the training logs of
its failed containers, in 80 columns when its output is no terminal, every command it
prints running as printed; ``KEEP=1`` keeps the archive and serves the console on it,
on the ports chosen; a chosen port that is taken is said in one line. Kueue's part
as recorded: the preempted job's two attempts and the GPU-hours the preemption cost,
computed here from its pods; the quota wait with Kueue's message; the failed jobs'
classes; each ClusterQueue's utilization. It needs only the operator's own
dependencies and the ``demo`` extra."""

import contextlib
import datetime
import json
import os
import pathlib
import re
import shlex
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from demo import kueue, stories, volcano
from demo.stories import RECORDED
from jobarchive.reading.gpus import requested_gpus
from testbed.operator import REPO
from testbed.ports import free_port

pytestmark = pytest.mark.e2e
MAKE = ["make", "--no-print-directory", "demo", f"PY={sys.executable}"]
# As from a pipe or a terminal of unknown width: the demo prints at 80 columns.
UNSIZED = {key: value for key, value in os.environ.items() if key != "COLUMNS"}
# What the test extra brings beyond the operator's dependencies and the demo extra.
# Seconds after which a run is hung, not slow.
HUNG = 300
JOBARCHIVE = pathlib.Path(sys.executable).with_name("jobarchive")
TEST_ONLY = ("pytest", "_pytest", "hypothesis", "kubernetes_validate", "selenium", "tests")


def test_the_demo_tells_its_story_in_under_a_minute() -> None:
    # It ends by itself (HUNG only tells an end from a hang); how soon, under a minute,
    # is `make bench --only firstrun`'s figure.
    result = subprocess.run(
        MAKE, cwd=REPO, capture_output=True, text=True, timeout=HUNG, env=UNSIZED
    )
    assert result.returncode == 0, result.stdout + result.stderr
    shown = printed(result.stdout)
    assert max(map(len, shown.splitlines())) <= 80, shown
    # Each command as it runs from the repository's root, the console script's path.
    program = re.search(r"^\$ (\S+) jobs$", shown, re.MULTILINE)
    assert program is not None and program[1].endswith("jobarchive"), shown
    assert f"Log tails: {program[1]} logs nlp/bert-finetune" in shown
    out = shown.replace(f"$ {program[1]} ", "$ jobarchive ")
    for line in ("$ jobarchive jobs", "$ jobarchive job nlp/bert-finetune"):
        assert line in out
    jobs = out.split("$ jobarchive job nlp/")[0]
    assert "6 jobs" in jobs
    assert "research/mnist-ddp" in jobs and "Succeeded" in jobs
    assert "research/vit-pretrain" in jobs
    assert "nlp/bert-finetune" in jobs and "Failed" in jobs
    assert "research/resnet-sweep-3" in jobs and "Stopped" in jobs
    assert "vision/detr-train" in jobs and "Running" in jobs
    for owner in ("alice", "bob", "carol", "dave", "erin", "frank"):
        assert owner in jobs
    detail = out.split("$ jobarchive job nlp/bert-finetune")[1]
    # At 80 columns the remark is cut to its reason and exit code (decision 30).
    for text in ("OOMKilled (exit 137)", "OOMKilling", "TFJobFailed", "gpu-node-12"):
        assert text in detail
    tail = out.split("$ jobarchive logs nlp/llama-sft")[1]
    assert "(restart 1): exit code 1 Error" in tail.replace("\n", "")
    assert "torch.cuda.OutOfMemoryError: CUDA out of memory." in tail.replace("\n", "")
    assert '"kind": "Pod"' not in out
    costs, quotas = out.split("$ jobarchive usage --by queue")[1].split(
        "$ jobarchive usage --by clusterqueue"
    )
    quotas, efficiency = quotas.split("$ jobarchive eff nlp/llama-sft")
    # The stand-in's figures (demo/standin.py): half of each pod's eight GPUs at 55%.
    assert "GPU-hours 10.0, GPU activity 28%" in efficiency
    for replica in ("master", "worker"):
        assert f"  {replica}: 8 GPUs requested, 4 never used: request 4" in efficiency
    assert "usage by queue, " in costs and " UTC" in costs
    assert "usage by clusterqueue, " in quotas
    for queue in ("nlp-a100", "research"):
        assert queue in quotas
    for queue in ("nlp-a100", "research", "vision"):
        assert queue in costs
    # The costliest failures by class (decision 42), not by raw reason.
    assert "GPUOutOfMemory=" in costs
    [archive] = re.findall(r"The archive: (\S+), deleted now", out)
    assert not pathlib.Path(archive).exists()


def printed(out: str) -> str:
    """What the demo printed, after what make printed before it (an install's lines)."""
    return out[out.index("# The operator") :]


def test_the_demo_needs_nothing_of_the_test_extra() -> None:
    blocker = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        f"        if name.split('.')[0] in {TEST_ONLY!r}:\n"
        "            raise ImportError(f'the demo imports {name}, of the test extra')\n"
        "for name in list(sys.modules):\n"
        f"    if name.split('.')[0] in {TEST_ONLY!r}:\n"
        "        del sys.modules[name]\n"
        "sys.meta_path.insert(0, Block())\n"
        "import demo.__main__\n"
    )
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    result = subprocess.run(
        [sys.executable, "-c", blocker], cwd=REPO, capture_output=True, text=True, env=env
    )
    assert result.returncode == 0, result.stderr


def test_every_job_of_the_demo_names_a_queue_where_its_scheduler_reads_it() -> None:
    queues = {}
    for plan in stories.PLANS:
        body = plan.body()
        label = body["metadata"].get("labels", {}).get("kueue.x-k8s.io/queue-name")
        policy = body["spec"].get("runPolicy", {}).get("schedulingPolicy", {})
        queues[plan.name] = (label, policy.get("queue"))
    submitted = volcano.submitted("2026-11-20T10:00:00Z")
    queues[submitted["metadata"]["name"]] = (None, submitted["spec"]["queue"])
    assert queues == {
        "mnist-ddp": ("research", None),
        "bert-finetune": (None, "nlp-a100"),
        "resnet-sweep-3": ("research", None),
        "llama-sft": ("nlp-a100", None),
        "detr-train": (None, "vision"),
        "vit-pretrain": ("research", None),
    }
    assert set(queues) == set(stories.RECORDED)


@contextlib.contextmanager
def kept_demo(*args: str) -> Iterator[tuple[subprocess.Popen[str], list[str]]]:
    """``make demo KEEP=1`` in a process group of its own, interrupted as by Ctrl-C."""
    process = subprocess.Popen(
        [*MAKE, "KEEP=1", *args],
        cwd=REPO,
        env=UNSIZED,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    lines: list[str] = []
    try:
        yield process, lines
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGINT)
        process.wait(timeout=HUNG)


def read_until(process: subprocess.Popen[str], lines: list[str], pattern: str) -> re.Match[str]:
    """Read the demo's output until a line matches (failing past HUNG seconds)."""
    assert process.stdout is not None
    deadline = time.monotonic() + HUNG
    for line in process.stdout:
        lines.append(line)
        found = re.search(pattern, line)
        if found:
            return found
        assert time.monotonic() < deadline, "".join(lines)
    raise AssertionError("".join(lines))


def archived(path: str) -> tuple[dict[str, tuple[str, str, float]], list[str], list[float]]:
    """Per job: owner, tenant, GPUs requested; every captured log tail; pods' GPUs."""
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        jobs = {
            name: (owner, tenant, requested_gpus(json.loads(resources)))
            for name, owner, tenant, resources in db.execute(
                "SELECT name, owner, tenant, resources FROM job_info"
            )
        }
        tails = [row[0] for row in db.execute("SELECT log_tail FROM container_log_tail")]
        pods = [
            requested_gpus({"pod": {"resources": json.loads(row[0])}})
            for row in db.execute("SELECT resources FROM replica_info")
        ]
    return jobs, tails, pods


def test_the_kept_demo_serves_the_console_on_a_free_port_and_keeps_its_archive() -> None:
    with kept_demo() as (process, lines):
        archive = read_until(process, lines, r"The archive, kept: (\S+)")[1]
        url = read_until(process, lines, r"(http://127\.0\.0\.1:\d+/)")[1]
        try:
            with urllib.request.urlopen(url + "api/v1/jobs", timeout=10) as response:
                listed = json.load(response)
            assert {job["name"] for job in listed["items"]} == set(RECORDED)
            jobs, tails, pods = archived(archive)
        finally:
            os.killpg(process.pid, signal.SIGINT)
            process.wait(timeout=HUNG)
    try:
        assert set(jobs) == set(RECORDED)
        assert all(owner and tenant and gpus > 0 for owner, tenant, gpus in jobs.values())
        assert jobs["llama-sft"] == ("carol", "team-language", 16.0)
        assert sum(gpus > 0 for gpus in pods) >= 10
        assert len(tails) == 5
        assert not any(tail.lstrip().startswith("{") for tail in tails)
        assert any(tail.endswith("to avoid fragmentation.\n") for tail in tails)
        assert any("ncclRemoteError" in tail for tail in tails)
        assert pathlib.Path(archive).exists()
        kueue_recorded(archive)
    finally:
        shutil.rmtree(pathlib.Path(archive).parent, ignore_errors=True)


def rows(path: str, sql: str) -> list[dict[str, Any]]:
    """The rows of a query of the archive, by column, times as datetimes."""
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        db.row_factory = sqlite3.Row
        found = [dict(row) for row in db.execute(sql)]
    for row in found:
        for key, value in row.items():
            if key.startswith(("gmt_", "quota_reserved_at", "first_seen", "last_seen")) and value:
                row[key] = datetime.datetime.fromisoformat(value)
    return found


def of_job(path: str, table: str, name: str, order: str) -> list[dict[str, Any]]:
    """A job's rows of a table, in order."""
    return rows(
        path,
        f"SELECT t.* FROM {table} t JOIN job_info j ON j.job_id = t.job_id "
        f"WHERE j.name = '{name}' ORDER BY t.{order}",
    )


def kueue_recorded(archive: str) -> None:
    """Kueue's part of the kept demo, as recorded and as ``usage --by clusterqueue``
    answers it."""
    # vit-pretrain: preempted for resnet-sweep-3, then admitted again and finished.
    first, second = of_job(archive, "job_attempt", "vit-pretrain", "quota_reserved_at")
    [resnet] = rows(archive, "SELECT job_id FROM job_info WHERE name = 'resnet-sweep-3'")
    assert (first["end_reason"], second["end_reason"]) == ("Preempted", "Finished")
    assert first["preemptor_job_id"] == resnet["job_id"]
    assert f"JobUID: {resnet['job_id']}) due to prioritization" in first["message"]
    assert first["cluster_queue"] == second["cluster_queue"] == "research"
    # The GPU-hours it lost: its pods started in the first attempt, whole.
    pods = of_job(archive, "replica_info", "vit-pretrain", "gmt_started")
    lost = [pod for pod in pods if pod["gmt_started"] < second["quota_reserved_at"]]
    assert len(lost) == 2 and len(pods) == 4
    spent = sum(
        pod["gpus"] * (pod["gmt_finished"] - pod["gmt_started"]).total_seconds() for pod in lost
    )
    preempted = round(spent / 3600, 3)
    assert preempted > 0

    # llama-sft waited for quota with Kueue's message until its admission.
    [wait] = of_job(archive, "job_wait", "llama-sft", "first_seen")
    [attempt] = of_job(archive, "job_attempt", "llama-sft", "quota_reserved_at")
    assert wait["message"] == kueue.over_capacity(8, 8, 8)
    assert wait["message"].startswith(
        "couldn't assign flavors to pod set worker: insufficient quota for nvidia.com/gpu "
        "in flavor a100, "
    )
    assert wait["reason"] == "Pending" and wait["last_seen"] == attempt["quota_reserved_at"]
    assert wait["first_seen"] < wait["last_seen"]

    classes = rows(
        archive,
        "SELECT j.name, f.failure_class FROM job_failure f JOIN job_info j ON j.job_id = f.job_id",
    )
    assert {row["name"]: row["failure_class"] for row in classes} == {
        "bert-finetune": "OOMKilled",
        "llama-sft": "GPUOutOfMemory",
    }
    queues_used(archive, preempted)


def queues_used(archive: str, preempted: float) -> None:
    """``usage --by clusterqueue`` on the kept demo: each ClusterQueue's utilization, and
    research's GPU-hours lost to the preemption (``preempted``, computed by hand)."""
    usage = subprocess.run(
        [str(JOBARCHIVE), "usage", "--by", "clusterqueue", "-o", "json"],
        env={**UNSIZED, "JOBARCHIVE_DB_URL": f"sqlite://{archive}"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert usage.returncode == 0, usage.stderr
    queues = {row["clusterqueue"]: row for row in json.loads(usage.stdout)["items"]}
    assert set(queues) == {"research", "nlp-a100"}
    assert all(0 < row["utilization"] <= 1 for row in queues.values())
    assert queues["research"]["preempted_gpu_hours"] == preempted
    assert queues["nlp-a100"]["preempted_gpu_hours"] == 0


def test_the_kept_demo_takes_the_ports_chosen_and_its_commands_run_as_printed() -> None:
    emulator, metrics = free_port(), free_port()
    chosen = [f"DEMO_EMULATOR_PORT={emulator}", f"DEMO_METRICS_PORT={metrics}"]
    with kept_demo(*chosen) as (process, lines):
        archive = read_until(process, lines, r"The archive, kept: (\S+)")[1]
        read_until(process, lines, r"http://127\.0\.0\.1:\d+/")
    try:
        shown = printed("".join(lines))
        assert max(map(len, shown.splitlines())) <= 80, shown
        kubeconfig = (pathlib.Path(archive).parent / "kubeconfig").read_text()
        assert f"server: http://127.0.0.1:{emulator}" in kubeconfig
        [exported] = [line for line in shown.splitlines() if line.startswith("export ")]
        variable, _, url = shlex.split(exported)[1].partition("=")
        assert variable == "JOBARCHIVE_DB_URL" and url == f"sqlite://{archive}"
        commands = [
            line.removeprefix("$ ").removeprefix("Log tails: ")
            for line in shown.splitlines()
            if re.match(r"(\$ |Log tails: )?\S*jobarchive ", line)
        ]
        assert len(commands) == 8, commands
        for command in commands:
            ran = subprocess.run(
                shlex.split(command),
                cwd=REPO,
                env={**UNSIZED, variable: url},
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert ran.returncode == 0, (command, ran.stderr)
    finally:
        shutil.rmtree(pathlib.Path(archive).parent, ignore_errors=True)


def test_a_chosen_port_that_is_taken_is_said_in_one_line() -> None:
    port = free_port()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", port))
        taken.listen()
        result = subprocess.run(
            [*MAKE, "KEEP=1", f"DEMO_PORT={port}"],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=HUNG,
        )
    assert result.returncode == 2, result.stdout + result.stderr
    [line] = [line for line in result.stderr.splitlines() if line.startswith("make demo:")]
    assert line == (
        f"make demo: port {port} is taken; set another DEMO_PORT, or none for a free one"
    )
    # Said before the operator started; how soon (within 30 s) is `make bench`'s figure.
    assert "kopf run" not in result.stdout


def test_a_chosen_emulator_or_metrics_port_that_is_taken_is_said_in_one_line() -> None:
    port = free_port()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", port))
        taken.listen()
        for setting in ("DEMO_EMULATOR_PORT", "DEMO_METRICS_PORT"):
            result = subprocess.run(
                [*MAKE, f"{setting}={port}"], cwd=REPO, capture_output=True, text=True, timeout=60
            )
            assert result.returncode == 2, result.stdout + result.stderr
            assert f"make demo: port {port} is taken; set another {setting}" in result.stderr
