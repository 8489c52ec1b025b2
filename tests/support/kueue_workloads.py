"""Kueue's Workloads as the e2e tests play them on the emulated API (decision 43): a
Workload moved from state to state of its fixtures (tests/fixtures/kueue/), the
PyTorchJob it admits, and the pods of one of its attempts."""

import copy
from typing import Any

from jobarchive.core.kinds import BUILTIN_KINDS
from testbed import objects as o
from testbed.cluster import PODS, WORKLOADS, Cluster, Resource, job_resource, resource_of
from tests.support.usage_workload import pod_body, started

PYTORCHJOBS = resource_of("kubeflow.org", "PyTorchJob")
JOBS = [job_resource(kind) for kind in BUILTIN_KINDS]


class Workload:
    """One Workload in the emulated API, moved from state to state of its fixtures as
    Kueue writes them: the status whole, the managed fields' times."""

    def __init__(self, cluster: Cluster, resource: Resource = WORKLOADS) -> None:
        self.cluster = cluster
        self.resource = resource
        self.body: dict[str, Any] = {}

    async def create(self, state: str, **meta: Any) -> dict[str, Any]:
        self.body = o.with_meta(o.fixture(f"kueue/{state}.yaml"), **meta)
        self.body = await self.cluster.create(self.resource, self.body)
        return self.body

    async def become(self, state: str | dict[str, Any]) -> None:
        wanted = o.fixture(f"kueue/{state}.yaml") if isinstance(state, str) else state
        status = {key: None for key in self.body.get("status", {})}
        status.update(wanted["status"])
        meta = self.body["metadata"]
        patch = {
            "status": status,
            "metadata": {"managedFields": wanted["metadata"]["managedFields"]},
        }
        self.body = await self.cluster.patch(self.resource, meta["namespace"], meta["name"], patch)


async def attempt_pods(
    cluster: Cluster, job: dict[str, Any], start: str, finish: str, gone: bool
) -> None:
    """The job's master and three workers of one attempt, one GPU each, run from
    ``start`` to ``finish`` (then deleted when ``gone``: the job suspended)."""
    ns = job["metadata"]["namespace"]
    for role, index in [("Master", 0), ("Worker", 0), ("Worker", 1), ("Worker", 2)]:
        pod = pod_body(job, role, index, gpus=1)
        pod["status"] = started(f"2026-11-20T{start}Z")
        created = await cluster.create(PODS, pod)
        done = o.terminated_status(pod["status"], 0, "Completed", f"2026-11-20T{finish}Z")
        await cluster.patch(PODS, ns, created["metadata"]["name"], {"status": done})
        if gone:
            await cluster.delete(PODS, ns, created["metadata"]["name"])


def pytorch_job() -> dict[str, Any]:
    """The PyTorchJob of the fixtures' Workload: a master and three workers, a GPU each."""
    job = copy.deepcopy(o.fixture("kueue-pytorchjob.yaml"))
    del job["status"]
    specs = job["spec"]["pytorchReplicaSpecs"]
    specs["Worker"]["replicas"] = 3
    return job
