import datetime
import json
from typing import Any

import pytest

from jobarchive.config import load
from jobarchive.recording.convert import (
    IntermediateLink,
    InvalidObject,
    NameLink,
    OwnerLink,
    mark_gone,
    pod_job_link,
    pod_row,
)
from testbed import objects as o
from testbed.objects import Body

KINDS = load({}).kinds
UTC = datetime.UTC
IMAGE = "docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727"


def pytorch_job() -> Body:
    return o.with_meta(
        o.example("pytorch-simple.yaml"),
        uid="job-uid",
        resourceVersion="10",
        creationTimestamp=o.T0,
    )


def worker_pod(**status: Any) -> Body:
    pod = o.kubeflow_pod(pytorch_job(), "pytorchReplicaSpecs", "Worker", 0)
    pod = o.with_meta(pod, uid="pod-uid", resourceVersion="11", creationTimestamp=o.T0)
    if status:
        pod["status"] = status
    return pod


def test_a_kubeflow_pod_links_to_its_controller_job() -> None:
    link = pod_job_link(worker_pod(), KINDS)
    assert isinstance(link, OwnerLink)
    assert (link.job_uid, link.kind.kind, link.kind.main_container) == (
        "job-uid",
        "PyTorchJob",
        "pytorch",
    )


def test_a_kubedl_pod_links_to_its_controller_job() -> None:
    pod = worker_pod()
    pod["metadata"]["ownerReferences"][0].update(
        apiVersion="training.kubedl.io/v1alpha1", kind="TFJob", uid="kubedl-uid"
    )
    link = pod_job_link(pod, KINDS)
    assert isinstance(link, OwnerLink)
    assert (link.job_uid, link.kind.group) == ("kubedl-uid", "training.kubedl.io")


def test_an_mpijob_launcher_links_through_its_batch_job_else_by_its_training_label() -> None:
    # The owner chain names the job by uid; the label only by a name that a job created
    # after a missed delete can share.
    launcher = o.fixture("mpijob-v2beta1-launcher-pod.yaml")
    assert pod_job_link(launcher, KINDS) == IntermediateLink("7d3e9a10-2b4c-4f5e-9a6b-8c7d6e5f4a3b")
    launcher["metadata"]["ownerReferences"] = []
    assert pod_job_link(launcher, KINDS) == NameLink("mpi", "pi")


def test_a_kubedl_pod_without_owner_links_by_job_name_and_replica_type() -> None:
    pod = {
        "metadata": {"namespace": "ns", "labels": {"job-name": "mnist", "replica-type": "worker"}}
    }
    assert pod_job_link(pod, KINDS) == NameLink("ns", "mnist")


def test_a_batch_job_pod_waits_on_its_job_to_learn_whether_it_is_a_training_pod() -> None:
    pod = {
        "metadata": {
            "namespace": "ns",
            "labels": {"job-name": "backup", "controller-uid": "x"},
            "ownerReferences": [
                {"apiVersion": "batch/v1", "kind": "Job", "uid": "x", "controller": True}
            ],
        }
    }
    assert pod_job_link(pod, KINDS) == IntermediateLink("x")


def test_a_non_controller_owner_reference_does_not_link() -> None:
    pod = worker_pod()
    pod["metadata"]["ownerReferences"][0]["controller"] = False
    del pod["metadata"]["labels"]
    assert pod_job_link(pod, KINDS) is None


@pytest.mark.parametrize(
    "metadata", [None, {}, {"ownerReferences": "x", "labels": ["a"]}, {"ownerReferences": [None]}]
)
def test_odd_metadata_links_to_nothing(metadata: object) -> None:
    assert pod_job_link({"metadata": metadata}, KINDS) is None


def test_a_pod_without_status_is_pending() -> None:
    pod = worker_pod()
    pod["status"] = None
    row = pod_row(pod, "job-uid", "pytorch", None)
    assert (row["status"], row["gmt_started"], row["host_ip"], row["remark"]) == (
        "Pending",
        None,
        None,
        None,
    )


