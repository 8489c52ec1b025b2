"""Kinds that appear later, input that must not crash the operator, and databases."""

import contextlib
import json
import sqlite3
from urllib.parse import urlsplit

import pytest

from jobarchive.storage.models import Event, Job, Pod
from testbed import objects as o
from testbed.cluster import CRDS, EVENTS, PODS, Cluster, Resource, resource_of
from testbed.operator import OperatorProcess
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
    assert row.message == message
    odd_row = await Job.get(job_id=odd["metadata"]["uid"])
    assert odd_row.status == "Quarantined"
    assert sorted(await Job.all().values_list("job_id", flat=True)) == sorted(
        [odd["metadata"]["uid"], longest["metadata"]["uid"]]
    )
    log = operator.log()
    assert f"Skipping TFJob kubeflow/{too_long}: metadata.name is 254 characters" in log
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
    extra = {
        "group": "ml.example.com",
        "version": "v1",
        "plural": "llmjobs",
        "kind": "LLMJob",
        "replica_specs_key": "llmReplicaSpecs",
        "main_container": "trainer",
    }
    await start_operator(JOBARCHIVE_EXTRA_KINDS=json.dumps([extra]))
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
