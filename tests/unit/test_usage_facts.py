"""The facts the usage accounting rests on (decision 32), as the pure code makes them: a
pod's requests as the scheduler counts them (init containers, limits standing in, every
accelerator, JOBARCHIVE_ACCELERATORS), its node; a job's queue; and the first time a
job ran, never moved later by what the training operator rewrites."""

import asyncio
import copy
import datetime

import pytest

from jobarchive.config import ConfigError, load
from jobarchive.core.accounting import ACCELERATORS, Requested, requested_of_json
from jobarchive.recording.convert import job_row, pod_row
from jobarchive.storage.batches import Pending, newest_rows
from jobarchive.storage.models import Job, earliest
from testbed import objects as o
from testbed.objects import Body
from tests.support import rows

KINDS = load({}).kinds
T1 = "2026-11-20T10:05:00Z"
T2 = "2026-11-20T11:00:00Z"


def at(text: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


def container(name: str, requests: Body | None = None, limits: Body | None = None) -> Body:
    resources: Body = {}
    if requests is not None:
        resources["requests"] = requests
    if limits is not None:
        resources["limits"] = limits
    return {"name": name, "image": "img", "resources": resources}


def pod(spec: Body) -> Body:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns", "uid": "pod-uid", "resourceVersion": "1"},
        "spec": spec,
    }


def counted(spec: Body, accelerators: frozenset[str] = ACCELERATORS) -> Requested:
    row = pod_row(pod(spec), "job", None, None, accelerators)
    return Requested(row["gpus"] or 0, row["cpu_millis"] or 0, row["memory_bytes"] or 0)


def test_a_pod_counts_the_sum_of_its_containers() -> None:
    spec = {
        "containers": [
            container("main", {"cpu": "1500m", "memory": "4Gi", "nvidia.com/gpu": "2"}),
            container("logger", {"cpu": "100m", "memory": "128Mi"}),
        ]
    }
    assert counted(spec) == Requested(2, 1600, 4 * 2**30 + 128 * 2**20)


def test_the_largest_init_container_wins_per_resource() -> None:
    spec = {
        "initContainers": [
            container("fetch", {"cpu": "4", "memory": "1Gi"}),
            container("warm", {"nvidia.com/gpu": "4"}),
        ],
        "containers": [container("main", {"cpu": "2", "memory": "8Gi", "nvidia.com/gpu": "1"})],
    }
    # cpu from the first init container, gpus from the second, memory from the main one.
    assert counted(spec) == Requested(4, 4000, 8 * 2**30)


def test_limits_stand_in_for_missing_requests() -> None:
    spec = {
        "containers": [
            container("main", limits={"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": 8}),
            container("side", {"cpu": "250m"}, limits={"cpu": "1", "memory": "1Gi"}),
        ]
    }
    assert counted(spec) == Requested(8, 8250, 33 * 2**30)


def test_every_accelerator_counts_and_the_setting_names_more() -> None:
    spec = {
        "containers": [
            container("a", {"nvidia.com/gpu": "2"}),
            container("b", {"amd.com/gpu": "1"}),
            container("c", {"habana.ai/gaudi": "4", "example.com/fpga": "1"}),
        ]
    }
    assert counted(spec).gpus == 3
    settings = load({"JOBARCHIVE_ACCELERATORS": " habana.ai/gaudi , example.com/fpga,"})
    assert settings.accelerators == ACCELERATORS | {"habana.ai/gaudi", "example.com/fpga"}
    assert counted(spec, settings.accelerators).gpus == 8
    assert load({}).accelerators == ACCELERATORS


@pytest.mark.parametrize(
    "value", ["cpu", "nvidia.com/", "/gpu", "a b/c", "kubernetes.io/gpu", "x/" + "y" * 64]
)
def test_a_name_that_is_no_extended_resource_is_refused(value: str) -> None:
    with pytest.raises(ConfigError, match="JOBARCHIVE_ACCELERATORS"):
        load({"JOBARCHIVE_ACCELERATORS": value})


def test_amounts_round_up_and_stay_within_their_columns() -> None:
    assert counted({"containers": [container("a", {"cpu": "0.0001", "memory": "1.5"})]}) == (
        Requested(0, 1, 2)
    )
    huge = {"containers": [container("a", {"cpu": "1e20", "nvidia.com/gpu": "1e12"})]}
    assert counted(huge) == Requested(2**31 - 1, 2**63 - 1, 0)
    assert counted({"containers": [container("a", {"cpu": "-2"})]}).cpu_millis == 0
    assert counted({}) == Requested(0, 0, 0)


def test_a_pod_keeps_its_node_name_beside_its_host_ip() -> None:
    body = pod({"nodeName": "gpu-node-17", "containers": [container("main")]})
    body["status"] = o.running_status("main", "img", "10.0.0.7", "172.16.0.9")
    row = pod_row(body, "job", None, None)
    assert (row["node_name"], row["host_ip"]) == ("gpu-node-17", "10.0.0.7")
    assert pod_row(pod({}), "job", None, None)["node_name"] is None


