"""The demo's three jobs' lives, as the Kubeflow training-operator and the kubelet would
write them into a cluster: a PyTorchJob that succeeds, a TFJob whose worker is
OOM-killed, a PyTorchJob deleted mid-run. ``make demo`` plays them against the real
operator; the console's browser tests play them too, and take their screenshots of
what the archive recorded."""

import datetime

from testbed import objects as o
from testbed.cluster import EVENTS, PODS, Cluster, Resource, resource_of
from testbed.objects import Body

PYTORCHJOBS = resource_of("kubeflow.org", "PyTorchJob")
TFJOBS = resource_of("kubeflow.org", "TFJob")
IMAGE_PT = "docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727"
IMAGE_TF = "gcr.io/kubeflow-ci/tf-mnist-with-summaries:1.0"


def ago(minutes: float) -> str:
    moment = datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=minutes)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def running(container: str, image: str, node: int, started: str) -> Body:
    status = o.running_status(container, image, f"10.0.3.{node}", f"172.16.3.{node}")
    status["startTime"] = started
    status["containerStatuses"][0]["state"] = {"running": {"startedAt": started}}
    return status


async def start_pods(
    cluster: Cluster,
    job: Body,
    key: str,
    replicas: list[tuple[str, int]],
    container: str,
    image: str,
    started: str,
) -> list[tuple[Body, Body]]:
    """Create the job's pods, schedule them and start them; (pod, its running status)."""
    pods = []
    for node, (replica, index) in enumerate(replicas, start=11):
        pod = o.kubeflow_pod(job, key, replica, index)
        pod["metadata"]["creationTimestamp"] = job["metadata"]["creationTimestamp"]
        pod = await cluster.create(PODS, pod)
        await cluster.create(
            EVENTS,
            o.event(
                pod,
                "Scheduled",
                f"Successfully assigned "
                f"{pod['metadata']['namespace']}/"
                f"{pod['metadata']['name']} to gpu-node-{node}",
                first=started,
                component="default-scheduler",
            ),
        )
        status = running(container, image, node, started)
        await cluster.patch(
            PODS, pod["metadata"]["namespace"], pod["metadata"]["name"], {"status": status}
        )
        pods.append((pod, status))
    return pods


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


async def running_job(
    cluster: Cluster,
    resource: Resource,
    example: str,
    name: str,
    namespace: str,
    minutes_ago: int,
    replicas: list[tuple[str, int]],
    container: str,
    image: str,
) -> tuple[Body, list[tuple[Body, Body]]]:
    """A job created ``minutes_ago``, its pods started a minute later, and Running."""
    body = o.with_meta(
        o.example(example), name=name, namespace=namespace, creationTimestamp=ago(minutes_ago)
    )
    job = await cluster.create(resource, body)
    started = ago(minutes_ago - 1)
    key = SPECS_KEYS[resource.kind]
    pods = await start_pods(cluster, job, key, replicas, container, image, started)
    created = o.condition("Created", at=ago(minutes_ago))
    await set_conditions(cluster, resource, job, created, o.condition("Running", at=started))
    return job, pods


async def succeeding_pytorchjob(cluster: Cluster) -> None:
    job, pods = await running_job(
        cluster,
        PYTORCHJOBS,
        "pytorch-simple.yaml",
        "mnist-ddp",
        "research",
        95,
        [("Master", 0), ("Worker", 0)],
        "pytorch",
        IMAGE_PT,
    )
    for pod in pods:
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


async def oom_killed_tfjob(cluster: Cluster) -> None:
    job, workers = await running_job(
        cluster,
        TFJOBS,
        "tfjob-simple.yaml",
        "bert-finetune",
        "nlp",
        70,
        [("Worker", 0), ("Worker", 1)],
        "tensorflow",
        IMAGE_TF,
    )
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


async def deleted_mid_run(cluster: Cluster) -> None:
    job, pods = await running_job(
        cluster,
        PYTORCHJOBS,
        "pytorch-simple.yaml",
        "resnet-sweep-3",
        "research",
        25,
        [("Master", 0), ("Worker", 0)],
        "pytorch",
        IMAGE_PT,
    )
    # `kubectl delete pytorchjob resnet-sweep-3`: the job goes, the garbage collector
    # takes its pods.
    await cluster.delete(PYTORCHJOBS, job["metadata"]["namespace"], job["metadata"]["name"])
    for pod, _ in pods:
        await cluster.delete(PODS, pod["metadata"]["namespace"], pod["metadata"]["name"])


# What each job's status is once the operator has recorded the three stories.
RECORDED = {
    "mnist-ddp": "Succeeded",
    "bert-finetune": "Failed",
    "resnet-sweep-3": "Stopped",
}


async def play(cluster: Cluster) -> None:
    """The three lives, one after the other."""
    await succeeding_pytorchjob(cluster)
    await oom_killed_tfjob(cluster)
    await deleted_mid_run(cluster)
