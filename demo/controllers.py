"""How the demo's controllers and kubelet write into the emulated cluster: jobs as their
users submit them (an owner, a queue, GPUs), their pods scheduled and started, their
containers ended, their conditions set, each at a time relative to now."""

import asyncio
import copy
import dataclasses
import datetime
import json

from testbed import objects as o
from testbed.cluster import EVENTS, PODS, Cluster, Resource, resource_of
from testbed.objects import Body

PYTORCHJOBS = resource_of("kubeflow.org", "PyTorchJob")
TFJOBS = resource_of("kubeflow.org", "TFJob")
IMAGE_PT = "docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727"
IMAGE_TF = "gcr.io/kubeflow-ci/tf-mnist-with-summaries:1.0"
KUEUE_QUEUE = "kueue.x-k8s.io/queue-name"
TENANCY = "kubedl.io/tenancy"
GPU = "nvidia.com/gpu"


def ago(minutes: float) -> str:
    moment = datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=minutes)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def running(container: str, image: str, node: int, started: str) -> Body:
    status = o.running_status(container, image, f"10.0.3.{node}", f"172.16.3.{node}")
    status["startTime"] = started
    status["containerStatuses"][0]["state"] = {"running": {"startedAt": started}}
    return status


def owned(body: Body, tenant: str, user: str) -> Body:
    """A copy of a job with KubeDL's tenancy annotation: whose it is."""
    result = copy.deepcopy(body)
    annotations = result["metadata"].setdefault("annotations", {})
    annotations[TENANCY] = json.dumps({"tenant": tenant, "user": user})
    return result


def requesting(template: Body, gpus: int, cpu: str, memory: str, limits_only: bool) -> None:
    """Give a pod template's containers GPUs, CPU and memory; ``limits_only`` as many users
    write GPUs (a limit, which the API server copies into the request)."""
    for container in template["spec"]["containers"]:
        limits = {GPU: str(gpus)}
        requests = (
            {"cpu": cpu, "memory": memory}
            if limits_only
            else {"cpu": cpu, "memory": memory, GPU: str(gpus)}
        )
        container["resources"] = {"requests": requests, "limits": limits}


async def start_pods(
    cluster: Cluster,
    job: Body,
    plan: "Plan",
    started: str,
    created: str | None = None,
) -> list[tuple[Body, Body]]:
    """Create the job's pods (at ``created``, else with the job), schedule them and
    start them, all at once; (pod, its running status)."""
    key = SPECS_KEYS[plan.resource.kind]

    async def start(node: int, replica: str, index: int) -> tuple[Body, Body]:
        pod = o.kubeflow_pod(job, key, replica, index)
        pod["metadata"]["creationTimestamp"] = created or job["metadata"]["creationTimestamp"]
        pod = await cluster.create(PODS, pod)
        await scheduled(cluster, pod, node, started)
        status = running(plan.container, plan.image, node, started)
        meta = pod["metadata"]
        await cluster.patch(PODS, meta["namespace"], meta["name"], {"status": status})
        return pod, status

    return list(
        await asyncio.gather(
            *(start(node, *replica) for node, replica in enumerate(plan.replicas, start=11))
        )
    )


async def scheduled(cluster: Cluster, pod: Body, node: int, at: str) -> None:
    """Bind the pod to its node, as the scheduler's binding sets ``spec.nodeName``, and
    say so in its Event."""
    meta = pod["metadata"]
    await cluster.patch(
        PODS, meta["namespace"], meta["name"], {"spec": {"nodeName": f"gpu-node-{node}"}}
    )
    message = f"Successfully assigned {meta['namespace']}/{meta['name']} to gpu-node-{node}"
    await cluster.create(
        EVENTS, o.event(pod, "Scheduled", message, first=at, component="default-scheduler")
    )


async def finish(cluster: Cluster, pod: tuple[Body, Body], code: int, reason: str, at: str) -> None:
    body, status = pod
    meta = body["metadata"]
    terminated = o.terminated_status(status, code, reason, at)
    await cluster.patch(PODS, meta["namespace"], meta["name"], {"status": terminated})


SPECS_KEYS = {"PyTorchJob": "pytorchReplicaSpecs", "TFJob": "tfReplicaSpecs"}


async def set_conditions(
    cluster: Cluster,
    resource: Resource,
    job: Body,
    *conditions: Body,
    completion: str | None = None,
) -> None:
    meta = job["metadata"]
    status = o.job_status(*conditions, completion=completion)
    await cluster.patch(resource, meta["namespace"], meta["name"], {"status": status})


@dataclasses.dataclass(frozen=True)
class Plan:
    """One Kubeflow job of the demo: what its user submits, and when it started."""

    resource: Resource
    example: str
    name: str
    namespace: str
    tenant: str
    user: str
    queue: str
    # Where the queue is named: Kueue's label, else Kubeflow's runPolicy.schedulingPolicy.
    kueue: bool
    replicas: list[tuple[str, int]]
    gpus: int
    cpu: str
    memory: str
    # Created this many minutes ago; its pods ran ``waited`` minutes later.
    created: int
    waited: int
    container: str = "pytorch"
    image: str = IMAGE_PT
    limits_only: bool = False

    def body(self) -> Body:
        """The job as its user submits it."""
        body = owned(o.example(self.example), self.tenant, self.user)
        body = o.with_meta(
            body, name=self.name, namespace=self.namespace, creationTimestamp=ago(self.created)
        )
        if self.kueue:
            body["metadata"].setdefault("labels", {})[KUEUE_QUEUE] = self.queue
        else:
            policy = body["spec"].setdefault("runPolicy", {}).setdefault("schedulingPolicy", {})
            policy["queue"] = self.queue
        for spec in body["spec"][SPECS_KEYS[self.resource.kind]].values():
            requesting(spec["template"], self.gpus, self.cpu, self.memory, self.limits_only)
        return body


async def running_job(cluster: Cluster, plan: Plan) -> tuple[Body, list[tuple[Body, Body]]]:
    """A job created ``plan.created`` minutes ago, its pods started ``plan.waited``
    minutes later, and Running."""
    job = await cluster.create(plan.resource, plan.body())
    return job, await started_job(cluster, plan, job)


async def started_job(cluster: Cluster, plan: Plan, job: Body) -> list[tuple[Body, Body]]:
    """The job's pods started ``plan.waited`` minutes after its creation, and the job
    Running."""
    started = ago(plan.created - plan.waited)
    pods = await start_pods(cluster, job, plan, started)
    created = o.condition("Created", at=ago(plan.created))
    await set_conditions(cluster, plan.resource, job, created, o.condition("Running", at=started))
    return pods
