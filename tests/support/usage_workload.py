"""The workload of the usage tests (decision 33): pods of 1, 2, 4 and 8 GPUs, a pod that
never started, a restarted container, a failed job across midnight, a running job, a
Kueue-queued job with a known wait, written to the emulated API for the real operator
to record."""

from jobarchive.storage.models import Job, Pod
from testbed import objects as o
from testbed.cluster import PODS, Cluster, resource_of
from tests.support.waiting import eventually

PYTORCHJOBS = resource_of("kubeflow.org", "PyTorchJob")
IMAGE = "docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727"
SINCE, UNTIL = "2026-11-20T00:00:00Z", "2026-11-22T00:00:00Z"
OOM = "OOMKilled (exit code 137)"


def job_body(name: str, namespace: str, created: str, queue: str | None = None) -> o.Body:
    body = o.with_meta(
        o.example("pytorch-simple.yaml"), name=name, namespace=namespace, creationTimestamp=created
    )
    if queue:
        body["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": queue}
    return body


def pod_body(job: o.Body, role: str, index: int, gpus: int, cpu: str = "0") -> o.Body:
    pod = o.kubeflow_pod(job, "pytorchReplicaSpecs", role, index)
    pod["metadata"]["creationTimestamp"] = job["metadata"]["creationTimestamp"]
    pod["spec"]["containers"][0]["resources"] = {
        "requests": {"cpu": cpu},
        "limits": {"nvidia.com/gpu": gpus},
    }
    return pod


def started(at: str, restarts: int = 0) -> o.Body:
    status = o.running_status("pytorch", IMAGE, "10.0.0.1", "172.16.0.1")
    status["startTime"] = at
    container = status["containerStatuses"][0]
    container["state"] = {"running": {"startedAt": at}}
    if restarts:
        container["restartCount"] = restarts
        container["lastState"] = {
            "terminated": {"exitCode": 1, "reason": "Error", "finishedAt": at, "startedAt": at}
        }
    return status


def ran(running: str, finished: str | None = None, outcome: str = "Succeeded") -> o.Body:
    conditions = [o.condition("Created", at=running), o.condition("Running", at=running)]
    if finished:
        conditions = [
            o.condition("Created", at=running),
            o.condition("Running", "False", at=finished),
            o.condition(outcome, at=finished),
        ]
    return o.job_status(*conditions, completion=finished)


async def pods_of(cluster: Cluster, job: o.Body, *pods: tuple[o.Body, o.Body | None]) -> None:
    for body, status in pods:
        made = await cluster.create(PODS, body)
        if status is not None:
            await cluster.patch(
                PODS, made["metadata"]["namespace"], made["metadata"]["name"], {"status": status}
            )


async def finish(cluster: Cluster, job: o.Body, running: str, finished: str, outcome: str) -> None:
    """Running, seen so (Kopf hands a handler only an object's latest state, and the
    first time running is kept from it), then finished."""
    namespace, name = job["metadata"]["namespace"], job["metadata"]["name"]
    await cluster.patch(PYTORCHJOBS, namespace, name, {"status": ran(running)})

    async def seen() -> Job | None:
        return await Job.filter(name=name, gmt_job_running__isnull=False).first()

    await eventually(seen)
    await cluster.patch(PYTORCHJOBS, namespace, name, {"status": ran(running, finished, outcome)})


async def record(cluster: Cluster) -> None:
    """The workload: A in team-a (queue research), created 08:00, running from 08:10
    (a 600 s wait): 1 GPU and 4 GPUs (2 CPUs; its container restarted once) for 2 h,
    a third pod of 4 GPUs that never started: 10 GPU-hours, 4 CPU-hours. B in team-a,
    created and running at 23:00, 2 GPUs until it fails at 01:00: 2 GPU-hours on each
    day. C in team-b, running from 12:00 on the 21st on 8 GPUs: 96 GPU-hours to the end
    of the window."""
    a = await cluster.create(
        PYTORCHJOBS, job_body("usage-a", "team-a", "2026-11-20T08:00:00Z", "research")
    )
    await pods_of(
        cluster,
        a,
        (
            pod_body(a, "Master", 0, 1),
            o.terminated_status(
                started("2026-11-20T08:10:00Z"), 0, "Completed", "2026-11-20T10:10:00Z"
            ),
        ),
        (
            pod_body(a, "Worker", 0, 4, "2"),
            o.terminated_status(
                started("2026-11-20T08:10:00Z", restarts=1), 0, "Completed", "2026-11-20T10:10:00Z"
            ),
        ),
        (pod_body(a, "Worker", 1, 4), None),
    )
    await finish(cluster, a, "2026-11-20T08:10:00Z", "2026-11-20T10:10:00Z", "Succeeded")
    b = await cluster.create(PYTORCHJOBS, job_body("usage-b", "team-a", "2026-11-20T23:00:00Z"))
    await pods_of(
        cluster,
        b,
        (
            pod_body(b, "Worker", 0, 2),
            o.terminated_status(
                started("2026-11-20T23:00:00Z"), 137, "OOMKilled", "2026-11-21T01:00:00Z"
            ),
        ),
    )
    await finish(cluster, b, "2026-11-20T23:00:00Z", "2026-11-21T01:00:00Z", "Failed")
    c = await cluster.create(PYTORCHJOBS, job_body("usage-c", "team-b", "2026-11-21T12:00:00Z"))
    await pods_of(cluster, c, (pod_body(c, "Worker", 0, 8), started("2026-11-21T12:00:00Z")))
    await cluster.patch(PYTORCHJOBS, "team-b", "usage-c", {"status": ran("2026-11-21T12:00:00Z")})

    async def recorded() -> bool:
        jobs = await Job.filter(status__in=["Succeeded", "Failed", "Running"]).count()
        finished = await Pod.filter(gmt_finished__isnull=False).count()
        running = await Pod.filter(gmt_started__isnull=False, gmt_finished__isnull=True).count()
        waited = await Job.filter(gmt_job_running__isnull=False).count()
        return (
            jobs == 3
            and finished == 3
            and running == 1
            and waited == 3
            and await Pod.all().count() == 5
        )

    await eventually(recorded)
