"""The workload: training jobs of several kinds through their whole lives, as their
controllers, the scheduler and the kubelet write them, and unrelated noise beside.

A job's life is ``soak.lives``'s: created, its pods waiting for a node, scheduled,
started, and then one of several ends; the same name is sometimes submitted again.
The noise (``soak.noise``) is what no job owns. Events expire (``event_ttl``), as
Kubernetes deletes them after an hour.

Each job's life draws from a generator of its own, seeded from the soak's seed, so a
seed names the same plan of lives; the interleaving with the operator is real time.
"""

import asyncio
import random
from collections.abc import Coroutine
from typing import Any

from soak import bodies
from soak.lives import JobLife
from soak.noise import Noise
from soak.truth import EVENTS, JOBS, Tracked, Truth
from testbed.cluster import EVENTS as EVENT_RESOURCE
from testbed.cluster import now_rfc3339

NAMESPACES = ("team-a", "team-b", "research")
BASE_NAMES = ("mnist", "bert-finetune", "resnet50", "llama-sft", "wav2vec", "ctr-model")


class Names:
    """Job names taken per namespace: from a job's creation until it and its pods are
    gone, since its pods' names derive from it."""

    def __init__(self) -> None:
        self.taken: set[tuple[str, str]] = set()
        self._fresh = 0

    def pick(self, rng: random.Random) -> tuple[str, str]:
        """A free (namespace, name), taken from now on."""
        free = [
            (namespace, f"{base}-{index}")
            for namespace in NAMESPACES
            for base in BASE_NAMES
            for index in range(1, 4)
            if (namespace, f"{base}-{index}") not in self.taken
        ]
        if free:
            chosen = rng.choice(free)
        else:
            self._fresh += 1
            chosen = (rng.choice(NAMESPACES), f"{rng.choice(BASE_NAMES)}-x{self._fresh}")
        self.taken.add(chosen)
        return chosen


class Workload:
    """Starts job lives at a seeded random rate, plays the noise, expires Events."""

    def __init__(
        self,
        truth: Truth,
        rng: random.Random,
        jobs_per_minute: float,
        event_ttl: float,
    ) -> None:
        self.truth = truth
        self.rng = rng
        self.jobs_per_minute = jobs_per_minute
        self.event_ttl = event_ttl
        self.names = Names()
        self.stopping = asyncio.Event()
        self.errors: list[str] = []
        self.lives = 0
        self._tasks: set[asyncio.Task[None]] = set()

    async def run(self, seconds: float) -> None:
        """Start lives for ``seconds``, then stop every actor at its next step."""
        clock = self.truth.clock
        end = clock() + seconds
        self.spawn(Noise(self, random.Random(self.rng.random())).run(), "noise")
        self.spawn(self.expire_events(), "event expiry")
        while clock() < end:
            wait = self.rng.expovariate(self.jobs_per_minute / 60.0)
            await asyncio.sleep(max(0.0, min(wait, end - clock())))
            if clock() >= end:
                break
            plan = self.rng.choice(bodies.PLANS)
            namespace, name = self.names.pick(self.rng)
            life = JobLife(self, plan, namespace, name, random.Random(self.rng.random()))
            self.lives += 1
            self.spawn(life.run(), f"{plan.kind} {namespace}/{name}")
        self.stopping.set()
        while self._tasks:
            await asyncio.gather(*list(self._tasks))

    def spawn(self, coroutine: Coroutine[Any, Any, None], what: str) -> None:
        """Run an actor; an error of the workload itself is kept for the report."""

        async def guarded() -> None:
            try:
                await coroutine
            except Exception as exc:
                self.errors.append(f"workload error in {what}: {exc!r}"[:500])

        task = asyncio.create_task(guarded())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def pause(self, rng: random.Random, low: float, high: float) -> bool:
        """Wait a random while; False (at once) when the workload is stopping."""
        try:
            await asyncio.wait_for(self.stopping.wait(), rng.uniform(low, high))
        except TimeoutError:
            return True
        return False

    async def event(
        self,
        subject: Tracked,
        reason: str,
        message: str,
        type: str = "Normal",
        component: str = "kubelet",
    ) -> Tracked:
        """Record an Event about ``subject``: stored when its subject is a job, a pod of
        one or the launcher of one."""
        body = bodies.event(subject.body, reason, message, type, component)
        job = subject if subject.table == JOBS else subject.subject
        related = job is not None and job.table == JOBS
        row = {
            "obj_uid": subject.uid,
            "job_id": job.uid if related and job is not None else None,
            "kind": subject.body["kind"],
            "reason": reason,
            "count": 1,
            "last_timestamp": bodies.moment(body["lastTimestamp"]),
        }
        return await self.truth.create(
            EVENT_RESOURCE,
            body,
            EVENTS if related else None,
            row,
            f"Event {reason} about {subject.label}",
            subject=subject,
        )

    async def repeat(self, event: Tracked) -> None:
        """The same Event seen again: its count grows, its lastTimestamp moves."""
        if not event.live:
            return
        count = int(event.body.get("count") or 1) + 1
        last = now_rfc3339()
        await self.truth.patch(
            event,
            {"count": count, "lastTimestamp": last},
            count=count,
            last_timestamp=bodies.moment(last),
        )

    async def expire_events(self) -> None:
        """Delete Events not written for ``event_ttl`` seconds, as Kubernetes does."""
        rng = random.Random(self.rng.random())
        while await self.pause(rng, 2.0, 5.0):
            cutoff = self.truth.clock() - self.event_ttl
            for tracked in list(self.truth.objects.values()):
                if (
                    tracked.resource == EVENT_RESOURCE
                    and tracked.live
                    and tracked.last_change < cutoff
                ):
                    await self.truth.delete(tracked)
