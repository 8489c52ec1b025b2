"""Pods reached through objects between them and their job: a RayJob's RayClusters (one
per retry) and submitter Job, including a cluster deleted before its pods; and plain
batch Jobs, recorded when opted in by a label selector and only then."""

import pytest

from jobarchive.core.kinds import BUILTIN_KINDS, INTERMEDIATE_KINDS
from jobarchive.reading import queries
from jobarchive.storage.models import Event, Job, Pod
from testbed import objects as o
from testbed.cluster import BATCH_JOBS, EVENTS, PODS, Cluster, job_resource, resource_of
from testbed.objects import Body, owner_ref
from testbed.operator import OperatorProcess
from tests.support.operators import OperatorFactory
from tests.support.waiting import eventually

pytestmark = pytest.mark.e2e
RAYJOBS = resource_of("ray.io", "RayJob")
RAYCLUSTERS = resource_of("ray.io", "RayCluster")
ALL = [PODS, EVENTS, *(job_resource(k) for k in (*BUILTIN_KINDS, *INTERMEDIATE_KINDS))]


async def ray_cluster(cluster: Cluster, rayjob: Body, suffix: str) -> Body:
    meta = rayjob["metadata"]
    return await cluster.create(
        RAYCLUSTERS,
        {
            "metadata": {
                "name": f"{meta['name']}-raycluster-{suffix}",
                "namespace": meta["namespace"],
                "ownerReferences": [owner_ref(rayjob)],
                "labels": {
                    "ray.io/originated-from-cr-name": meta["name"],
                    "ray.io/originated-from-crd": "RayJob",
                },
            },
            "spec": rayjob["spec"]["rayClusterSpec"],
        },
    )


def ray_pod(raycluster: Body, node_type: str, group: str, index: int) -> Body:
    meta = raycluster["metadata"]
    return {
        "metadata": {
            "name": f"{meta['name']}-{group}-{index}",
            "namespace": meta["namespace"],
            "ownerReferences": [owner_ref(raycluster)],
            "labels": {
                "ray.io/cluster": meta["name"],
                "ray.io/node-type": node_type,
                "ray.io/group": group,
                "ray.io/is-ray-node": "yes",
            },
        },
        "spec": {"containers": [{"name": f"ray-{node_type}", "image": "rayproject/ray:2.41.0"}]},
        "status": {"phase": "Running", "hostIP": "10.0.0.9"},
    }


async def test_a_rayjob_with_one_retry_keeps_every_pod_of_both_clusters(
    cluster: Cluster, operator: OperatorProcess
) -> None:
    rayjob = await cluster.create(RAYJOBS, o.fresh(o.fixture("rayjob.yaml")))
    ns, name, uid = (rayjob["metadata"][k] for k in ("namespace", "name", "uid"))
    first = await ray_cluster(cluster, rayjob, "aaaaa")
    first_pods = [await cluster.create(PODS, ray_pod(first, "head", "headgroup", 0))]
    first_pods += [
        await cluster.create(PODS, ray_pod(first, "worker", "gpu-group", i)) for i in range(2)
    ]
    submitter = await cluster.create(
        BATCH_JOBS,
        {
            "metadata": {"name": name, "namespace": ns, "ownerReferences": [owner_ref(rayjob)]},
            "spec": {
                "template": {
                    "spec": {
                        "containers": [
                            {"name": "ray-job-submitter", "image": "rayproject/ray:2.41.0"}
                        ]
                    }
                }
            },
        },
    )
    submitter_pod = await cluster.create(
        PODS,
        {
            "metadata": {
                "name": f"{name}-x7k2p",
                "namespace": ns,
                "ownerReferences": [owner_ref(submitter)],
                "labels": {"batch.kubernetes.io/job-name": name, "job-name": name},
            },
            "spec": {
                "containers": [{"name": "ray-job-submitter", "image": "rayproject/ray:2.41.0"}]
            },
        },
    )
    await cluster.create(EVENTS, o.event(first, "CreatedService", "Created service for head"))
    await cluster.patch(
        RAYJOBS, ns, name, {"status": {"jobDeploymentStatus": "Retrying", "failed": 1}}
    )
    # The retry: the first cluster goes before its pods (which then go too), and the
    # second cluster's pods are seen before the cluster itself.
    await cluster.delete(RAYCLUSTERS, ns, first["metadata"]["name"])
    for pod in first_pods:
        await cluster.delete(PODS, ns, pod["metadata"]["name"])
    second_meta: Body = {
        "metadata": {
            "uid": "5e1d9c3b-0000-4000-8000-000000000002",
            "name": f"{name}-raycluster-bbbbb",
            "namespace": ns,
        },
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
    }
    second_pods = [await cluster.create(PODS, ray_pod(second_meta, "head", "headgroup", 0))]
    await cluster.create(
        RAYCLUSTERS,
        {
            **second_meta,
            "metadata": {**second_meta["metadata"], "ownerReferences": [owner_ref(rayjob)]},
            "spec": rayjob["spec"]["rayClusterSpec"],
        },
    )
    await cluster.patch(
        RAYJOBS,
        ns,
        name,
        {
            "status": {
                "jobDeploymentStatus": "Complete",
                "jobStatus": "SUCCEEDED",
                "endTime": "2026-11-20T11:00:00Z",
            }
        },
    )

    async def done() -> Job | None:
        return await Job.filter(job_id=uid, status="Succeeded").first()

    row = await eventually(done)
    assert (row.kind, row.api_version) == ("RayJob", "ray.io/v1")

    async def pods() -> dict[str, tuple[str, bool]]:
        found = {p.name: (p.replica_type, p.is_in_etcd) for p in await Pod.filter(job_id=uid)}
        return (
            found
            if len(found) == 5 and not any(found[p["metadata"]["name"]][1] for p in first_pods)
            else {}
        )

    found = await eventually(pods)
    assert found[submitter_pod["metadata"]["name"]] == ("", True)
    assert found[second_pods[0]["metadata"]["name"]] == ("head", True)
    assert sorted(found[p["metadata"]["name"]][0] for p in first_pods) == [
        "gpu-group",
        "gpu-group",
        "head",
    ]
    await eventually(lambda: Event.filter(obj_uid=first["metadata"]["uid"]).exists())
    # The deleted cluster's Event is in the RayJob's timeline.
    detail = await queries.job_detail(uid)
    assert detail is not None and [e["reason"] for e in detail["events"]] == ["CreatedService"]