def test_a_running_pod() -> None:
    row = pod_row(
        worker_pod(**o.running_status("pytorch", IMAGE, "10.0.0.1", "172.16.0.1")),
        "job-uid",
        "pytorch",
        "eu-1",
    )
    assert row["status"] == "Running"
    assert (row["pod_id"], row["job_id"], row["version"]) == ("pod-uid", "job-uid", "11")
    assert (row["name"], row["namespace"]) == ("pytorch-simple-worker-0", "kubeflow")
    assert (row["replica_type"], row["image"]) == ("worker", IMAGE)
    assert (row["host_ip"], row["pod_ip"], row["deploy_region"]) == (
        "10.0.0.1",
        "172.16.0.1",
        "eu-1",
    )
    assert row["gmt_started"] == datetime.datetime(2026, 11, 20, 10, 0, 5, tzinfo=UTC)
    assert json.loads(row["resources"]) == {"requests": {}, "limits": {}}


def test_an_oom_killed_pod_says_why_in_its_remark() -> None:
    running = o.running_status("pytorch", IMAGE, "10.0.0.1", "172.16.0.1")
    failed = o.terminated_status(running, 137, "OOMKilled", "2026-11-20T10:20:00Z", "out of memory")
    row = pod_row(worker_pod(**failed), "job-uid", "pytorch", None)
    assert row["status"] == "Failed"
    assert row["remark"] == "OOMKilled (exit code 137): out of memory"
    assert row["gmt_finished"] == datetime.datetime(2026, 11, 20, 10, 20, tzinfo=UTC)


def test_an_evicted_pod_has_the_pod_reason_as_remark() -> None:
    status = {"phase": "Failed", "reason": "Evicted", "message": "The node was low on memory."}
    row = pod_row(worker_pod(**status), "job-uid", "pytorch", None)
    assert row["remark"] == "Evicted: The node was low on memory."


def test_a_failing_sidecar_is_named_when_the_main_container_succeeded() -> None:
    running = o.running_status("pytorch", IMAGE, "10.0.0.1", "172.16.0.1")
    status = o.terminated_status(running, 0, "Completed", "2026-11-20T10:20:00Z")
    status["phase"] = "Failed"
    status["containerStatuses"].append(
        {"name": "agent", "state": {"terminated": {"exitCode": 2, "reason": "Error"}}}
    )
    assert pod_row(worker_pod(**status), "j", "pytorch", None)["remark"] == "Error (exit code 2)"


def test_a_succeeded_pod_has_no_remark() -> None:
    running = o.running_status("pytorch", IMAGE, "10.0.0.1", "172.16.0.1")
    status = o.terminated_status(running, 0, "Completed", "2026-11-20T10:20:00Z")
    assert pod_row(worker_pod(**status), "j", "pytorch", None)["remark"] is None


def test_the_main_container_is_found_by_name_else_the_first() -> None:
    pod = worker_pod()
    pod["spec"]["containers"].insert(0, {"name": "istio-proxy", "image": "istio/proxyv2:1.22"})
    assert pod_row(pod, "j", "pytorch", None)["image"] == IMAGE
    assert pod_row(pod, "j", "tensorflow", None)["image"] == "istio/proxyv2:1.22"
    assert pod_row(pod, "j", None, None)["image"] == "istio/proxyv2:1.22"


def test_the_mpi_launcher_pod_converts_with_its_labels_and_resources() -> None:
    row = pod_row(o.fixture("mpijob-v2beta1-launcher-pod.yaml"), "mpi-job-uid", None, None)
    assert (row["replica_type"], row["status"], row["image"]) == (
        "launcher",
        "Succeeded",
        "mpioperator/mpi-pi:openmpi",
    )
    assert json.loads(row["resources"]) == {
        "requests": {"cpu": "1", "memory": "1Gi"},
        "limits": {"cpu": "1", "memory": "1Gi"},
    }
    assert row["gmt_finished"] == datetime.datetime(2026, 11, 20, 9, 1, 8, tzinfo=UTC)


