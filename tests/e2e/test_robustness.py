"""Kinds that appear later, input that must not crash the operator, and databases."""

import contextlib
import json
import sqlite3
from urllib.parse import urlsplit

import pytest

from jobarchive.core.cutting import clip
from jobarchive.core.rows import MESSAGE_LENGTH
from jobarchive.storage.models import Event, Job, Pod
from testbed import objects as o
from testbed.cluster import CRDS, EVENTS, PODS, Cluster, Feed, Resource, resource_of
from testbed.operator import OperatorProcess
from tests.support.kinds import EXTRA_KINDS
from tests.support.operators import OperatorFactory
from tests.support.waiting import eventually

pytestmark = pytest.mark.e2e
TFJOBS = resource_of("kubeflow.org", "TFJob")
PADDLEJOBS = resource_of("kubeflow.org", "PaddleJob")


def crd(group: str, plural: str, kind: str, version: str) -> dict[str, object]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": plural, "kind": kind, "singular": kind.lower()},
            "versions": [{"name": version, "served": True, "storage": True}],
        },
    }


async def test_a_kind_whose_crd_appears_later_is_picked_up(
    cluster: Cluster, start_operator: OperatorFactory
) -> None:
    del cluster.emulator.resources[PADDLEJOBS.key]
    operator = await start_operator()
    await cluster.wait_watching([PODS, EVENTS, TFJOBS, CRDS])
    unresolved = [line for line in operator.log().splitlines() if "Unresolved resources" in line]
    assert len(unresolved) == 1
    assert "paddlejobs" in unresolved[0]

    cluster.serve(PADDLEJOBS)
    await cluster.create_unstamped(CRDS, crd("kubeflow.org", "paddlejobs", "PaddleJob", "v1"))
    await cluster.wait_watching([PADDLEJOBS])
    job = await cluster.create(PADDLEJOBS, o.example("paddle-simple-gpu.yaml"))
    row = await eventually(lambda: Job.filter(job_id=job["metadata"]["uid"]).first())
    assert row.kind == "PaddleJob"


async def test_odd_and_hostile_objects_are_skipped_or_stored_and_the_operator_keeps_going(
    cluster: Cluster, operator: OperatorProcess
) -> None:
    too_long = "n" * 254
    await cluster.create(TFJOBS, o.with_meta(o.example("tfjob-simple.yaml"), name=too_long))
    await cluster.create_unstamped(
        TFJOBS, o.with_meta(o.example("tfjob-simple.yaml"), name="no-uid", resourceVersion="1")
    )
    odd = o.with_meta(o.example("tfjob-simple.yaml"), name="odd")
    odd["status"] = {"conditions": [None, "x", {"type": "Quarantined", "status": "True"}]}
    odd["spec"]["tfReplicaSpecs"]["Worker"]["template"] = None
    odd = await cluster.create(TFJOBS, odd)
    longest = await cluster.create(
        TFJOBS, o.with_meta(o.example("tfjob-simple.yaml"), name="x" * 253)
    )
    # Half a MiB: the emulator, like aiohttp, refuses request bodies over 1 MiB.
    message = ('\'; DELETE FROM job_info; -- \\ "引用" \U0001f680 \U00010348 ' * 15_000)[:524_288]
    await cluster.create(EVENTS, o.event(odd, "Hostile", message, type="Warning"))

    row = await eventually(lambda: Event.filter(obj_uid=odd["metadata"]["uid"]).first())
    assert row.message == clip(message, MESSAGE_LENGTH)
    odd_row = await Job.get(job_id=odd["metadata"]["uid"])
    assert odd_row.status == "Quarantined"
    assert sorted(await Job.all().values_list("job_id", flat=True)) == sorted(
        [odd["metadata"]["uid"], longest["metadata"]["uid"]]
    )
    log = operator.log()
    assert f"Skipping TFJob kubeflow/{too_long[:200]}…(254 characters): metadata.name is 254" in log
    assert "Skipping TFJob kubeflow/no-uid: metadata.uid is missing" in log
    assert operator.running


async def test_without_configuration_it_records_into_the_embedded_sqlite_file(
    cluster: Cluster, start_operator: OperatorFactory
) -> None:
    operator = await start_operator(JOBARCHIVE_DB_URL=None, REGION="eu-west-1")
    await cluster.wait_watching([PODS, EVENTS, TFJOBS])
    job = await cluster.create(TFJOBS, o.example("tfjob-simple.yaml"))
    pod = await cluster.create(PODS, o.kubeflow_pod(job, "tfReplicaSpecs", "Worker", 0))
    database = operator.workdir / "jobarchive.sqlite3"

    def stored() -> list[tuple[str, str, str]]:
        if not database.exists():
            return []
        with contextlib.closing(sqlite3.connect(database)) as conn:
            try:
                return conn.execute(
                    "SELECT r.pod_id, j.job_id, r.deploy_region FROM replica_info r "
                    "JOIN job_info j ON j.job_id = r.job_id"
                ).fetchall()
            except sqlite3.OperationalError:
                return []

    async def rows() -> list[tuple[str, str, str]]:
        return stored()

    assert await eventually(rows) == [(pod["metadata"]["uid"], job["metadata"]["uid"], "eu-west-1")]
    assert "Database sqlite://jobarchive.sqlite3 (sqlite" in operator.log()


async def test_a_database_that_refuses_the_password_is_reported_without_the_password(
    cluster: Cluster, start_operator: OperatorFactory, mysql_server: tuple[str, object]
) -> None:
    address = urlsplit(mysql_server[0]).netloc.rpartition("@")[2]
    operator = await start_operator(
        JOBARCHIVE_DB_URL=f"mysql://root:hunter2-secret@{address}/nowhere"
    )

    async def reported() -> bool:
        return "Cannot open the database" in operator.log()

    await eventually(reported)
    log = operator.log()
    assert f"mysql://root:***@{address}/nowhere" in log
    assert "Access denied" in log
    assert "hunter2" not in log


