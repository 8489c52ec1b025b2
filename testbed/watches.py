"""Watch streams that can be ended, as a real API server ends them.

A real API server ends watches: at its timeout, on a restart, when a load balancer
drops the connection. The client then watches again, and what was deleted in between
is never reported to it (as after a "410 Gone", when the resume point has expired).
kmock's emulator (pinned at 0.8) never ends a watch, and it loses changes too, where
a real server does not: it streams the objects it holds first and only then
subscribes the stream to later changes, so a change made in between is never sent.

``Watches`` serves the watch requests of the resources given instead of the
emulator: it subscribes to the emulator's bus of changes and takes the snapshot of
objects under the emulator's own lock, the one its writes hold while they change an
object and publish the change, so nothing falls between the two; and ``cut`` ends
every open stream cleanly, the chunked response closed, as a server's timeout does.
kmock has no public view of its bus or its lock: both are read here, and nowhere else.
"""

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator, Iterable
from typing import Any

import kmock

from testbed.cluster import Cluster, Resource
from testbed.objects import Body


@dataclasses.dataclass(eq=False)
class Stream:
    """One open watch stream: its resource, when it was opened, and its end."""

    resource: str
    opened: float
    ended: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)


class Watches:
    """Serves the watches of ``resources`` and ends them on request."""

    def __init__(self, cluster: Cluster, resources: Iterable[Resource]) -> None:
        self.cluster = cluster
        self.resources = tuple(resources)
        self._open: dict[str, set[Stream]] = {resource.key: set() for resource in self.resources}
        self._targets = {
            kmock.resource(r.group, r.version, r.plural): r.key for r in self.resources
        }
        # One reaction for all: kmock tries its reactions one by one, each costing a scan
        # of the requests it remembers.
        cluster.emulator[kmock.action.WATCH, self._watched] << self._serve

    def _watched(self, request: Any) -> bool:
        return request.resource in self._targets

    async def _serve(self, request: Any) -> AsyncIterator[Body | bytes]:
        target = request.resource
        key = self._targets[target]
        emulator = self.cluster.emulator
        bus = emulator._buses[request.resource]
        async with emulator._lock:
            mark = await bus.mark()
            snapshot = [
                obj.raw
                for (stored, namespace, _), obj in emulator.objects.items()
                if stored == target and not obj.deleted and request.namespace in (None, namespace)
            ]
        stream = Stream(key, asyncio.get_running_loop().time())
        self._open[key].add(stream)
        try:
            yield b""
            for raw in snapshot:
                yield {"type": "ADDED", "object": raw}
            async for event in _until(bus.stream(since=mark), stream.ended):
                namespace = (event.get("object") or {}).get("metadata", {}).get("namespace")
                if request.namespace in (None, namespace):
                    yield event
        finally:
            self._open[key].discard(stream)
            await bus.unmark(mark)

    def cut(self, resources: Iterable[Resource] | None = None) -> int:
        """End every open watch stream of ``resources`` (all by default); how many."""
        keys = [r.key for r in resources] if resources is not None else list(self._open)
        streams = [stream for key in keys for stream in self._open.get(key, ())]
        for stream in streams:
            stream.ended.set()
        return len(streams)

    def watching_since(self, moment: float, resources: Iterable[Resource] | None = None) -> bool:
        """Whether every resource (all by default) has an open stream opened after
        ``moment`` (the event loop's clock): a client that watches again after it."""
        keys = [r.key for r in resources] if resources is not None else list(self._open)
        return all(
            any(stream.opened >= moment for stream in self._open.get(key, ())) for key in keys
        )


async def _until(source: AsyncIterator[Any], ended: asyncio.Event) -> AsyncIterator[Any]:
    """The items of ``source`` until ``ended`` is set; an item that arrived with the end
    is still given."""
    waiting_end = asyncio.ensure_future(ended.wait())
    item: asyncio.Future[Any] | None = None
    try:
        while True:
            item = asyncio.ensure_future(anext(source))
            await asyncio.wait({item, waiting_end}, return_when=asyncio.FIRST_COMPLETED)
            if not item.done():
                return
            yield item.result()
    finally:
        # The pending read first: a generator cannot be closed while it runs.
        for pending in (item, waiting_end):
            if pending is not None and not pending.done():
                pending.cancel()
                with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
                    await pending
        await source.aclose()  # type: ignore[attr-defined]
