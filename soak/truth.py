"""The ground truth: every change the workload makes goes through ``Truth``, which makes it
in the emulated API and remembers, per object, each state it had, from when, the row
the archive must hold for that state, and when the object was deleted.

The expected rows are written by the workload, which knows what it did (a pod it made
fail with OOMKilled and exit code 137), not derived from the objects by the archive's
own rules: the soak is a second, independent account of what must be stored.
"""

import dataclasses
import time
from collections.abc import Callable
from typing import Any

from testbed.cluster import Cluster, Resource
from testbed.objects import Body

JOBS, PODS, EVENTS = "job_info", "replica_info", "event_info"
# The uid column of each table.
UID_COLUMN = {JOBS: "job_id", PODS: "pod_id", EVENTS: "event_id"}
Row = dict[str, Any]


@dataclasses.dataclass
class State:
    """One state of an object: from when, and the row the archive must hold for it."""

    since: float
    row: Row


@dataclasses.dataclass(eq=False)
class Tracked:
    """One object the workload made, and everything that happened to it."""

    # The table its row goes to; None: nothing of it may be stored.
    table: str | None
    resource: Resource
    namespace: str
    name: str
    uid: str
    # What it is, for the report: "PyTorchJob team-a/mnist-2", "unrelated Pod shop/web-1".
    label: str
    body: Body
    states: list[State]
    # Pods: their job; Events: what they are about.
    subject: "Tracked | None" = None
    deleted_at: float | None = None

    @property
    def live(self) -> bool:
        """Whether the object is still in the cluster."""
        return self.deleted_at is None

    @property
    def last_change(self) -> float:
        """When its last state began."""
        return self.states[-1].since


class Truth:
    """Makes changes in the emulated API and remembers them."""

    def __init__(self, cluster: Cluster, clock: Callable[[], float] = time.monotonic) -> None:
        self.cluster = cluster
        self.clock = clock
        self.objects: dict[str, Tracked] = {}

    async def create(
        self,
        resource: Resource,
        body: Body,
        table: str | None,
        row: Row,
        label: str,
        subject: Tracked | None = None,
    ) -> Tracked:
        """Create an object; ``row`` is what its table must hold for it (its uid, name and
        namespace are added here)."""
        created = await self.cluster.create(resource, body)
        meta = created["metadata"]
        tracked = Tracked(
            table=table,
            resource=resource,
            namespace=meta.get("namespace", ""),
            name=meta["name"],
            uid=meta["uid"],
            label=label,
            body=created,
            states=[State(self.clock(), dict(row))],
            subject=subject,
        )
        self.objects[tracked.uid] = tracked
        return tracked

    async def patch(self, tracked: Tracked, patch: Body, **row: Any) -> Body:
        """Merge-patch an object; ``row`` holds the columns its new state changes."""
        if not tracked.live:
            raise RuntimeError(f"{tracked.label} is patched after its deletion")
        tracked.body = await self.cluster.patch(
            tracked.resource, tracked.namespace, tracked.name, patch
        )
        tracked.states.append(State(self.clock(), {**tracked.states[-1].row, **row}))
        return tracked.body

    async def delete(self, tracked: Tracked) -> None:
        """Delete an object, as its owner, its garbage collector or its TTL does."""
        if not tracked.live:
            return
        await self.cluster.delete(tracked.resource, tracked.namespace, tracked.name)
        tracked.deleted_at = self.clock()
        # Gone from etcd: the emulator keeps deleted objects, and scans them all on
        # every request, so a soak of hours would slow down for nothing.
        key = (tracked.resource.key, tracked.namespace, tracked.name)
        if key in self.cluster.emulator.objects:
            del self.cluster.emulator.objects[key]

    def of_table(self, table: str | None) -> list[Tracked]:
        """Every object whose rows go to ``table`` (None: the unrelated ones)."""
        return [t for t in self.objects.values() if t.table == table]
