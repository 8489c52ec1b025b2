"""The live jobs are listed before Kopf's watches begin, so that the pods and Events of a
job whose own list Kopf has not read yet are stored at once instead of waiting for it
(a shard's catch-up, whose lists of every kind and namespace arrive in any order). A
list the operator may not read only leaves its jobs to the watches."""

import asyncio
from collections.abc import AsyncIterator

import aiohttp.web
import kmock
import pytest
from kubernetes_asyncio import client

from jobarchive.core.kinds import BUILTIN_KINDS, INTERMEDIATE_KINDS, KindRegistry
from jobarchive.infra.cluster import METADATA_ONLY
from jobarchive.recording.priming import list_live
from jobarchive.storage.models import Event, Job, Pod
from testbed import objects as o
from testbed.cluster import (
    BATCH_JOBS,
    EVENTS,
    PODS,
    Cluster,
    Emulator,
    Resource,
    emulated_cluster,
    resource_of,
)
from testbed.objects import owner_ref
from tests.support.operators import OperatorFactory
from tests.support.waiting import eventually

pytestmark = pytest.mark.e2e
TFJOBS = resource_of("kubeflow.org", "TFJob")
PYTORCHJOBS = resource_of("kubeflow.org", "PyTorchJob")
XGBOOSTJOBS = resource_of("kubeflow.org", "XGBoostJob")
TRAINJOBS = resource_of("trainer.kubeflow.org", "TrainJob")
JOBSETS = resource_of("jobset.x-k8s.io", "JobSet")
WORKERS = 20


class HeldJobLists(Emulator):
    """Holds Kopf's lists of ``held`` (plurals; TFJobs unless a test says otherwise)
    until ``release`` is set, and refuses the operator's own metadata-only list of
    PyTorchJobs as a server refuses what RBAC does not grant."""

    def __init__(self) -> None:
        super().__init__()
        self.release = asyncio.Event()
        self.held = {"tfjobs"}
        # Whether the operator's own list of TFJobs is held too (until the server stops).
        self.hold_own = False

    async def _handle(self, request: kmock.Request) -> aiohttp.web.StreamResponse:
        own = METADATA_ONLY in request.headers.get("Accept", "")
        plural = request.url.path.rsplit("/", 1)[-1]
        if request.action == kmock.action.LIST and plural in self.held:
            if not own:
                await self.release.wait()
            elif self.hold_own and plural == "tfjobs":
                await asyncio.Event().wait()
        if request.url.path.endswith("/pytorchjobs") and own:
            status = {"kind": "Status", "code": 403, "reason": "Forbidden"}
            return aiohttp.web.json_response(status, status=403)
        return await super()._handle(request)


@pytest.fixture
async def cluster() -> AsyncIterator[Cluster]:
    """The test bed's cluster, holding and refusing job lists as ``HeldJobLists`` does."""
    async with emulated_cluster(HeldJobLists()) as api:
        yield api


async def job_with_workers(cluster: Cluster, resource: Resource, example: str, key: str) -> str:
    """A job with ``WORKERS`` worker pods and an Event about each; the job's uid."""
    job = await cluster.create(resource, o.example(example))
    for index in range(WORKERS):
        pod = await cluster.create(PODS, o.kubeflow_pod(job, key, "Worker", index))
        await cluster.create(EVENTS, o.event(pod, "Pulled", "Container image pulled"))
    return str(job["metadata"]["uid"])


async def stored(job_uid: str, rows: tuple[int, int, int]) -> bool:
    """Whether the job's rows, its pods' and its Events' number ``rows``."""
    found = (
        await Job.filter(job_id=job_uid).count(),
        await Pod.filter(job_id=job_uid).count(),
        await Event.filter(job_id=job_uid).count(),
    )
    return found == rows


async def test_pods_and_events_of_a_job_kopf_has_not_listed_yet_are_stored_without_waiting(
    cluster: Cluster, start_operator: OperatorFactory
) -> None:
    emulator = cluster.emulator
    assert isinstance(emulator, HeldJobLists)
    job_uid = await job_with_workers(cluster, TFJOBS, "tfjob-simple.yaml", "tfReplicaSpecs")

    operator = await start_operator()

    # Kopf has not had the job: its pods and their Events are stored all the same.
    await eventually(lambda: stored(job_uid, (0, WORKERS, WORKERS)), within=60)
    assert (
        "Listed 1 live jobs and 0 of their intermediate objects before watching" in operator.log()
    )

    emulator.release.set()
    await eventually(lambda: stored(job_uid, (1, WORKERS, WORKERS)))


