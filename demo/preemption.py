"""The demo's ``research`` ClusterQueue story, as Kueue, the training-operator and the
kubelet write it: a low-priority PyTorchJob that Kueue preempts for a higher-priority
one, requeues, and admits again once quota frees up, and the PyTorchJob it was
preempted for, deleted mid-run by its user.

Its 8 A100s (``demo.kueue``): ``mnist-ddp`` holds 2 until 12 minutes ago;
``vit-pretrain`` (4, preemptible) runs from 79 minutes ago; ``resnet-sweep-3`` (4)
arrives 25 minutes ago, 2 more than are free, and Kueue preempts ``vit-pretrain``. Its
pods are deleted (the kubelet stops them, exit 143), its quota released 23 minutes ago;
``resnet-sweep-3`` is admitted a minute later; ``vit-pretrain`` waits, 2 GPUs short,
until ``mnist-ddp`` ends, then runs again with new pods and succeeds 3 minutes ago."""

import asyncio

from demo import training_logs as printed
from demo.controllers import (
    PYTORCHJOBS,
    Plan,
    ago,
    finish,
    start_pods,
    started_job,
)
from demo.kueue import Workload, no_room
from testbed import objects as o
from testbed.cluster import PODS, Cluster
from testbed.logs import Logs
from testbed.objects import Body

VIT = Plan(
    resource=PYTORCHJOBS,
    example="pytorch-simple.yaml",
    name="vit-pretrain",
    namespace="research",
    tenant="team-vision",
    user="frank",
    queue="research",
    kueue=True,
    replicas=[("Master", 0), ("Worker", 0)],
    gpus=2,
    cpu="8",
    memory="64Gi",
    created=81,
    waited=2,
)

RESNET = Plan(
    resource=PYTORCHJOBS,
    example="pytorch-simple.yaml",
    name="resnet-sweep-3",
    namespace="research",
    tenant="team-vision",
    user="dave",
    queue="research",
    kueue=True,
    replicas=[("Master", 0), ("Worker", 0)],
    gpus=2,
    cpu="8",
    memory="32Gi",
    created=25,
    waited=3,
)
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"


async def preempted_then_readmitted(cluster: Cluster, logs: Logs) -> None:
    """Both jobs' lives, the preemption between them; what one job's objects go through
    in order, the two jobs' at once."""
    (vit, preemptee, first), (resnet, preemptor) = await asyncio.gather(
        preemptible_running(cluster), preemptor_pending(cluster)
    )
    await preemptee.preempted(ago(25), preemptor)
    resnet_pods, _ = await asyncio.gather(
        preemptor_running(cluster, resnet, preemptor),
        requeued_then_readmitted(cluster, logs, vit, preemptee, first),
    )
    await deleted_mid_run(cluster, resnet, resnet_pods, preemptor)


async def preemptible_running(cluster: Cluster) -> tuple[Body, Workload, list[tuple[Body, Body]]]:
    """vit-pretrain admitted a minute after its creation, its pods ready a minute later."""
    body = VIT.body()
    body["metadata"]["labels"][PRIORITY_LABEL] = "preemptible"
    vit = await cluster.create(VIT.resource, body)
    workload = Workload(cluster, vit, VIT, "preemptible")
    await workload.create(ago(VIT.created))
    await workload.admitted(ago(VIT.created - 1))
    pods = await started_job(cluster, VIT, vit)
    await workload.ready(ago(VIT.created - VIT.waited))
    return vit, workload, pods


async def preemptor_pending(cluster: Cluster) -> tuple[Body, Workload]:
    """resnet-sweep-3 submitted, 2 GPUs short: Kueue will preempt for it."""
    resnet = await cluster.create(RESNET.resource, RESNET.body())
    workload = Workload(cluster, resnet, RESNET, "research")
    await workload.create(ago(RESNET.created))
    await workload.pending(ago(RESNET.created), no_room(2))
    return resnet, workload


async def preemptor_running(
    cluster: Cluster, resnet: Body, workload: Workload
) -> list[tuple[Body, Body]]:
    """resnet-sweep-3 admitted once vit-pretrain's quota is released, and running."""
    await workload.admitted(ago(RESNET.created - RESNET.waited))
    pods = await started_job(cluster, RESNET, resnet)
    await workload.ready(ago(RESNET.created - RESNET.waited))
    return pods


async def requeued_then_readmitted(
    cluster: Cluster, logs: Logs, vit: Body, workload: Workload, first: list[tuple[Body, Body]]
) -> None:
    """vit-pretrain suspended, requeued, waiting; admitted again when mnist-ddp's 2
    GPUs free, 12 minutes ago; new pods, which succeed."""
    created = o.condition("Created", at=ago(VIT.created))
    stopped = o.condition("Running", "False", at=ago(25))
    suspended = o.condition("Suspended", at=ago(25), reason="JobSuspended")
    await job_written(cluster, vit, True, created, stopped, suspended)
    await stopped_by_kubelet(cluster, first)
    await workload.requeued(ago(23))
    await workload.pending(ago(22), no_room(2))

    await workload.admitted(ago(12))
    resumed = o.condition("Suspended", "False", at=ago(12), reason="JobResumed")
    await job_written(cluster, vit, False, created, resumed, o.condition("Running", at=ago(11)))
    second = await start_pods(cluster, vit, VIT, ago(11), created=ago(12))
    await workload.ready(ago(11))
    for rank, pod in enumerate(second):
        logs.write(pod[0], VIT.container, printed.resumed(rank, 31200))
        await finish(cluster, pod, 0, "Completed", ago(3))
    done = [o.condition("Running", "False", at=ago(3)), o.condition("Succeeded", at=ago(3))]
    await job_written(cluster, vit, False, created, resumed, *done, completion=ago(3))
    await workload.finished(ago(3), True, "Job finished successfully")


async def job_written(
    cluster: Cluster, job: Body, suspend: bool, *conditions: Body, completion: str | None = None
) -> None:
    """The job's ``runPolicy.suspend`` as Kueue sets it, and its conditions as the
    training-operator writes them."""
    meta = job["metadata"]
    patch = {
        "spec": {"runPolicy": {"suspend": suspend}},
        "status": o.job_status(*conditions, completion=completion),
    }
    await cluster.patch(PYTORCHJOBS, meta["namespace"], meta["name"], patch)


async def stopped_by_kubelet(cluster: Cluster, pods: list[tuple[Body, Body]]) -> None:
    """The training-operator deletes the suspended job's pods; the kubelet stops their
    containers (SIGTERM, exit 143) 2 minutes later, and they are gone (the API server
    removes a pod without finalizers once the kubelet says it stopped)."""
    for pod, status in pods:
        stopped = {
            "metadata": {"deletionTimestamp": ago(25)},
            "status": o.terminated_status(status, 143, "Error", ago(23)),
        }
        await cluster.patch(PODS, pod["metadata"]["namespace"], pod["metadata"]["name"], stopped)


async def deleted_mid_run(
    cluster: Cluster, job: Body, pods: list[tuple[Body, Body]], workload: Workload
) -> None:
    """`kubectl delete pytorchjob resnet-sweep-3`: the job goes, the garbage collector
    takes its pods and its Workload."""
    await cluster.delete(PYTORCHJOBS, job["metadata"]["namespace"], job["metadata"]["name"])
    for pod, _ in pods:
        await cluster.delete(PODS, pod["metadata"]["namespace"], pod["metadata"]["name"])
    await workload.delete()
