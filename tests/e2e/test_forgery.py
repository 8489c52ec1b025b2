"""Nobody can forge a job's history from another namespace: a pod, RayCluster or Event
created in a namespace of one's own that names a job (or its pod or cluster) of
another namespace by uid is unrelated, as Kubernetes itself treats an ownerReference
across namespaces; the real operator against the emulated API."""

import copy
import uuid

import pytest

from jobarchive.reading import queries
from jobarchive.storage.models import Event, Job, Pod
from testbed import objects as o
from testbed.cluster import EVENTS, PODS, Cluster, resource_of
from testbed.objects import Body, owner_ref
from testbed.operator import OperatorProcess
from tests.support.waiting import eventually

pytestmark = pytest.mark.e2e
TFJOBS = resource_of("kubeflow.org", "TFJob")
RAYJOBS = resource_of("ray.io", "RayJob")
RAYCLUSTERS = resource_of("ray.io", "RayCluster")
VICTIM, ATTACKER = "ml-prod", "sandbox"


def unrelated(kind: str) -> tuple[str, frozenset[tuple[str, str]]]:
    return (
        "jobarchive_objects_total",
        frozenset({"kind": kind, "outcome": "skipped_unrelated"}.items()),
    )


def in_sandbox(body: Body, name: str) -> Body:
    """The same object, created by the attacker in a namespace of their own."""
    forged = copy.deepcopy(body)
    forged["metadata"].update(name=name, namespace=ATTACKER)
    for field in ("uid", "resourceVersion", "creationTimestamp"):
        forged["metadata"].pop(field, None)
    return forged


def forged_event(about: Body, reason: str) -> Body:
    """An Event the attacker creates in their namespace about someone else's object; its
    involvedObject still names the victim's namespace, which anyone may write."""
    event = o.event(about, reason, "all your GPUs are belong to us", type="Warning")
    event["metadata"]["namespace"] = ATTACKER
    return event


def ray_head(raycluster: Body, namespace: str, name: str) -> Body:
    return {
        "metadata": {
            "name": name,
            "namespace": namespace,
            "ownerReferences": [owner_ref(raycluster)],
            "labels": {"ray.io/node-type": "head", "ray.io/group": "headgroup"},
        },
        "spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.41.0"}]},
        "status": {"phase": "Running"},
    }


async def counted(operator: OperatorProcess, pods: int, events: int) -> None:
    """Wait until the operator has judged that many pods and Events unrelated."""

    async def judged() -> bool:
        metrics = await operator.scrape()
        return (metrics.get(unrelated("Pod"), 0), metrics.get(unrelated("Event"), 0)) == (
            pods,
            events,
        )

    await eventually(judged)


async def test_pods_clusters_and_events_of_another_namespace_stay_out_of_a_job(
    cluster: Cluster, operator: OperatorProcess
) -> None:
    job = await cluster.create(
        TFJOBS, o.with_meta(o.example("tfjob-simple.yaml"), namespace=VICTIM)
    )
    worker = await cluster.create(PODS, o.kubeflow_pod(job, "tfReplicaSpecs", "Worker", 0))
    rayjob_body = o.fixture("rayjob.yaml")
    rayjob_body["metadata"] = {"name": "rl-sweep", "namespace": VICTIM}
    rayjob = await cluster.create(RAYJOBS, rayjob_body)
    raycluster = await cluster.create(
        RAYCLUSTERS,
        {
            "metadata": {
                "name": "rl-sweep-raycluster-a1b2c",
                "namespace": VICTIM,
                "ownerReferences": [owner_ref(rayjob)],
            },
            "spec": rayjob["spec"]["rayClusterSpec"],
        },
    )
    head = await cluster.create(PODS, ray_head(raycluster, VICTIM, "rl-sweep-head-0"))
    await cluster.create(EVENTS, o.event(job, "SuccessfulCreatePod", "Created pod: worker-0"))
    await cluster.create(EVENTS, o.event(worker, "Scheduled", "Successfully assigned"))

    async def victims_stored() -> bool:
        uids = [worker["metadata"]["uid"], head["metadata"]["uid"]]
        pods = await Pod.filter(pod_id__in=uids).count()
        return pods == 2 and await Event.filter(job_id=job["metadata"]["uid"]).count() == 2

    await eventually(victims_stored)

    injected = await cluster.create(PODS, in_sandbox(worker, "injected-pod"))
    await cluster.create(PODS, ray_head(raycluster, ATTACKER, "hijacked-head"))
    decoy = await cluster.create(
        RAYCLUSTERS,
        {
            "metadata": {
                "name": "decoy",
                "namespace": ATTACKER,
                "ownerReferences": [owner_ref(rayjob)],
            },
            "spec": rayjob["spec"]["rayClusterSpec"],
        },
    )
    await cluster.create(PODS, ray_head(decoy, ATTACKER, "decoy-head"))
    # A label alone names a job only within the pod's own namespace.
    labelled = in_sandbox(worker, "labelled-pod")
    del labelled["metadata"]["ownerReferences"]
    await cluster.create(PODS, labelled)
    for about in (job, worker, rayjob, raycluster):
        await cluster.create(EVENTS, forged_event(about, "Forged"))
    await cluster.create(EVENTS, forged_event(injected, "Forged"))

    # Three pods (owned across namespaces, or by a cluster that is), five Events.
    await counted(operator, pods=3, events=5)
    detail = await queries.job_detail(job["metadata"]["uid"])
    assert detail is not None
    assert [p["name"] for p in detail["pods"]] == [worker["metadata"]["name"]]
    assert sorted(e["reason"] for e in detail["events"]) == ["Scheduled", "SuccessfulCreatePod"]
    ray_pods = [pod.name for pod in await Pod.filter(job_id=rayjob["metadata"]["uid"])]
    assert ray_pods == ["rl-sweep-head-0"]
    assert not await Pod.filter(namespace=ATTACKER).exists()
    assert not await Event.filter(reason="Forged").exists()
    assert await Job.all().count() == 2


async def test_forgeries_that_arrive_before_the_job_are_judged_when_it_comes(
    cluster: Cluster, operator: OperatorProcess
) -> None:
    body = o.with_meta(o.example("tfjob-simple.yaml"), namespace=VICTIM, uid=str(uuid.uuid4()))
    body["apiVersion"], body["kind"] = "kubeflow.org/v1", "TFJob"
    await cluster.create(
        PODS, in_sandbox(o.kubeflow_pod(body, "tfReplicaSpecs", "Worker", 0), "early")
    )
    await cluster.create(EVENTS, forged_event(body, "Forged"))
    early_worker = o.kubeflow_pod(body, "tfReplicaSpecs", "Worker", 1)
    early_worker = await cluster.create(PODS, early_worker)
    await cluster.create(EVENTS, o.event(body, "SuccessfulCreatePod", "Created pod: worker-1"))

    job = await cluster.create(TFJOBS, body)
    await counted(operator, pods=1, events=1)
    uid = job["metadata"]["uid"]
    await eventually(lambda: Pod.filter(pod_id=early_worker["metadata"]["uid"]).exists())
    await eventually(lambda: Event.filter(job_id=uid, reason="SuccessfulCreatePod").exists())
    assert await Pod.filter(job_id=uid).count() == 1
    assert not await Event.filter(reason="Forged").exists()