@pytest.mark.parametrize(
    ("labels", "replica_type"),
    [
        ({"training.kubeflow.org/replica-type": "ps"}, "ps"),
        ({"replica-type": "worker"}, "worker"),
        ({"training.kubeflow.org/job-role": "launcher"}, "launcher"),
        ({}, ""),
    ],
)
def test_replica_type_comes_from_the_first_training_label_present(
    labels: dict[str, str], replica_type: str
) -> None:
    pod = worker_pod()
    pod["metadata"]["labels"] = labels
    assert pod_row(pod, "j", None, None)["replica_type"] == replica_type


def test_a_pod_without_uid_is_invalid() -> None:
    pod = worker_pod()
    del pod["metadata"]["uid"]
    with pytest.raises(InvalidObject, match="uid"):
        pod_row(pod, "j", None, None)


def test_a_pending_pod_gone_becomes_stopped() -> None:
    row = pod_row(worker_pod(), "j", None, None)
    now = datetime.datetime(2026, 11, 22, tzinfo=UTC)
    mark_gone(row, now)
    assert (row["status"], row["gmt_finished"], row["is_in_etcd"]) == ("Stopped", now, False)


def test_a_trainjob_pod_links_through_its_jobsets_batch_job_else_by_the_jobset_name() -> None:
    pod = {
        "metadata": {
            "namespace": "team-llm",
            "labels": {
                "jobset.sigs.k8s.io/jobset-name": "llama-finetune",
                "jobset.sigs.k8s.io/replicatedjob-name": "node",
                "batch.kubernetes.io/job-name": "llama-finetune-node-0",
            },
            "ownerReferences": [
                {"apiVersion": "batch/v1", "kind": "Job", "uid": "x", "controller": True}
            ],
        }
    }
    assert pod_job_link(pod, KINDS) == IntermediateLink("x")
    pod["metadata"]["ownerReferences"] = []
    assert pod_job_link(pod, KINDS) == NameLink("team-llm", "llama-finetune")


def test_a_volcano_pod_links_to_its_controller_job_of_the_volcano_group() -> None:
    owner = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "uid": "vc-uid",
        "controller": True,
    }
    pod = {
        "metadata": {
            "namespace": "team-cv",
            "ownerReferences": [owner],
            "labels": {"volcano.sh/job-name": "tf-dist", "volcano.sh/task-spec": "ps"},
        }
    }
    link = pod_job_link(pod, KINDS)
    assert isinstance(link, OwnerLink)
    assert (link.job_uid, link.kind.group, link.kind.kind) == ("vc-uid", "batch.volcano.sh", "Job")


def test_a_pods_restarts_are_its_containers_added_up_with_the_last_ones_end() -> None:
    status = o.running_status("pytorch", IMAGE, "10.0.0.1", "172.16.0.1")
    assert pod_row(worker_pod(**status), "job-uid", "pytorch", None)["restarts"] == 0
    sidecar = {**status["containerStatuses"][0], "name": "sidecar"}
    ended = {"terminated": {"exitCode": 1, "finishedAt": "2026-11-20T10:20:00Z"}}
    earlier = {"terminated": {"exitCode": 137, "finishedAt": "2026-11-20T10:10:00Z"}}
    status["containerStatuses"][0].update(restartCount=2, lastState=ended)
    status["containerStatuses"].append({**sidecar, "restartCount": 1, "lastState": earlier})
    row = pod_row(worker_pod(**status), "job-uid", "pytorch", None)
    assert row["restarts"] == 3
    assert row["gmt_restarted"] == datetime.datetime(2026, 11, 20, 10, 20, tzinfo=UTC)
    # A hostile count is held to the column; one that is not a count is none.
    status["containerStatuses"][0]["restartCount"] = 10**30
    status["containerStatuses"][1]["restartCount"] = "7"
    row = pod_row(worker_pod(**status), "job-uid", "pytorch", None)
    assert row["restarts"] == 2**31 - 1
