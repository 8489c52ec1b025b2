"""The soak's noise: what no training job owns, a Deployment's pods, a backup CronJob's
batch Jobs and their pods, Events about them and about Nodes."""

import random
from typing import TYPE_CHECKING

from soak import bodies
from soak.bodies import suffix
from soak.truth import Tracked
from testbed import objects as o
from testbed.cluster import BATCH_JOBS, now_rfc3339
from testbed.cluster import EVENTS as EVENT_RESOURCE
from testbed.cluster import PODS as POD_RESOURCE

if TYPE_CHECKING:  # the workload starts the noise: each module names the other
    from soak.workload import Workload


class Noise:
    """What no training job owns: a Deployment's pods, a CronJob's batch Jobs and pods,
    Events about them and about Nodes."""

    def __init__(self, workload: "Workload", rng: random.Random) -> None:
        self.w = workload
        self.truth = workload.truth
        self.rng = rng
        self.web: list[Tracked] = []
        self.events: list[Tracked] = []
        self.nodes = [(f"gpu-node-{i}", str(random.Random(i).getrandbits(64))) for i in range(8)]
        self.backups = 0

    async def run(self) -> None:
        """Play the noise until the workload stops."""
        actions = {
            self.web_pod: 4,
            self.backup: 2,
            self.node_event: 2,
            self.repeat: 3,
            self.roll: 2,
        }
        while await self.w.pause(self.rng, 1.0, 5.0):
            action = self.rng.choices(list(actions), weights=list(actions.values()))[0]
            await action()

    async def web_pod(self) -> None:
        """A Deployment's pod: scheduled, started, with its Events."""
        name = f"web-7d9f8c6b5-{suffix(self.rng)}"
        body = bodies.plain_pod(
            "shop", name, {"app": "web", "pod-template-hash": "7d9f8c6b5"}, "nginx:1.27"
        )
        body["metadata"]["ownerReferences"] = [
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": "web-7d9f8c6b5",
                "uid": "5f1d2c3b-0a9e-4c8d-b7a6-1e2f3a4b5c6d",
                "controller": True,
            }
        ]
        pod = await self.truth.create(POD_RESOURCE, body, None, {}, f"unrelated Pod shop/{name}")
        self.web.append(pod)
        await self.unrelated_event(pod, "Scheduled", f"Successfully assigned shop/{name} to node-3")
        node = self.rng.randrange(500)
        await self.truth.patch(pod, {"status": bodies.running(pod.body, node, "172.20.0.9")})
        await self.unrelated_event(pod, "Started", "Started container web")

    async def backup(self) -> None:
        """A CronJob's backup: a batch Job of no job, its pod run to completion."""
        self.backups += 1
        name = f"backup-{29000000 + self.backups}"
        batch = await self.truth.create(
            BATCH_JOBS,
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {"name": name, "namespace": "ops", "labels": {"app": "backup"}},
                "spec": {
                    "template": {
                        "spec": {"containers": [{"name": "restic", "image": "restic/restic:0.17"}]}
                    }
                },
                "status": {},
            },
            None,
            {},
            f"unrelated batch Job ops/{name}",
        )
        pod_name = f"{name}-{suffix(self.rng)}"
        body = bodies.plain_pod(
            "ops",
            pod_name,
            {"job-name": name, "batch.kubernetes.io/job-name": name, "controller-uid": batch.uid},
            "restic/restic:0.17",
        )
        body["metadata"]["ownerReferences"] = [o.owner_ref(batch.body)]
        pod = await self.truth.create(POD_RESOURCE, body, None, {}, f"unrelated Pod ops/{pod_name}")
        await self.unrelated_event(
            batch, "SuccessfulCreate", f"Created pod: {pod_name}", "job-controller"
        )
        running = bodies.running(pod.body, 7, "172.20.1.4")
        await self.truth.patch(pod, {"status": running})
        await self.truth.patch(
            pod, {"status": bodies.terminated(running, bodies.termination(0, "Completed"))}
        )
        await self.unrelated_event(batch, "Completed", "Job completed", "job-controller")

    async def node_event(self) -> None:
        """An Event about a Node."""
        name, uid = self.rng.choice(self.nodes)
        reason = self.rng.choice(["NodeHasSufficientMemory", "NodeReady", "NodeNotReady"])
        body = bodies.node_event(name, uid, reason, f"Node {name} status is now: {reason}")
        event = await self.truth.create(
            EVENT_RESOURCE, body, None, {}, f"unrelated Event {reason} about Node {name}"
        )
        self.events.append(event)

    async def repeat(self) -> None:
        """One of the unrelated Events seen again."""
        live = [event for event in self.events if event.live]
        if live:
            event = self.rng.choice(live)
            count = int(event.body.get("count") or 1) + 1
            await self.truth.patch(event, {"count": count, "lastTimestamp": now_rfc3339()})

    async def roll(self) -> None:
        """A rollout replaces one of the Deployment's pods."""
        live = [pod for pod in self.web if pod.live]
        if len(live) > 2:
            await self.truth.delete(self.rng.choice(live))

    async def unrelated_event(
        self, subject: Tracked, reason: str, message: str, component: str = "kubelet"
    ) -> None:
        """An Event about an object of no job."""
        body = bodies.event(subject.body, reason, message, component=component)
        event = await self.truth.create(
            EVENT_RESOURCE,
            body,
            None,
            {},
            f"unrelated Event {reason} about {subject.label}",
            subject,
        )
        self.events.append(event)
