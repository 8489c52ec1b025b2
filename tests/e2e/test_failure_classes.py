"""Failure classes end to end (decision 42): the real operator records a failed worker
and reads its log tail through the emulated pods/log subresource, its classifying pass
files the job under the tail's CUDA OOM, and the job's JSON and ``jobarchive jobs
--failure`` show it; a site's rules file that does not parse stops the operator."""

import json
import pathlib

import pytest
from aiohttp.test_utils import TestClient, TestServer

from jobarchive.reading import api, auth
from jobarchive.reading.kube.discovery import PREFIX
from jobarchive.storage.failed import FailedJob
from testbed import objects as o
from testbed.cluster import PODS, Cluster
from testbed.logs import Logs
from testbed.mass_failure import PYTORCHJOBS, TRACEBACK, failed, job_named
from tests.support.commands import jobarchive
from tests.support.operators import OperatorFactory
from tests.support.waiting import eventually

pytestmark = pytest.mark.e2e
FINISHED = "2026-11-20T10:21:00Z"


async def test_a_worker_whose_tail_shows_a_cuda_oom_files_its_job_under_it(
    cluster: Cluster, start_operator: OperatorFactory, archive: str, tmp_path: pathlib.Path
) -> None:
    await start_operator(JOBARCHIVE_FAILURE_SETTLE="0")
    await cluster.wait_watching([PODS, PYTORCHJOBS])
    job = await job_named(cluster, "oom")
    worker = await cluster.create(PODS, o.kubeflow_pod(job, "pytorchReplicaSpecs", "Worker", 0))
    Logs(cluster).write(worker, "pytorch", "epoch 3 step 17\n" + TRACEBACK)
    await cluster.patch(PODS, "ml", worker["metadata"]["name"], {"status": failed(worker)})
    failing = o.job_status(o.condition("Created"), o.condition("Failed", at=FINISHED))
    await cluster.patch(
        PYTORCHJOBS, "ml", "oom", {"status": {**failing, "completionTime": FINISHED}}
    )

    async def classified() -> FailedJob | None:
        row = await FailedJob.filter(job_id=job["metadata"]["uid"]).first()
        return row if row is not None and row.failure_class != "Unknown" else None

    row = await eventually(classified)
    assert (row.failure_class, row.pod_name, row.container, row.exit_code) == (
        "GPUOutOfMemory",
        worker["metadata"]["name"],
        "pytorch",
        1,
    )
    env = {"JOBARCHIVE_DB_URL": archive}
    shown = jobarchive("job", "ml/oom", "-o", "json", cwd=tmp_path, env=env)
    assert shown.returncode == 0, shown.stderr
    detail = json.loads(shown.stdout)
    # Each failed pod its own class, shown before its raw reason in the pods' table.
    assert [pod["failure_class"] for pod in detail["pods"]] == ["GPUOutOfMemory"]
    failure = detail["failure"]
    assert failure["class"] == "GPUOutOfMemory" and failure["derived_exit_code"] == 1
    assert failure["detail"].startswith("torch.OutOfMemoryError: CUDA out of memory")
    # Wide enough for every column whole, whatever the terminal running the tests.
    printed = jobarchive("job", "ml/oom", cwd=tmp_path, env={**env, "COLUMNS": "200"}).stdout
    assert "GPUOutOfMemory; Error (exit code 1)" in printed
    why = printed.splitlines()[0]
    assert why.startswith(
        f"Why: GPUOutOfMemory (pod {worker['metadata']['name']}, container pytorch, exit code 1)"
        ": torch.OutOfMemoryError: CUDA out of memory"
    )
    listed = jobarchive("jobs", "--failure", "GPUOutOfMemory", cwd=tmp_path, env=env)
    assert listed.returncode == 0, listed.stderr
    assert "ml/oom" in listed.stdout.split()
    other = jobarchive("jobs", "--failure", "NCCLError", "-o", "json", cwd=tmp_path, env=env)
    assert other.returncode == 0 and json.loads(other.stdout)["items"] == []
    # kubectl's table of ArchivedJobs shows the class in its FAILURE column.
    table = "application/json;as=Table;g=meta.k8s.io;v=v1"
    async with TestClient(TestServer(api.Api(auth.NoAuth()).app())) as client:
        path = f"{PREFIX}/namespaces/ml/archivedjobs"
        answered = await (await client.get(path, headers={"Accept": table})).json()
        detail = await (await client.get(f"{path}/oom")).json()
    names = [column["name"] for column in answered["columnDefinitions"]]
    [cells] = [dict(zip(names, each["cells"], strict=True)) for each in answered["rows"]]
    assert (cells["Name"], cells["Status"], cells["Failure"]) == ("oom", "Failed", "GPUOutOfMemory")
    # Each ArchivedPod of its detail carries its own class, for the CLI through a kubeconfig.
    [pod] = detail["status"]["pods"]
    assert pod["status"]["failureClass"] == "GPUOutOfMemory"


async def test_a_rules_file_that_does_not_parse_stops_the_operator_in_one_line(
    start_operator: OperatorFactory, tmp_path: pathlib.Path
) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text("- class: Mine\n  tail: ['(a+)+']\n")
    operator = await start_operator(JOBARCHIVE_FAILURE_RULES_FILE=str(rules))
    assert await operator.exited() == 1
    [line] = [line for line in operator.log().splitlines() if "configuration error" in line]
    assert line.startswith(
        f"jobarchive: configuration error: JOBARCHIVE_FAILURE_RULES_FILE: {rules}:"
    )