async def test_a_job_list_the_operator_may_not_read_leaves_its_jobs_to_the_watches(
    cluster: Cluster, start_operator: OperatorFactory
) -> None:
    emulator = cluster.emulator
    assert isinstance(emulator, HeldJobLists)
    emulator.release.set()
    job_uid = await job_with_workers(
        cluster, PYTORCHJOBS, "pytorch-simple.yaml", "pytorchReplicaSpecs"
    )

    operator = await start_operator()

    await eventually(lambda: stored(job_uid, (1, WORKERS, WORKERS)), within=60)
    refused = [line for line in operator.log().splitlines() if "lists before watching" in line]
    assert len(refused) == 1
    assert "/pytorchjobs: 403 Forbidden" in refused[0]


async def test_a_listing_the_server_does_not_answer_in_time_is_cut_keeping_what_it_found(
    cluster: Cluster,
) -> None:
    emulator = cluster.emulator
    assert isinstance(emulator, HeldJobLists)
    emulator.hold_own = True
    tfjob = await cluster.create(TFJOBS, o.example("tfjob-simple.yaml"))
    xgboost = await cluster.create(XGBOOSTJOBS, o.example("xgboostjob.yaml"))
    kinds = [
        kind
        for kind in BUILTIN_KINDS
        if kind.group == "kubeflow.org" and kind.plural in ("tfjobs", "xgboostjobs")
    ]

    async with client.ApiClient(client.Configuration(host=cluster.url)) as api:
        found = await list_live(api, KindRegistry(kinds), [None, "default"], within=1.0)

    meta = xgboost["metadata"]
    assert found.jobs == [(meta["namespace"], meta["name"], meta["uid"])] * 2
    assert found.lists == 2 * (len(kinds) + len(INTERMEDIATE_KINDS))
    assert sorted(found.failures) == [
        "/apis/kubeflow.org/v1/namespaces/default/tfjobs: not listed within 1 s",
        "/apis/kubeflow.org/v1/tfjobs: not listed within 1 s",
    ]
    assert tfjob["metadata"]["uid"] not in {uid for _, _, uid in found.jobs}


async def test_pods_behind_a_trainjobs_jobset_and_batch_job_kopf_has_not_listed_are_stored(
    cluster: Cluster, start_operator: OperatorFactory
) -> None:
    emulator = cluster.emulator
    assert isinstance(emulator, HeldJobLists)
    emulator.held = {"trainjobs", "jobsets", "jobs"}
    trainjob = await cluster.create(TRAINJOBS, o.fresh(o.fixture("trainjob-torch.yaml")))
    jobset = o.fresh(o.fixture("jobset-of-trainjob.yaml"))
    jobset["metadata"]["ownerReferences"] = [owner_ref(trainjob)]
    jobset = await cluster.create(JOBSETS, jobset)
    meta = jobset["metadata"]
    batch = {"metadata": {"name": f"{meta['name']}-node-0", "namespace": meta["namespace"]}}
    batch["metadata"]["ownerReferences"] = [owner_ref(jobset)]
    batch = await cluster.create(BATCH_JOBS, batch)
    for index in range(WORKERS):
        pod = {
            "metadata": {
                "name": f"{meta['name']}-node-0-{index}",
                "namespace": meta["namespace"],
                "ownerReferences": [owner_ref(batch)],
            },
            "spec": {"containers": [{"name": "node", "image": "pytorch/pytorch:2.5.1"}]},
            "status": {"phase": "Running"},
        }
        pod = await cluster.create(PODS, pod)
        await cluster.create(EVENTS, o.event(pod, "Started", "Started container node"))
    job_uid = str(trainjob["metadata"]["uid"])

    operator = await start_operator()

    # Kopf has had none of the three: the pods and their Events are stored all the same.
    await eventually(lambda: stored(job_uid, (0, WORKERS, WORKERS)), within=60)
    assert "Listed 1 live jobs and 2 of their intermediate objects" in operator.log()
    emulator.release.set()
    await eventually(lambda: stored(job_uid, (1, WORKERS, WORKERS)))