async def test_plain_batch_jobs_are_recorded_only_when_opted_in(
    cluster: Cluster, start_operator: OperatorFactory
) -> None:
    operator = await start_operator(JOBARCHIVE_BATCH_JOB_SELECTOR="team=ml")
    await cluster.wait_watching(ALL)
    template = {"spec": {"containers": [{"name": "train", "image": "img"}]}}

    async def batch_job(name: str, labels: dict[str, str], owners: list[Body]) -> Body:
        job = await cluster.create(
            BATCH_JOBS,
            {
                "metadata": {
                    "name": name,
                    "namespace": "ml",
                    "labels": labels,
                    "ownerReferences": owners,
                },
                "spec": {"parallelism": 1, "template": template},
            },
        )
        await cluster.create(
            PODS,
            {
                "metadata": {
                    "name": f"{name}-abcde",
                    "namespace": "ml",
                    "ownerReferences": [owner_ref(job)],
                    "labels": {"job-name": name, **labels},
                },
                "spec": template["spec"],
                "status": {"phase": "Running"},
            },
        )
        return job

    cron = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "name": "nightly",
        "uid": "c0000000-0000-4000-8000-000000000001",
        "controller": True,
    }
    opted_in = await batch_job("finetune", {"team": "ml"}, [])
    await batch_job("backup", {}, [])
    await batch_job("nightly-29000000", {"team": "ml"}, [cron])
    await cluster.patch(
        BATCH_JOBS,
        "ml",
        "finetune",
        {
            "status": {
                "conditions": [
                    {
                        "type": "Complete",
                        "status": "True",
                        "lastTransitionTime": "2026-11-20T11:00:00Z",
                    }
                ],
                "completionTime": "2026-11-20T11:00:00Z",
            }
        },
    )

    async def recorded() -> Job | None:
        return await Job.filter(namespace="ml", status="Succeeded").first()

    row = await eventually(recorded)
    assert (row.name, row.kind, row.api_version) == ("finetune", "Job", "batch/v1")
    await eventually(lambda: Pod.filter(job_id=opted_in["metadata"]["uid"]).exists())
    # The other two Jobs' pods were judged, not left waiting: unrelated.
    unrelated = (
        "jobarchive_objects_total",
        frozenset({"kind": "Pod", "outcome": "skipped_unrelated"}.items()),
    )

    async def judged() -> bool:
        return (await operator.scrape()).get(unrelated, 0) >= 2

    await eventually(judged)
    assert await Job.filter(namespace="ml").count() == 1
    assert await Pod.filter(namespace="ml").count() == 1
