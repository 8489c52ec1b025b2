"""The demo's jobs' lives, as the Kubeflow training-operator, Kueue, Volcano and the
kubelet would write them into a cluster: a PyTorchJob that succeeds, a TFJob whose
worker is OOM-killed, a PyTorchJob whose worker runs out of GPU memory twice after it
waited for quota, a Volcano Job still running with one pod never scheduled, and
(``demo.preemption``) a PyTorchJob Kueue preempts and admits again and the one it was
preempted for, deleted mid-run. Each has an owner and a tenant (KubeDL's tenancy
annotation), a queue (Kueue's label, Volcano's ``spec.queue`` or Kubeflow's scheduling
policy) and GPU requests; the Kueue-labelled ones have their Workloads, in Kueue's
ClusterQueues (``demo.kueue``); each container prints a training log
(``demo.training_logs``) that the emulated kubelet serves. ``make demo`` plays them
against the real operator; the console's browser tests play them too, and take their
screenshots of what the archive recorded."""

import asyncio
import copy

from demo import training_logs as printed
from demo import volcano
from demo.controllers import (
    IMAGE_TF,
    PYTORCHJOBS,
    TFJOBS,
    Plan,
    ago,
    finish,
    running_job,
    set_conditions,
    started_job,
)
from demo.kueue import Workload, over_capacity, set_up_queues
from demo.preemption import RESNET, VIT, preempted_then_readmitted
from testbed import objects as o
from testbed.cluster import EVENTS, PODS, Cluster
from testbed.logs import Logs

MNIST = Plan(
    resource=PYTORCHJOBS,
    example="pytorch-simple.yaml",
    name="mnist-ddp",
    namespace="research",
    tenant="team-vision",
    user="alice",
    queue="research",
    kueue=True,
    replicas=[("Master", 0), ("Worker", 0)],
    gpus=1,
    cpu="4",
    memory="16Gi",
    created=95,
    waited=6,
)

BERT = Plan(
    resource=TFJOBS,
    example="tfjob-simple.yaml",
    name="bert-finetune",
    namespace="nlp",
    tenant="team-language",
    user="bob",
    queue="nlp-a100",
    kueue=False,
    replicas=[("Worker", 0), ("Worker", 1)],
    gpus=4,
    cpu="16",
    memory="64Gi",
    created=70,
    waited=1,
    container="tensorflow",
    image=IMAGE_TF,
    limits_only=True,
)

LLAMA = Plan(
    resource=PYTORCHJOBS,
    example="pytorch-simple.yaml",
    name="llama-sft",
    namespace="nlp",
    tenant="team-language",
    user="carol",
    queue="nlp-a100",
    kueue=True,
    replicas=[("Master", 0), ("Worker", 0)],
    gpus=8,
    cpu="32",
    memory="256Gi",
    created=60,
    waited=14,
)

# Every Kubeflow job of the demo, as its user submits it.
PLANS = (MNIST, BERT, RESNET, LLAMA, VIT)


async def succeeding_pytorchjob(cluster: Cluster, logs: Logs) -> None:
    # Kueue admits it at once; its pods pull their images for 6 minutes.
    job = await cluster.create(MNIST.resource, MNIST.body())
    workload = Workload(cluster, job, MNIST, "research")
    await workload.create(ago(MNIST.created))
    await workload.admitted(ago(MNIST.created))
    pods = await started_job(cluster, MNIST, job)
    await workload.ready(ago(MNIST.created - MNIST.waited))
    for rank, pod in enumerate(pods):
        logs.write(pod[0], "pytorch", printed.succeeded(rank))
        await finish(cluster, pod, 0, "Completed", ago(12))
    await set_conditions(
        cluster,
        PYTORCHJOBS,
        job,
        o.condition("Created", at=ago(95)),
        o.condition("Running", "False", at=ago(12)),
        o.condition("Succeeded", at=ago(12)),
        completion=ago(12),
    )
    await cluster.create(
        EVENTS,
        o.event(
            job,
            "PyTorchJobSucceeded",
            "PyTorchJob research/mnist-ddp successfully completed.",
            first=ago(12),
            component="pytorchjob-controller",
        ),
    )
    await workload.finished(ago(12), True, "Job finished successfully")


