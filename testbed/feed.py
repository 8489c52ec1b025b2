"""Fast watch streams for bursts of thousands of objects, beside the emulator's own."""

import asyncio
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import kmock

from testbed.objects import Body
from testbed.resources import Resource

if TYPE_CHECKING:  # the cluster keeps its feeds: each module names the other
    from testbed.cluster import Cluster


class Feed:
    """Fast watch streams for one resource, for bursts of thousands of objects.

    The emulator's own create path scans every stored object per request, so a burst
    of thousands costs minutes. Here objects go into the emulator's store directly
    (its list requests serve them as usual) and their ADDED events are streamed to
    every open watch of the resource by a kmock reaction, over the same HTTP.
    """

    def __init__(self, cluster: "Cluster", resource: Resource) -> None:
        self.cluster = cluster
        self.resource = resource
        self._streams: list[asyncio.Queue[Body]] = []
        target = kmock.resource(resource.group, resource.version, resource.plural)
        cluster.emulator[kmock.action.WATCH, target] << self._stream
        cluster.feeds[resource.key] = self

    @property
    def watchers(self) -> int:
        """How many watch streams are open and receive what is added."""
        return len(self._streams)

    async def _stream(self, request: object) -> AsyncIterator[Body | bytes]:
        queue: asyncio.Queue[Body] = asyncio.Queue()
        self._streams.append(queue)
        try:
            yield b""
            while True:
                yield await queue.get()
        finally:
            self._streams.remove(queue)

    def add(self, body: Body) -> Body:
        """Store an object (stamped as an API server would) and stream its ADDED event."""
        obj = self.cluster.stamp(self.resource, body)
        meta = obj["metadata"]
        self.cluster.emulator.objects[self.resource.key, meta["namespace"], meta["name"]] = obj
        for queue in self._streams:
            queue.put_nowait({"type": "ADDED", "object": obj})
        return obj

    def remove(self, body: Body) -> None:
        """Delete an object from the store without a watch event, as if nobody watched."""
        meta = body["metadata"]
        del self.cluster.emulator.objects[self.resource.key, meta["namespace"], meta["name"]]
