"""A job name's lives, as the job's controller, the scheduler and the kubelet write them.

A job is created, its controller creates its pods (an MPIJob's launcher through a
batch Job), the pods wait for a node (some long, with a repeated FailedScheduling
Event), are scheduled, pull, start and run; the job's conditions follow. Then it
succeeds, or fails (a worker OOM-killed, exit code 137, or an error), or a worker
fails and is replaced under the same name while the job restarts, or the user
deletes the job mid-run and the garbage collector takes its pods. Containers are
OOM-killed and restarted in place (restartCount, lastState) with a repeated BackOff
Event. Finished jobs are deleted after a while (their TTL) or kept; a deleted job is
sometimes submitted again under the same name. Job names repeat across namespaces.
"""

import asyncio
import random
from typing import TYPE_CHECKING

from soak import bodies
from soak.bodies import KindPlan, suffix
from soak.truth import JOBS, PODS, Tracked
from testbed import objects as o
from testbed.cluster import BATCH_JOBS, now_rfc3339
from testbed.cluster import PODS as POD_RESOURCE
from testbed.objects import Body

if TYPE_CHECKING:  # the workload starts the lives: each module names the other
    from soak.workload import Workload

# How a job's life ends, and how often.
OUTCOMES = {
    "succeeds": 40,
    "oom-killed": 12,
    "fails": 8,
    "worker-replaced": 12,
    "deleted-mid-run": 15,
    "stuck-pending": 5,
}
FINISHED_KEPT = 0.5
RECREATED = 0.35
RESTARTED_IN_PLACE = 0.3
WAITS_FOR_NODES = 0.25
GPU_SHORTAGE = "0/12 nodes are available: 12 Insufficient nvidia.com/gpu. preemption: 0/12 nodes"
CUDA_ERROR = "RuntimeError: CUDA error: an illegal memory access was encountered"


