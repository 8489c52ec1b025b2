"""An emulated API whose lists and watches cost what a real API server's do, for benchmarks.

kmock's emulator (pinned at 0.8) inflates a catch-up on both sides of a comparison:
after a LIST, the watch that continues from the list's resourceVersion streams every
stored object again as ADDED (a real API server sends only what changed since that
version), so each object is handled twice; and ``Cluster.paginate`` scans every stored
object of every resource for each page. ``FastApi`` serves LIST and WATCH of the
resources given as an API server does:

- a LIST takes one snapshot of the resource's objects, under the emulator's lock,
  together with a mark on the emulator's bus of changes; its pages are slices of that
  snapshot (the ``continue`` token names it), and its resourceVersion names the mark;
- a WATCH from that resourceVersion streams what changed since the mark, nothing
  before it; a WATCH from no version streams the objects first, as the server's
  initial events; one from a version it does not know (or no longer keeps: marks
  live ``HISTORY`` seconds, as etcd compacts) answers ``410 Gone``, and the client
  lists again.

Reactions registered on the emulator before ``FastApi`` answer first (a benchmark's
own stream of pods, say). kmock has no public view of its bus or lock: they are read
here, as in ``testbed.watches``.
"""

import asyncio
import contextlib
import dataclasses
import itertools
from collections.abc import AsyncIterator, Iterable
from typing import Any

import kmock

from jobarchive.kinds import BUILTIN_KINDS, INTERMEDIATE_KINDS
from testbed.cluster import (
    CRDS,
    EVENTS,
    NAMESPACES,
    PODS,
    Cluster,
    Emulator,
    Resource,
    job_resource,
)
from testbed.objects import Body

# Seconds a list's resourceVersion can be watched from; older ones answer 410 Gone.
HISTORY = 300.0
GONE = {
    "type": "ERROR",
    "object": {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"},
}


class Expired(kmock.KubernetesError):
    """A continue token of a list no longer kept: 410, as the API server answers."""

    status = 410
    reason = "Expired"
    message = "The provided continue parameter is too old"


@dataclasses.dataclass(eq=False)
class Snapshot:
    """One LIST: its objects, the bus mark taken with them, and when it was taken."""

    items: list[Body]
    mark: Any
    target: Any
    taken: float


class FastApi:
    """Serves LIST and WATCH of ``resources`` as an API server does; see the module."""

    def __init__(self, cluster: Cluster, resources: Iterable[Resource]) -> None:
        self.cluster = cluster
        self._targets = {kmock.resource(r.group, r.version, r.plural) for r in resources}
        self._ids = itertools.count(1)
        # List id -> its snapshot, until watched from or expired (its mark held till then).
        self._lists: dict[str, Snapshot] = {}
        cluster.emulator[kmock.action.LIST, self._served] << self._list
        cluster.emulator[kmock.action.WATCH, self._served] << self._watch

    def _served(self, request: Any) -> bool:
        return request.resource in self._targets

    async def _snapshot(self, request: Any) -> Snapshot:
        """The resource's objects and a mark on its bus, taken together under the lock."""
        emulator = self.cluster.emulator
        target = request.resource
        async with emulator._lock:
            mark = await emulator._buses[target].mark()
            items = [
                obj.raw
                for (stored, namespace, _), obj in emulator.objects.items()
                if stored == target and not obj.deleted and request.namespace in (None, namespace)
            ]
        return Snapshot(items, mark, target, asyncio.get_running_loop().time())

    async def _release(self, snapshot: Snapshot) -> None:
        await self.cluster.emulator._buses[snapshot.target].unmark(snapshot.mark)

    async def _expire(self) -> None:
        """Forget lists older than ``HISTORY``, and their marks."""
        now = asyncio.get_running_loop().time()
        for ident, snapshot in list(self._lists.items()):
            if now - snapshot.taken > HISTORY:
                del self._lists[ident]
                await self._release(snapshot)

    async def _list(self, request: Any) -> Body:
        await self._expire()
        token = request.params.get("continue") or ""
        limit = int(request.params.get("limit") or 0)
        ident, _, offset = token.partition(":")
        snapshot = self._lists.get(ident) if token else None
        if token and snapshot is None:
            raise Expired()
        if snapshot is None:
            snapshot = await self._snapshot(request)
            ident = str(next(self._ids))
            self._lists[ident] = snapshot
        start = int(offset or 0)
        end = start + limit if limit else len(snapshot.items)
        more = end < len(snapshot.items)
        meta = {"resourceVersion": ident, "continue": f"{ident}:{end}" if more else ""}
        return {"metadata": meta, "items": snapshot.items[start:end]}

    async def _watch(self, request: Any) -> AsyncIterator[Body | bytes]:
        version = request.params.get("resourceVersion") or "0"
        initial: list[Body] = []
        snapshot: Snapshot | None
        if version == "0":
            snapshot = await self._snapshot(request)
            initial = snapshot.items
        else:
            snapshot = self._lists.pop(version, None)
        yield b""
        if snapshot is None:
            yield GONE
            return
        bus = self.cluster.emulator._buses[snapshot.target]
        try:
            for raw in initial:
                yield {"type": "ADDED", "object": raw}
            async for event in bus.stream(since=snapshot.mark):
                namespace = (event.get("object") or {}).get("metadata", {}).get("namespace")
                if request.namespace in (None, namespace):
                    yield event
        finally:
            await self._release(snapshot)


@contextlib.asynccontextmanager
async def fast_cluster(
    before: Iterable[tuple[Resource, Any]] = (),
) -> AsyncIterator[Cluster]:
    """An emulated cluster as ``testbed.cluster.emulated_cluster`` serves it, but with
    every resource's LIST and WATCH served by ``FastApi``.

    ``before``: (resource, stream) pairs whose WATCH a stream of the caller's serves
    instead (registered first, so they answer first).
    """
    emulator = Emulator()
    async with (
        emulator,
        kmock.Server(emulator) as server,
        Cluster(emulator, str(server.url)) as cluster,
    ):
        resources = [NAMESPACES, PODS, EVENTS, CRDS]
        resources += [job_resource(kind) for kind in (*BUILTIN_KINDS, *INTERMEDIATE_KINDS)]
        for resource in resources:
            cluster.serve(resource)
        for resource, stream in before:
            target = kmock.resource(resource.group, resource.version, resource.plural)
            cluster.emulator[kmock.action.WATCH, target] << stream
        FastApi(cluster, resources)
        yield cluster
