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

from demo import training_logs as printed
from demo.controllers import (
    PYTORCHJOBS,
    Plan,
    ago,
    finish,
    set_conditions,
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
    """Both jobs' lives, the preemption between them."""
    body = VIT.body()
    body["metadata"]["labels"][PRIORITY_LABEL] = "preemptible"
    vit = await cluster.create(VIT.resource, body)
    preemptee = Workload(cluster, vit, VIT, "preemptible")
    await preemptee.create(ago(VIT.created))
    await preemptee.admitted(ago(VIT.created - 1))
    first = await started_job(cluster, VIT, vit)
    await preemptee.ready(ago(VIT.created - VIT.waited))

    resnet = await cluster.create(RESNET.resource, RESNET.body())
    preemptor = Workload(cluster, resnet, RESNET, "research")
    await preemptor.create(ago(RESNET.created))
    await preemptor.pending(ago(RESNET.created), no_room(2))
    await preemptee.preempted(ago(25), preemptor)
    await suspended(cluster, vit, first)
    await preemptee.requeued(ago(23))
    await preemptor.admitted(ago(RESNET.created - RESNET.waited))
    resnet_pods = await started_job(cluster, RESNET, resnet)
    await preemptor.ready(ago(RESNET.created - RESNET.waited))
    await preemptee.pending(ago(22), no_room(2))

    # mnist-ddp's 2 GPUs free 12 minutes ago: room for vit-pretrain again.
    await preemptee.admitted(ago(12))
    meta = vit["metadata"]
    unsuspended = {"spec": {"runPolicy": {"suspend": False}}}
    await cluster.patch(PYTORCHJOBS, meta["namespace"], meta["name"], unsuspended)
    await set_conditions(
        cluster,
        PYTORCHJOBS,
        vit,
        o.condition("Created", at=ago(VIT.created)),
        o.condition("Running", at=ago(11)),
    )
    second = await start_pods(cluster, vit, VIT, ago(11), created=ago(12))
    await preemptee.ready(ago(11))
    for rank, pod in enumerate(second):
        logs.write(pod[0], VIT.container, printed.resumed(rank, 31200))
        await finish(cluster, pod, 0, "Completed", ago(3))
    await set_conditions(
        cluster,
        PYTORCHJOBS,
        vit,
        o.condition("Created", at=ago(VIT.created)),
        o.condition("Running", "False", at=ago(3)),
        o.condition("Succeeded", at=ago(3)),
        completion=ago(3),
    )
    await preemptee.finished(ago(3), True, "Job finished successfully")

    await deleted_mid_run(cluster, resnet, resnet_pods, preemptor)


async def suspended(cluster: Cluster, job: Body, pods: list[tuple[Body, Body]]) -> None:
    """Kueue suspends the evicted job; the training-operator deletes its pods, whose
    containers the kubelet stops (SIGTERM, exit 143) 2 minutes later."""
    meta = job["metadata"]
    await cluster.patch(
        PYTORCHJOBS,
        meta["namespace"],
        meta["name"],
        {"spec": {"runPolicy": {"suspend": True}}},
    )
    await set_conditions(
        cluster,
        PYTORCHJOBS,
        job,
        o.condition("Created", at=ago(VIT.created)),
        o.condition("Running", "False", at=ago(25)),
        o.condition("Suspended", at=ago(25), reason="JobSuspended"),
    )
    for pod, status in pods:
        # Its last state, marked for deletion and stopped, then gone at once (the API
        # server removes a pod without finalizers when the kubelet says it stopped).
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