def test_stored_resources_are_counted_as_the_write_path_counts_them() -> None:
    spec = {
        "initContainers": [container("init", {"cpu": "3"})],
        "containers": [container("main", limits={"nvidia.com/gpu": "2", "memory": "1Gi"})],
    }
    row = pod_row(pod(spec), "job", None, None)
    assert requested_of_json(row["resources"], ACCELERATORS) == counted(spec)
    # KubeDL's JSON: the main container's requirements, limits alone standing in.
    kubedl = '{"limits":{"cpu":"2","nvidia.com/gpu":"1"},"requests":{"cpu":"1"}}'
    assert requested_of_json(kubedl, ACCELERATORS) == Requested(1, 1000, 0)
    for unreadable in ('{"requests": {"cpu": "1"', "[]", None, '"x"'):
        assert requested_of_json(unreadable, ACCELERATORS) is None


def queue(body: Body) -> str | None:
    return job_row(body, o.job_kind(KINDS, body), None)["queue"]


def test_the_queue_is_kueues_label_then_volcanos_then_kubeflows_scheduling_policy() -> None:
    kueued = o.fixture("kueue-pytorchjob.yaml")
    assert queue(kueued) == "user-queue"
    unlabelled = copy.deepcopy(kueued)
    del unlabelled["metadata"]["labels"]
    assert queue(unlabelled) == "gang-default"
    assert queue(o.fixture("volcano-job.yaml")) == "default"
    mpijob = o.fixture("mpijob-v2beta1-pi.yaml")
    mpijob["spec"]["runPolicy"]["schedulingPolicy"] = {"queue": "research"}
    assert queue(mpijob) == "research"


def test_kueues_label_names_the_queue_of_any_kind_and_none_is_none() -> None:
    for name in ("rayjob.yaml", "trainjob-torch.yaml", "volcano-job.yaml"):
        body = o.fixture(name)
        assert queue(body) in (None, "default")
        body["metadata"].setdefault("labels", {})["kueue.x-k8s.io/queue-name"] = "lq"
        assert queue(body) == "lq"
    assert queue(o.with_meta(o.example("tfjob-simple.yaml"), uid="u", resourceVersion="1")) is None


def tfjob(*conditions: Body, version: str, completion: str | None = None) -> Body:
    body = o.with_meta(o.example("tfjob-simple.yaml"), uid="u1", resourceVersion=version)
    body["status"] = o.job_status(*conditions, completion=completion)
    return body


RUNNING = tfjob(o.condition("Created"), o.condition("Running", at=T1), version="5")
# The training operator turns Running False at the finish, rewriting its time.
SUCCEEDED = tfjob(
    o.condition("Created"),
    o.condition("Running", "False", at=T2),
    o.condition("Succeeded", at=T2),
    version="6",
    completion=T2,
)


def test_a_kubeflow_job_ran_from_when_running_was_true_and_the_finish_does_not_move_it() -> None:
    first = job_row(RUNNING, o.job_kind(KINDS, RUNNING), None)["gmt_job_running"]
    then = job_row(SUCCEEDED, o.job_kind(KINDS, SUCCEEDED), None)["gmt_job_running"]
    assert (first, then) == (at(T1), None)
    assert earliest(first, then) == at(T1)
    assert earliest(None, at(T2)) == at(T2)
    assert earliest(at(T2), at(T1)) == at(T1)


async def test_two_versions_in_one_batch_keep_the_first_running_time() -> None:
    done = asyncio.get_running_loop().create_future
    life = [
        rows.job(version="5", gmt_job_running=at(T1)),
        rows.job(version="6", status="Succeeded", gmt_job_running=None),
    ]
    groups, superseded = newest_rows([Pending(Job, row, done()) for row in life])
    (kept,) = groups[(Job, "TFJob")][1]
    assert (kept.get("status"), kept.get("gmt_job_running"), superseded) == (
        "Succeeded",
        at(T1),
        {(Job, "TFJob"): 1},
    )
    # An older version after a newer one is dropped whole, as the database's guard drops it.
    groups, _ = newest_rows([Pending(Job, row, done()) for row in reversed(life)])
    assert groups[(Job, "TFJob")][1][0].get("gmt_job_running") is None


def test_a_tenants_queue_and_node_are_cut_to_their_columns_and_garbage_is_none() -> None:
    body = o.fixture("volcano-job.yaml")
    body["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "q" * 100_000}
    cut = queue(body)
    assert cut is not None and len(cut) == 253 and cut.startswith("qqq")
    body["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": {"a": 1}}
    body["spec"]["queue"] = ["default"]
    assert queue(body) is None
    for node in (["n"], 7, None, ""):
        assert pod_row(pod({"nodeName": node}), "job", None, None)["node_name"] is None
    long_node = pod_row(pod({"nodeName": "n" * 10_000}), "job", None, None)["node_name"]
    assert long_node is not None and len(long_node) == 253
    body["spec"]["queue"] = ""
    assert queue(body) is None
