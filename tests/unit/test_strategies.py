"""Each job family's own status, times and roles, on objects shaped as their controllers
write them (Trainer v2 TrainJob, KubeRay RayJob, Volcano Job), every status value."""

import copy
import datetime
import json
from typing import Any

import pytest

from jobarchive.config import load
from jobarchive.core.kinds import BATCH_JOB
from jobarchive.core.rows import JobRow
from jobarchive.recording.convert import InvalidObject, job_row, pod_row
from jobarchive.recording.convert.strategies import jobset_roles
from testbed import objects as o
from testbed.objects import Body

KINDS = load({}).kinds


def row(body: Body) -> JobRow:
    return job_row(body, o.job_kind(KINDS, body), None)


def at(text: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


def condition(kind: str, status: str = "True", when: str = "2026-11-20T11:00:00Z") -> Body:
    return {"type": kind, "status": status, "lastTransitionTime": when, "reason": kind}


# TrainJob


def trainjob(**status: Any) -> Body:
    body = copy.deepcopy(o.fixture("trainjob-torch.yaml"))
    body["status"].update(status)
    return body


def test_a_trainjob_row_keeps_its_group_and_its_nodes_resources() -> None:
    converted = row(trainjob())
    assert (converted["kind"], converted["api_version"]) == (
        "TrainJob",
        "trainer.kubeflow.org/v1alpha1",
    )
    assert converted["status"] == "Running"
    assert json.loads(converted["resources"]) == {
        "node": {
            "replicas": 2,
            "resources": {
                "requests": {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "1"},
                "limits": {"nvidia.com/gpu": "1"},
            },
        }
    }


@pytest.mark.parametrize(
    ("conditions", "jobs", "status", "finished"),
    [
        ([], [], "Created", None),
        ([], [{"name": "node", "active": 0, "ready": 0}], "Created", None),
        ([], [{"name": "node", "active": 0, "ready": 1}], "Running", None),
        ([condition("Suspended")], [], "Suspended", None),
        ([condition("Suspended", "False")], [{"name": "node", "active": 1}], "Running", None),
        ([condition("Complete")], [], "Succeeded", "2026-11-20T11:00:00Z"),
        ([condition("Failed", when="2026-11-20T12:00:00Z")], [], "Failed", "2026-11-20T12:00:00Z"),
        ([condition("Suspended"), condition("Failed")], [], "Failed", "2026-11-20T11:00:00Z"),
    ],
)
def test_trainjob_status_and_finish(
    conditions: list[Body], jobs: list[Body], status: str, finished: str | None
) -> None:
    converted = row(trainjob(conditions=conditions, jobsStatus=jobs))
    assert converted["status"] == status
    assert converted["gmt_finished"] == (at(finished) if finished else None)


def test_a_trainjob_without_num_nodes_has_one_and_bad_counts_are_refused() -> None:
    body = trainjob()
    del body["spec"]["trainer"]["numNodes"]
    assert json.loads(row(body)["resources"])["node"]["replicas"] == 1
    body["spec"]["trainer"]["numNodes"] = "two"
    with pytest.raises(InvalidObject, match="numNodes"):
        row(body)
    body["spec"] = None
    assert json.loads(row(body)["resources"])["node"]["replicas"] == 1


# RayJob


def rayjob(**status: Any) -> Body:
    body = copy.deepcopy(o.fixture("rayjob.yaml"))
    body["status"].update(status)
    return body


def test_a_rayjob_has_a_head_and_worker_groups_of_replicas_times_hosts() -> None:
    resources = json.loads(row(rayjob())["resources"])
    assert resources["head"]["replicas"] == 1
    assert resources["head"]["resources"]["requests"] == {"cpu": "2", "memory": "8Gi"}
    assert resources["gpu-group"]["replicas"] == 4
    assert resources["gpu-group"]["resources"]["limits"] == {"nvidia.com/gpu": "1"}


@pytest.mark.parametrize(
    ("deployment", "job_status", "status"),
    [
        ("", None, "Created"),
        ("Initializing", "", "Created"),
        ("Waiting", "", "Created"),
        ("Running", "RUNNING", "Running"),
        ("Complete", "SUCCEEDED", "Succeeded"),
        ("Complete", "STOPPED", "Stopped"),
        ("Complete", "FAILED", "Failed"),
        ("Failed", "FAILED", "Failed"),
        ("ValidationFailed", None, "Failed"),
        ("Suspending", "RUNNING", "Suspended"),
        ("Suspended", "STOPPED", "Suspended"),
        ("Retrying", "FAILED", "Restarting"),
        ("SomethingNew", None, "Created"),
    ],
)
def test_rayjob_status(deployment: str, job_status: str | None, status: str) -> None:
    assert row(rayjob(jobDeploymentStatus=deployment, jobStatus=job_status))["status"] == status


def test_a_failed_rayjob_keeps_its_reason_and_message_and_its_end_time() -> None:
    failed = row(
        rayjob(
            jobDeploymentStatus="Failed",
            jobStatus="FAILED",
            reason="DeadlineExceeded",
            message="activeDeadlineSeconds exceeded",
            endTime="2026-11-20T11:30:00Z",
        )
    )
    assert failed["remark"] == "DeadlineExceeded: activeDeadlineSeconds exceeded"
    assert failed["gmt_finished"] == at("2026-11-20T11:30:00Z")
    running = row(rayjob(endTime="2026-11-20T11:30:00Z", reason="x"))
    assert (running["remark"], running["gmt_finished"]) == (None, None)


def test_a_worker_group_without_replicas_counts_its_minimum_and_bad_hosts_are_refused() -> None:
    body = rayjob()
    group = body["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]
    del group["replicas"]
    assert json.loads(row(body)["resources"])["gpu-group"]["replicas"] == 2
    group["numOfHosts"] = True
    with pytest.raises(InvalidObject, match="numOfHosts"):
        row(body)


# Volcano Job


def volcano(phase: str | None, **state: Any) -> Body:
    body = copy.deepcopy(o.fixture("volcano-job.yaml"))
    body["status"]["state"] = {"phase": phase, **state} if phase is not None else {}
    return body


def test_a_volcano_job_has_one_role_per_task_and_its_group_in_api_version() -> None:
    converted = row(volcano("Running"))
    assert (converted["kind"], converted["api_version"]) == ("Job", "batch.volcano.sh/v1alpha1")
    resources = json.loads(converted["resources"])
    assert {name: role["replicas"] for name, role in resources.items()} == {"ps": 1, "worker": 2}
    assert resources["worker"]["resources"]["limits"] == {"nvidia.com/gpu": "1"}


@pytest.mark.parametrize(
    ("phase", "status", "finished"),
    [
        (None, "Created", False),
        ("Pending", "Created", False),
        ("Running", "Running", False),
        ("Completing", "Running", False),
        ("Restarting", "Restarting", False),
        ("Completed", "Succeeded", True),
        ("Failed", "Failed", True),
        ("Terminated", "Failed", True),
        ("Aborting", "Suspended", False),
        ("Aborted", "Suspended", False),
    ],
)
def test_volcano_status(phase: str | None, status: str, finished: bool) -> None:
    converted = row(volcano(phase, lastTransitionTime="2026-11-20T11:00:00Z"))
    assert converted["status"] == status
    assert converted["gmt_finished"] == (at("2026-11-20T11:00:00Z") if finished else None)


def test_kubeflow_jobs_keep_their_shape_and_gain_their_api_version() -> None:
    body = o.with_meta(o.example("tfjob-simple.yaml"), uid="u", resourceVersion="1")
    converted = row(body)
    assert converted["api_version"] == "kubeflow.org/v1" and converted["remark"] is None


# Pods: the role label of each family


@pytest.mark.parametrize(
    ("labels", "role"),
    [
        (
            {
                "jobset.sigs.k8s.io/replicatedjob-name": "node",
                "jobset.sigs.k8s.io/jobset-name": "j",
            },
            "node",
        ),
        ({"volcano.sh/task-spec": "worker", "volcano.sh/job-name": "tf-dist"}, "worker"),
        ({"ray.io/node-type": "head", "ray.io/group": "headgroup", "ray.io/cluster": "c"}, "head"),
        (
            {"ray.io/node-type": "worker", "ray.io/group": "gpu-group", "ray.io/cluster": "c"},
            "gpu-group",
        ),
        ({"app": "something"}, ""),
    ],
)
def test_a_pod_role_comes_from_its_familys_label(labels: dict[str, str], role: str) -> None:
    pod = {
        "metadata": {
            "name": "p",
            "namespace": "n",
            "uid": "u",
            "resourceVersion": "1",
            "labels": labels,
        },
        "spec": {"containers": [{"name": "main", "image": "img"}]},
    }
    assert pod_row(pod, "job", None, None)["replica_type"] == role


# A plain batch Job, opted in


def batch_job(**status: Any) -> Body:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "finetune",
            "namespace": "ml",
            "uid": "b",
            "resourceVersion": "9",
            "creationTimestamp": "2026-11-20T10:00:00Z",
            "labels": {"team": "ml"},
        },
        "spec": {
            "parallelism": 2,
            "completions": 4,
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "train",
                            "image": "img",
                            "resources": {"limits": {"nvidia.com/gpu": "1"}},
                        }
                    ]
                }
            },
        },
        "status": status,
    }