async def test_a_kind_added_by_configuration_is_recorded_with_its_pods(
    cluster: Cluster, start_operator: OperatorFactory
) -> None:
    llmjobs = Resource("ml.example.com", "v1", "llmjobs", "LLMJob")
    cluster.serve(llmjobs)
    await start_operator(**EXTRA_KINDS)
    await cluster.wait_watching([PODS, EVENTS, llmjobs])
    spec = {
        "containers": [
            {"name": "trainer", "image": "llm:1", "resources": {"limits": {"nvidia.com/gpu": 8}}}
        ]
    }
    job = await cluster.create(
        llmjobs,
        {
            "metadata": {"name": "finetune", "namespace": "llm"},
            "spec": {"llmReplicaSpecs": {"Node": {"replicas": 4, "template": {"spec": spec}}}},
        },
    )
    pod = o.kubeflow_pod(job, "llmReplicaSpecs", "Node", 0)
    pod = await cluster.create(PODS, pod)
    row = await eventually(lambda: Pod.filter(pod_id=pod["metadata"]["uid"]).first())
    assert (row.job_id, row.image) == (job["metadata"]["uid"], "llm:1")
    job_row = await Job.get(job_id=job["metadata"]["uid"])
    assert job_row.kind == "LLMJob"
    assert json.loads(job_row.resources)["Node"] == {
        "replicas": 4,
        "resources": {"requests": {"nvidia.com/gpu": "8"}, "limits": {"nvidia.com/gpu": "8"}},
    }


async def test_a_job_whose_tenancy_annotation_nests_too_deep_is_stored_without_tenancy(
    cluster: Cluster, operator: OperatorProcess
) -> None:
    body = o.fixture("kubedl-tfjob.yaml")
    for field in ("uid", "resourceVersion", "creationTimestamp"):
        del body["metadata"][field]
    # Valid JSON, and deeper than Python's parser may recurse.
    body["metadata"]["annotations"]["kubedl.io/tenancy"] = "[" * 3000 + "]" * 3000
    job = await cluster.create(resource_of("training.kubedl.io", "TFJob"), body)
    pod = o.kubeflow_pod(job, "tfReplicaSpecs", "PS", 0)
    pod["metadata"]["labels"] = {"job-name": "mnist", "replica-type": "ps"}
    pod = await cluster.create(PODS, pod)

    row = await eventually(lambda: Job.filter(job_id=job["metadata"]["uid"]).first())
    assert (row.tenant, row.owner, row.deploy_region) == ("", "", None)
    pod_row = await eventually(lambda: Pod.filter(pod_id=pod["metadata"]["uid"]).first())
    assert pod_row.job_id == job["metadata"]["uid"]
    assert "failed with an exception" not in operator.log()


async def test_events_that_waited_for_a_pod_of_no_job_are_counted_unrelated(
    cluster: Cluster, operator: OperatorProcess
) -> None:
    nginx: dict[str, object] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "web-7d9f8",
            "namespace": "shop",
            "uid": "9b0c3a52-6f1e-4d7a-8c2b-1e5f3a7d9c01",
            "labels": {"app": "web"},
        },
        "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]},
        "status": {"phase": "Running"},
    }
    # The kubelet's Events, listed before the pod they are about.
    for reason in ("Scheduled", "Pulled", "Started"):
        await cluster.create(EVENTS, o.event(nginx, reason, f"{reason} web-7d9f8"))
    events = (
        "jobarchive_objects_total",
        frozenset({"kind": "Event", "outcome": "skipped_unrelated"}.items()),
    )
    waiting = ("jobarchive_waiting_objects", frozenset({"kind": "Event"}.items()))

    async def all_waiting() -> bool:
        return (await operator.scrape()).get(waiting) == 3

    await eventually(all_waiting)
    await cluster.create(PODS, nginx)

    async def judged() -> bool:
        metrics = await operator.scrape()
        return metrics.get(events) == 3 and metrics.get(waiting) == 0

    await eventually(judged)
    assert not await Event.all().exists()


async def test_past_its_bound_the_oldest_waiting_pods_are_dropped_counted_and_named(
    cluster: Cluster, start_operator: OperatorFactory
) -> None:
    feed = Feed(cluster, PODS)
    operator = await start_operator(JOBARCHIVE_WAITING_MAX="100")
    await cluster.wait_watching([PODS, EVENTS, TFJOBS])
    secret = "do-not-log-this-config"
    for index in range(105):
        feed.add(
            {
                "metadata": {
                    "name": f"launcher-{index}",
                    "namespace": "ml",
                    "labels": {"training.kubeflow.org/job-name": "never-created"},
                    "annotations": {"example.com/config": secret},
                },
                "spec": {"containers": [{"name": "launcher", "image": "mpi:1"}]},
            }
        )
    dropped = ("jobarchive_objects_total", frozenset({"kind": "Pod", "outcome": "dropped"}.items()))
    waiting = ("jobarchive_waiting_objects", frozenset({"kind": "Pod"}.items()))

    async def bounded() -> bool:
        metrics = await operator.scrape()
        return (metrics.get(waiting), metrics.get(dropped)) == (100, 5)

    await eventually(bounded)
    lines = [line for line in operator.log().splitlines() if "Dropped 1 object(s)" in line]
    assert len(lines) == 5
    assert all("Pod ml/launcher-" in line and "JOBARCHIVE_WAITING_MAX" in line for line in lines)
    assert secret not in operator.log()