class JobLife:
    """One job name's lives: a job, its pods and Events, and the same name again when the
    user resubmits a deleted job."""

    def __init__(
        self, workload: "Workload", plan: KindPlan, namespace: str, name: str, rng: random.Random
    ) -> None:
        self.w = workload
        self.truth = workload.truth
        self.plan = plan
        self.namespace = namespace
        self.name = name
        self.rng = rng
        self.job: Tracked
        # When the job's controller started it: the status's startTime.
        self.started = ""
        self.conditions: list[Body] = []
        self.pods: list[Tracked] = []
        self.launcher: Tracked | None = None
        # Pod uid -> (node, pod IP).
        self.placement: dict[str, tuple[int, str]] = {}

    async def run(self) -> None:
        """Play the name's lives; its name is free again once its last job is gone."""
        while await self.life():
            if not await self.w.pause(self.rng, 1.0, 8.0):
                return
        # A job kept keeps its name: another job of that name would clash with its pods.
        if not self.job.live:
            self.w.names.taken.discard((self.namespace, self.name))

    async def life(self) -> bool:
        """One job of the name, from submission to its end; whether it is resubmitted."""
        self.conditions, self.pods, self.launcher, self.placement = [], [], None, {}
        outcome = self.rng.choices(list(OUTCOMES), weights=list(OUTCOMES.values()))[0]
        kind = self.plan.kind
        self.job = await self.truth.create(
            self.plan.resource,
            bodies.job(self.plan, self.namespace, self.name),
            JOBS,
            {"kind": kind, "status": "Created", "gmt_finished": None},
            f"{kind} {self.namespace}/{self.name}",
        )
        self.started = now_rfc3339()
        await self.condition("Created", f"{kind}Created", "is created.")
        await self.create_pods()
        if not await self.w.pause(self.rng, 0.5, 3.0):
            return False
        stuck = outcome == "stuck-pending"
        if (stuck or self.rng.random() < WAITS_FOR_NODES) and not await self.wait_for_nodes(stuck):
            return False
        for pod in list(self.pods):
            if not await self.start(pod):
                return False
        await self.condition("Running", f"{kind}Running", "is running.")
        if self.rng.random() < RESTARTED_IN_PLACE and not await self.restart_in_place():
            return False
        if not await self.w.pause(self.rng, 2.0, 12.0):
            return False
        if outcome == "deleted-mid-run":
            await self.delete()
            return self.rng.random() < RECREATED
        if outcome == "worker-replaced" and not await self.replace_worker():
            return False
        await self.finish(outcome)
        if self.rng.random() < FINISHED_KEPT or not await self.w.pause(self.rng, 3.0, 20.0):
            return False
        await self.delete()
        return self.rng.random() < RECREATED

    async def condition(self, kind: str, reason: str, message: str, done: bool = False) -> None:
        """Set a job condition as the training-operator does."""
        text = f"{self.plan.kind} {self.namespace}/{self.name} {message}"
        self.conditions = bodies.set_condition(self.conditions, kind, reason, text)
        completion = now_rfc3339() if done else None
        status = bodies.job_status(self.conditions, self.started, completion)
        await self.truth.patch(
            self.job,
            {"status": status},
            status=bodies.status_of(self.conditions),
            gmt_finished=bodies.moment(completion),
        )

    async def create_pods(self) -> None:
        """The job's pods as its controller creates them, with an Event for each."""
        if self.plan.launcher:
            batch = bodies.launcher_job(self.job.body)
            self.launcher = await self.truth.create(
                BATCH_JOBS,
                batch,
                None,
                {},
                f"launcher Job {self.namespace}/{batch['metadata']['name']} of {self.job.label}",
                subject=self.job,
            )
            pod = bodies.launcher_pod(self.job.body, self.launcher.body, suffix(self.rng))
            created = await self.create_pod(pod, "launcher")
            await self.w.event(
                self.launcher,
                "SuccessfulCreate",
                f"Created pod: {created.name}",
                component="job-controller",
            )
        for role, index in bodies.roles(self.plan, self.job.body):
            pod = o.kubeflow_pod(self.job.body, self.plan.specs_key, role, index)
            created = await self.create_pod(pod, role.lower())
            await self.w.event(
                self.job,
                "SuccessfulCreatePod",
                f"Created pod: {created.name}",
                component=self.plan.controller,
            )

    async def create_pod(self, body: Body, replica_type: str) -> Tracked:
        """Create one pod of the job, Pending."""
        row = {
            "job_id": self.job.uid,
            "status": "Pending",
            "remark": None,
            "gmt_finished": None,
            "replica_type": replica_type,
            "image": bodies.container(body)["image"],
        }
        name = body["metadata"]["name"]
        pod = await self.truth.create(
            POD_RESOURCE,
            body,
            PODS,
            row,
            f"Pod {self.namespace}/{name} of {self.job.label}",
            self.job,
        )
        self.pods.append(pod)
        return pod

    async def wait_for_nodes(self, forever: bool) -> bool:
        """No node has the GPUs: FailedScheduling, again and again, on every pod."""
        events = [
            await self.w.event(
                pod, "FailedScheduling", GPU_SHORTAGE, "Warning", "default-scheduler"
            )
            for pod in self.pods
        ]
        repeats = self.rng.randint(2, 6)
        while forever or repeats > 0:
            repeats -= 1
            if not await self.w.pause(self.rng, 1.0, 4.0):
                return False
            for event in events:
                await self.w.repeat(event)
        return True

    async def start(self, pod: Tracked) -> bool:
        """Schedule a pod, pull its image, start its container: Running."""
        node = self.rng.randrange(500)
        pod_ip = f"172.16.{self.rng.randrange(256)}.{self.rng.randrange(1, 255)}"
        self.placement[pod.uid] = (node, pod_ip)
        await self.w.event(
            pod,
            "Scheduled",
            f"Successfully assigned {self.namespace}/{pod.name} to gpu-node-{node}",
            component="default-scheduler",
        )
        await self.truth.patch(pod, {"status": bodies.scheduled(node)})
        if not await self.w.pause(self.rng, 0.2, 2.0):
            return False
        image = bodies.container(pod.body)["image"]
        await self.w.event(pod, "Pulling", f'Pulling image "{image}"')
        await self.w.event(pod, "Pulled", f'Successfully pulled image "{image}"')
        container = bodies.container(pod.body)["name"]
        await self.w.event(pod, "Created", f"Created container {container}")
        await self.w.event(pod, "Started", f"Started container {container}")
        status = bodies.running(pod.body, node, pod_ip)
        await self.truth.patch(pod, {"status": status}, status="Running")
        return True

    async def restart_in_place(self) -> bool:
        """A container OOM-killed and restarted by the kubelet: the pod stays Running."""
        pod = self.rng.choice(self.pods)
        node, pod_ip = self.placement[pod.uid]
        backoff = await self.w.event(
            pod,
            "BackOff",
            f"Back-off restarting failed container {bodies.container(pod.body)['name']}",
            "Warning",
        )
        for restarts in range(1, self.rng.randint(2, 4)):
            killed = bodies.termination(137, "OOMKilled")
            status = bodies.running(pod.body, node, pod_ip, restarts, killed)
            await self.truth.patch(pod, {"status": status})
            await self.w.repeat(backoff)
            if not await self.w.pause(self.rng, 0.5, 3.0):
                return False
        return True

    async def replace_worker(self) -> bool:
        """A worker fails; the training-operator restarts the job, deletes the pod and
        creates it again under the same name (a new uid)."""
        victim = self.rng.choice(self.pods)
        await self.end_pod(victim, bodies.termination(1, "Error", CUDA_ERROR))
        kind = self.plan.kind
        await self.condition("Restarting", f"{kind}Restarting", "is restarting.")
        await self.w.event(
            self.job,
            f"{kind}Restarting",
            f"{kind} {self.namespace}/{self.name} is restarting because 1 replica(s) failed.",
            "Warning",
            self.plan.controller,
        )
        if not await self.w.pause(self.rng, 0.5, 3.0):
            return False
        await self.truth.delete(victim)
        self.pods.remove(victim)
        body = {key: victim.body[key] for key in ("apiVersion", "kind", "spec")}
        meta = victim.body["metadata"]
        body["metadata"] = {
            key: meta[key] for key in ("name", "namespace", "labels", "ownerReferences")
        }
        body["status"] = {"phase": "Pending", "qosClass": "BestEffort"}
        replacement = await self.create_pod(body, victim.states[0].row["replica_type"])
        if not await self.start(replacement):
            return False
        await self.condition("Running", f"{kind}Running", "is running.")
        return await self.w.pause(self.rng, 2.0, 8.0)

    async def end_pod(self, pod: Tracked, state: Body) -> None:
        """The pod's container ends with ``state`` and is not restarted."""
        status = bodies.terminated(pod.body["status"], state)
        failed = state["exitCode"] != 0
        await self.truth.patch(
            pod,
            {"status": status},
            status=status["phase"],
            remark=bodies.remark(state) if failed else None,
            gmt_finished=bodies.moment(state["finishedAt"]),
        )

    async def finish(self, outcome: str) -> None:
        """The job's end: every pod completes, or one fails and the rest are deleted
        (cleanPodPolicy Running), and the job's condition says so."""
        kind = self.plan.kind
        if outcome in ("succeeds", "worker-replaced"):
            for pod in self.pods:
                await self.end_pod(pod, bodies.termination(0, "Completed"))
            await self.condition("Succeeded", f"{kind}Succeeded", "successfully completed.", True)
            await self.w.event(
                self.job,
                f"{kind}Succeeded",
                f"{kind} {self.namespace}/{self.name} successfully completed.",
                component=self.plan.controller,
            )
            return
        victim = self.rng.choice(self.pods)
        if outcome == "oom-killed":
            await self.end_pod(victim, bodies.termination(137, "OOMKilled"))
            await self.w.event(
                victim,
                "OOMKilling",
                "Memory cgroup out of memory: Killed process 4121 (python3)",
                "Warning",
                "kernel-monitor",
            )
        else:
            await self.end_pod(victim, bodies.termination(1, "Error", CUDA_ERROR))
        for pod in self.pods:
            if pod is not victim:
                await self.truth.delete(pod)
        self.pods = [victim]
        await self.condition("Failed", f"{kind}Failed", "has failed.", True)
        await self.w.event(
            self.job,
            f"{kind}Failed",
            f"{kind} {self.namespace}/{self.name} has failed because 1 replica(s) failed.",
            "Warning",
            self.plan.controller,
        )

    async def delete(self) -> None:
        """``kubectl delete``: the job goes, then the garbage collector takes what it owned
        (not interrupted by the workload's end: a collector does not stop)."""
        await self.truth.delete(self.job)
        await asyncio.sleep(self.rng.uniform(0.2, 2.0))
        for owned in [*self.pods, *([self.launcher] if self.launcher else [])]:
            await self.truth.delete(owned)
        self.pods = []
