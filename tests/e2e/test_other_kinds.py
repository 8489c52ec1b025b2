"""Kinds beyond Kubeflow v1, through the real operator: a Volcano Job with two tasks and a
Trainer v2 TrainJob whose pods belong to its JobSet's batch Jobs."""

import copy
import json

import pytest

from jobarchive.storage.models import Event, Job, Pod
from testbed import objects as o
from testbed.cluster import BATCH_JOBS, EVENTS, PODS, Cluster, resource_of
from testbed.objects import Body
from testbed.operator import OperatorProcess
from tests.support.waiting import eventually

pytestmark = pytest.mark.e2e
VOLCANO_JOBS = resource_of("batch.volcano.sh", "Job")
TRAINJOBS = resource_of("trainer.kubeflow.org", "TrainJob")
JOBSETS = resource_of("jobset.x-k8s.io", "JobSet")


def pod(name: str, namespace: str, labels: dict[str, str], owner: Body, template: Body) -> Body:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": labels,
            "ownerReferences": [{**owner, "controller": True, "blockOwnerDeletion": True}],
        },
        "spec": copy.deepcopy(template),
        "status": {"phase": "Pending"},
    }


async def test_a_volcano_job_with_two_tasks(cluster: Cluster, operator: OperatorProcess) -> None:
    body = o.fixture("volcano-job.yaml")
    for field in ("uid", "resourceVersion", "creationTimestamp"):
        del body["metadata"][field]
    job = await cluster.create(VOLCANO_JOBS, body)
    meta = job["metadata"]
    owner = {
        "apiVersion": job["apiVersion"],
        "kind": "Job",
        "name": meta["name"],
        "uid": meta["uid"],
    }
    created = []
    for task in job["spec"]["tasks"]:
        for index in range(task["replicas"]):
            labels = {
                "volcano.sh/job-name": meta["name"],
                "volcano.sh/task-spec": task["name"],
                "volcano.sh/job-namespace": meta["namespace"],
            }
            name = f"{meta['name']}-{task['name']}-{index}"
            created.append(
                await cluster.create(
                    PODS, pod(name, meta["namespace"], labels, owner, task["template"]["spec"])
                )
            )
    await cluster.create(
        EVENTS, o.event(created[0], "Scheduled", "Successfully assigned", component="volcano")
    )
    await cluster.patch(
        VOLCANO_JOBS,
        meta["namespace"],
        meta["name"],
        {"status": {"state": {"phase": "Completed", "lastTransitionTime": "2026-11-20T11:00:00Z"}}},
    )

    async def done() -> Job | None:
        return await Job.filter(job_id=meta["uid"], status="Succeeded").first()

    row = await eventually(done)
    assert (row.kind, row.api_version) == ("Job", "batch.volcano.sh/v1alpha1")

    async def pods() -> list[str]:
        found = [p.replica_type for p in await Pod.filter(job_id=meta["uid"]).order_by("name")]
        return found if len(found) == 3 else []

    assert await eventually(pods) == ["ps", "worker", "worker"]
    await eventually(lambda: Event.filter(obj_uid=created[0]["metadata"]["uid"]).exists())


async def test_a_trainjob_through_its_jobset_and_batch_jobs_deleted_before_its_pods(
    cluster: Cluster, operator: OperatorProcess
) -> None:
    body = o.fixture("trainjob-torch.yaml")
    for field in ("uid", "resourceVersion", "creationTimestamp"):
        del body["metadata"][field]
    job = await cluster.create(TRAINJOBS, body)
    meta = job["metadata"]
    ns, name = meta["namespace"], meta["name"]
    controller = {
        "apiVersion": job["apiVersion"],
        "kind": "TrainJob",
        "name": name,
        "uid": meta["uid"],
        "controller": True,
    }
    jobset_body = o.fixture("jobset-of-trainjob.yaml")
    for field in ("uid", "resourceVersion", "creationTimestamp"):
        del jobset_body["metadata"][field]
    jobset_body["metadata"]["ownerReferences"] = [controller]
    jobset = await cluster.create(JOBSETS, jobset_body)
    jobset_owner = {
        "apiVersion": jobset["apiVersion"],
        "kind": "JobSet",
        "name": name,
        "uid": jobset["metadata"]["uid"],
    }
    child = await cluster.create(
        BATCH_JOBS,
        {
            "metadata": {
                "name": f"{name}-node-0",
                "namespace": ns,
                "ownerReferences": [{**jobset_owner, "controller": True}],
                "labels": {"jobset.sigs.k8s.io/jobset-name": name},
            },
            "spec": {"parallelism": 2, "completions": 2},
        },
    )
    child_owner = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "name": f"{name}-node-0",
        "uid": child["metadata"]["uid"],
    }
    pods = []
    for index in range(2):
        labels = {
            "jobset.sigs.k8s.io/jobset-name": name,
            "jobset.sigs.k8s.io/replicatedjob-name": "node",
            "batch.kubernetes.io/job-name": f"{name}-node-0",
            "batch.kubernetes.io/job-completion-index": str(index),
        }
        template = {"containers": [{"name": "node", "image": job["spec"]["trainer"]["image"]}]}
        pods.append(
            await cluster.create(
                PODS, pod(f"{name}-node-0-{index}", ns, labels, child_owner, template)
            )
        )
    await cluster.create(
        EVENTS,
        o.event(
            child, "SuccessfulCreate", f"Created pod: {name}-node-0-0", component="job-controller"
        ),
    )

    async def stored() -> list[str]:
        found = [p.replica_type for p in await Pod.filter(job_id=meta["uid"])]
        return found if len(found) == 2 else []

    assert await eventually(stored) == ["node", "node"]
    # The TrainJob finishes; its JobSet and batch Job go first, the pods' last updates after.
    await cluster.delete(JOBSETS, ns, name)
    await cluster.delete(BATCH_JOBS, ns, f"{name}-node-0")
    for created in pods:
        await cluster.patch(
            PODS,
            ns,
            created["metadata"]["name"],
            {
                "status": {
                    "phase": "Succeeded",
                    "containerStatuses": [
                        {
                            "name": "node",
                            "state": {
                                "terminated": {
                                    "exitCode": 0,
                                    "reason": "Completed",
                                    "finishedAt": "2026-11-20T11:00:00Z",
                                }
                            },
                        }
                    ],
                }
            },
        )
    await cluster.patch(
        TRAINJOBS,
        ns,
        name,
        {
            "status": {
                "conditions": [
                    {
                        "type": "Complete",
                        "status": "True",
                        "reason": "JobSetCompleted",
                        "lastTransitionTime": "2026-11-20T11:00:01Z",
                    }
                ]
            }
        },
    )

    async def finished() -> bool:
        statuses = [p.status for p in await Pod.filter(job_id=meta["uid"])]
        done = await Job.filter(job_id=meta["uid"], status="Succeeded").exists()
        return done and statuses == ["Succeeded", "Succeeded"]

    await eventually(finished)
    row = await Job.get(job_id=meta["uid"])
    assert (row.kind, row.api_version) == ("TrainJob", "trainer.kubeflow.org/v1alpha1")
    # The roles as the JobSet states them, the runtime's initializer included.
    roles = json.loads(row.resources)
    assert {name: role["replicas"] for name, role in roles.items()} == {
        "dataset-initializer": 1,
        "node": 2,
    }
    event = await eventually(lambda: Event.filter(obj_uid=child["metadata"]["uid"]).first())
    assert event.job_id == meta["uid"]