@pytest.mark.parametrize(
    ("status", "expected", "finished"),
    [
        ({}, "Created", None),
        ({"active": 2, "startTime": "2026-11-20T10:00:01Z"}, "Running", None),
        ({"conditions": [condition("Suspended")]}, "Suspended", None),
        (
            {
                "conditions": [condition("SuccessCriteriaMet"), condition("Complete")],
                "completionTime": "2026-11-20T11:05:00Z",
            },
            "Succeeded",
            "2026-11-20T11:05:00Z",
        ),
        (
            {"conditions": [condition("FailureTarget"), condition("Failed")]},
            "Failed",
            "2026-11-20T11:00:00Z",
        ),
    ],
)
def test_batch_job_status_and_finish(status: Body, expected: str, finished: str | None) -> None:
    converted = job_row(batch_job(**status), BATCH_JOB, None)
    assert (converted["status"], converted["api_version"]) == (expected, "batch/v1")
    assert converted["gmt_finished"] == (at(finished) if finished else None)
    assert json.loads(converted["resources"])["job"]["replicas"] == 2


def test_a_jobset_states_a_trainjobs_roles_with_the_runtimes_defaults() -> None:
    roles = jobset_roles(o.fixture("jobset-of-trainjob.yaml"))
    assert {name: role["replicas"] for name, role in roles.items()} == {
        "dataset-initializer": 1,
        "node": 2,
    }
    assert roles["node"]["resources"]["limits"] == {"nvidia.com/gpu": "1"}
    assert jobset_roles({"spec": None}) == {}
    with pytest.raises(InvalidObject, match="parallelism"):
        jobset_roles({"spec": {"replicatedJobs": [{"template": {"spec": {"parallelism": "2"}}}]}})