async def oom_killed_tfjob(cluster: Cluster, logs: Logs) -> None:
    job, workers = await running_job(cluster, BERT)
    logs.write(workers[1][0], "tensorflow", printed.oom_killed_tensorflow())
    await finish(cluster, workers[1], 137, "OOMKilled", ago(31))
    await cluster.create(
        EVENTS,
        o.event(
            workers[1][0],
            "OOMKilling",
            "Memory cgroup out of memory: Killed process 4121 (python) total-vm:31250040kB",
            type="Warning",
            first=ago(31),
        ),
    )
    logs.write(workers[0][0], "tensorflow", printed.lost_its_peer_tensorflow())
    await finish(cluster, workers[0], 143, "Error", ago(30))
    failed = "TFJob nlp/bert-finetune has failed because 1 Worker replica(s) failed."
    await set_conditions(
        cluster,
        TFJOBS,
        job,
        o.condition("Created", at=ago(70)),
        o.condition("Running", "False", at=ago(30)),
        o.condition("Failed", at=ago(30), reason="TFJobFailed"),
        completion=ago(30),
    )
    await cluster.create(
        EVENTS,
        o.event(
            job, "TFJobFailed", failed, type="Warning", first=ago(30), component="tfjob-controller"
        ),
    )


async def restarted_then_failed(cluster: Cluster, logs: Logs) -> None:
    # 16 GPUs asked of nlp-a100's 8 A100s: it waits until its quota is raised.
    job = await cluster.create(LLAMA.resource, LLAMA.body())
    workload = Workload(cluster, job, LLAMA, "research")
    await workload.create(ago(LLAMA.created))
    await workload.pending(ago(LLAMA.created), over_capacity(LLAMA.gpus, LLAMA.gpus, 8))
    await workload.admitted(ago(LLAMA.created - LLAMA.waited))
    master, worker = await started_job(cluster, LLAMA, job)
    await workload.ready(ago(LLAMA.created - LLAMA.waited))
    # The worker runs out of GPU memory; the kubelet restarts it (restartPolicy OnFailure)
    # and it runs out again at the same step, and the master's collective times out.
    logs.write(worker[0], "pytorch", printed.cuda_out_of_memory(1, 2120), restart=0)
    logs.write(worker[0], "pytorch", printed.cuda_out_of_memory(1, 2120), restart=1)
    logs.write(master[0], "pytorch", printed.nccl_timeout(0, 2120))
    first = o.terminated_status(worker[1], 1, "Error", ago(30))["containerStatuses"][0]
    restarted = copy.deepcopy(worker[1])
    restarted["containerStatuses"][0].update(
        restartCount=1, lastState=first["state"], state={"running": {"startedAt": ago(29)}}
    )
    meta = worker[0]["metadata"]
    await cluster.patch(PODS, meta["namespace"], meta["name"], {"status": restarted})
    await finish(cluster, (worker[0], restarted), 1, "Error", ago(9))
    await finish(cluster, master, 1, "Error", ago(8))
    failed = "PyTorchJob nlp/llama-sft is failed because 1 Worker replica(s) failed."
    await set_conditions(
        cluster,
        PYTORCHJOBS,
        job,
        o.condition("Created", at=ago(60)),
        o.condition("Running", "False", at=ago(8)),
        o.condition("Failed", at=ago(8), reason="PyTorchJobFailed"),
        completion=ago(8),
    )
    await cluster.create(
        EVENTS,
        o.event(
            job,
            "PyTorchJobFailed",
            failed,
            type="Warning",
            first=ago(8),
            component="pytorchjob-controller",
        ),
    )
    await workload.finished(ago(8), False, failed)


# What each job's status is once the operator has recorded the stories.
RECORDED = {
    "mnist-ddp": "Succeeded",
    "bert-finetune": "Failed",
    "resnet-sweep-3": "Stopped",
    "llama-sft": "Failed",
    "detr-train": "Running",
    "vit-pretrain": "Succeeded",
}
# Each Kueue-admitted job's attempts' ends, in order, once recorded.
ATTEMPTS = {
    "mnist-ddp": ["Finished"],
    "vit-pretrain": ["Preempted", "Finished"],
    "resnet-sweep-3": ["Deleted"],
    "llama-sft": ["Finished"],
}
# How many reasons to wait Kueue gave each job, once recorded.
WAITS = {"vit-pretrain": 2, "resnet-sweep-3": 1, "llama-sft": 1}
# Each failed job's failure class, as the taxonomy's rules give it.
CLASSES = {"bert-finetune": "OOMKilled", "llama-sft": "GPUOutOfMemory"}
# How many failed container instances print a log whose tail the operator keeps.
FAILED_CONTAINERS = 5


async def play(cluster: Cluster, logs: Logs) -> None:
    """The lives, at once, as in a cluster; ``logs`` serves what the containers print."""
    await set_up_queues(cluster)
    await asyncio.gather(
        succeeding_pytorchjob(cluster, logs),
        oom_killed_tfjob(cluster, logs),
        preempted_then_readmitted(cluster, logs),
        restarted_then_failed(cluster, logs),
        volcano.running_with_one_pod_unscheduled(cluster, logs),
    )
