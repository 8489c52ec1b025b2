"""An emulated API whose lists and watches cost what a real API server's do, for benchmarks.

kmock's emulator (pinned at 0.8) inflates a catch-up on both sides of a comparison:
after a LIST, the watch that continues from the list's resourceVersion streams every
stored object again as ADDED (a real API server sends only what changed since that
version), so each object is handled twice; ``Cluster.paginate`` scans every stored
object of every resource for each page; and kmock matches each request against its
reactions by scanning every request it ever served, once per reaction tried, which
grows quadratic (minutes of CPU for the thousands of lists and watches of operators
serving many namespaces). ``FastApi`` serves LIST and WATCH of the resources given
as an API server does, in front of kmock (which serves everything else):

- a LIST takes one snapshot of the resource's objects, under the emulator's lock,
  together with a mark on the emulator's bus of changes; its pages are slices of that
  snapshot (the ``continue`` token names it), and its resourceVersion names the mark;
- a WATCH from that resourceVersion streams what changed since the mark, nothing
  before it; a WATCH from no version streams the objects first, as the server's
  initial events; one from a version it does not know (or no longer keeps: a mark
  lives ``HISTORY`` seconds past its list or its last watch, as etcd compacts)
  answers ``410 Gone``, and the client lists again;
- a LIST whose Accept header asks for ``PartialObjectMetadataList`` gets each
  object's metadata alone, and a page that is not the last says how many objects
  remain (``remainingItemCount``), as an API server's paged list without selectors;
- a watch asked for bookmarks gets a BOOKMARK every ``BOOKMARK_SECONDS`` it has
  nothing else to say, as an API server sends them: Kopf takes a stream silent for
  70 s for dead and reconnects. A watch resumed from the same version (a reconnect)
  goes on where the last stream of that version stopped reading the bus.

The store keeps each resource's objects by namespace too (``IndexedObjects``), as
etcd keys them: a namespace's LIST costs what that namespace holds, not what the whole
cluster holds, so an operator serving 50 namespaces lists them as cheaply as a real
server would. Namespaces are served the same way, from the objects stored under
``NAMESPACES`` (kmock reads ``/api/v1/namespaces`` as the prefix of a namespaced path
and answers it 500; Kopf lists and watches namespaces whenever it serves
``--namespace``, exact names included).

Watches given to ``fast_cluster`` in ``before`` are left to kmock (a benchmark's own
stream of pods, say). kmock has no public view of its bus, lock or store class: they
are read and replaced here, as in ``testbed.watches``.
"""

import asyncio
import collections
import contextlib
import dataclasses
import itertools
import json
import re
from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Any

import aiohttp.web
import attrs
import kmock
from kmock._internal.k8s_views import ObjectsArray

from jobarchive.core.kinds import BUILTIN_KINDS, INTERMEDIATE_KINDS
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
# An API server sends a watch that allows them a BOOKMARK about once a minute.
BOOKMARK_SECONDS = 60.0
EXPIRED = {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"}
GONE = {"type": "ERROR", "object": EXPIRED}
PARTIAL = {"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata"}
# A collection's path: /api/VERSION or /apis/GROUP/VERSION, a namespace, the plural.
COLLECTION = re.compile(
    r"/(?:api|apis/(?P<group>[^/]+))/(?P<version>[^/]+)"
    r"(?:/namespaces/(?P<namespace>[^/]+))?/(?P<plural>[^/]+)"
)


@attrs.frozen(eq=False, order=False)
class IndexedObjects(ObjectsArray):
    """kmock's store of objects, whose keys are also kept by resource and namespace.

    kmock stores and forgets objects only through the item operators (a soft delete
    keeps the key, and ``deleted`` tells), so keeping the index there keeps it exact,
    whether an object comes through the API or straight from a benchmark.
    """

    _keys: dict[kmock.resource, dict[str | None, dict[str, None]]] = attrs.field(
        factory=dict, init=False
    )

    @staticmethod
    def _split(key: Any) -> tuple[kmock.resource, str | None, str] | None:
        """An object's key as (resource, namespace, name); None for a version's key."""
        if not isinstance(key, tuple) or len(key) != 3:
            return None
        resource, namespace, name = key
        parsed = kmock.resource(*resource) if isinstance(resource, tuple) else resource
        return kmock.resource(parsed), namespace, name

    def __setitem__(self, key: Any, value: Any, /) -> None:
        super().__setitem__(key, value)
        split = self._split(key)
        if split is not None:
            resource, namespace, name = split
            self._keys.setdefault(resource, {}).setdefault(namespace, {})[name] = None

    def __delitem__(self, key: Any, /) -> None:
        super().__delitem__(key)
        split = self._split(key)
        if split is not None:
            resource, namespace, name = split
            self._keys[resource][namespace].pop(name)

    def clear(self) -> None:
        """Forget every object, and every key."""
        super().clear()
        self._keys.clear()

    def live(self, resource: kmock.resource, namespace: str | None) -> list[Body]:
        """The objects of a resource not deleted, in one namespace (None: in all)."""
        by_namespace = self._keys.get(resource, {})
        namespaces = list(by_namespace) if namespace is None else [namespace]
        found = (
            self._objects[resource, space, name]
            for space in namespaces
            for name in by_namespace.get(space, {})
        )
        return [obj.raw for obj in found if not obj.deleted]


class FastEmulator(Emulator):
    """The test bed's emulator with an indexed store, its lists and watches served by
    ``api`` (once ``fast_cluster`` gives it one) before kmock sees them.

    It counts every GET (lists, watches, reads) by bearer token and path in ``gets``,
    which tells apart clients given tokens of their own.
    """

    def __init__(self) -> None:
        super().__init__()
        self._objects = IndexedObjects()
        self.api: FastApi | None = None
        self.gets: collections.Counter[tuple[str, str]] = collections.Counter()

    @property
    def indexed(self) -> IndexedObjects:
        """The store, with its index."""
        assert isinstance(self._objects, IndexedObjects)
        return self._objects

    async def __call__(self, raw_request: aiohttp.web.BaseRequest) -> aiohttp.web.StreamResponse:
        if raw_request.method == "GET":
            token = raw_request.headers.get("Authorization", "").removeprefix("Bearer ")
            self.gets[token, raw_request.path] += 1
            served = await self.api.serve(raw_request) if self.api is not None else None
            if served is not None:
                return served
        return await super().__call__(raw_request)


@dataclasses.dataclass(frozen=True)
class Ask:
    """What a LIST or WATCH asks for: a served resource, in a namespace or all."""

    target: kmock.resource
    resource: Resource
    namespace: str | None
    params: Mapping[str, str]
    # Accept asks for PartialObjectMetadataList: each item its metadata alone.
    metadata_only: bool = False


@dataclasses.dataclass(eq=False)
class Snapshot:
    """One LIST: its objects (until watched from), the bus mark taken with them, when
    it was taken or last watched, and how many watches stream from it now."""

    items: list[Body]
    mark: Any
    target: kmock.resource
    taken: float
    watchers: int = 0


async def send(response: aiohttp.web.StreamResponse, event: Body) -> None:
    """One watch event, a line of JSON."""
    await response.write(json.dumps(event).encode() + b"\n")


class FastApi:
    """Serves LIST and WATCH of ``resources`` as an API server does; see the module."""

    def __init__(
        self,
        emulator: FastEmulator,
        resources: Iterable[Resource],
        watched_elsewhere: Iterable[Resource] = (),
    ) -> None:
        self.emulator = emulator
        self._served = {(r.group, r.version, r.plural): r for r in resources}
        self._elsewhere = {(r.group, r.version, r.plural) for r in watched_elsewhere}
        self._ids = itertools.count(1)
        # List id -> its snapshot, until expired (its mark held till then).
        self._lists: dict[str, Snapshot] = {}
        self._expired_at = 0.0

    async def serve(
        self, raw_request: aiohttp.web.BaseRequest
    ) -> aiohttp.web.StreamResponse | None:
        """The answer to a GET of a served collection; None for any other request."""
        found = COLLECTION.fullmatch(raw_request.path)
        if found is None:
            return None
        key = (found["group"] or "", found["version"], found["plural"])
        resource = self._served.get(key)
        watch = raw_request.query.get("watch") in ("true", "1")
        if resource is None or (watch and key in self._elsewhere):
            return None
        target = kmock.resource(*key)
        partial = "as=PartialObjectMetadataList" in raw_request.headers.get("Accept", "")
        ask = Ask(target, resource, found["namespace"], raw_request.query, partial)
        await self._expire()
        return await self._watch(raw_request, ask) if watch else await self._list(ask)

    async def _snapshot(self, ask: Ask) -> Snapshot:
        """The resource's objects and a mark on its bus, taken together under the lock."""
        async with self.emulator._lock:
            mark = await self.emulator._buses[ask.target].mark()
            items = self.emulator.indexed.live(ask.target, ask.namespace)
        return Snapshot(items, mark, ask.target, asyncio.get_running_loop().time())

    def _keep(self, snapshot: Snapshot) -> str:
        """Keep a list's snapshot; its id, the list's resourceVersion."""
        ident = str(next(self._ids))
        self._lists[ident] = snapshot
        return ident

    async def _expire(self) -> None:
        """Forget lists unused for ``HISTORY``, and their marks; looked over at most
        once a second, as thousands of lists can be kept."""
        now = asyncio.get_running_loop().time()
        if now - self._expired_at < 1.0:
            return
        self._expired_at = now
        for ident, snapshot in list(self._lists.items()):
            if not snapshot.watchers and now - snapshot.taken > HISTORY:
                del self._lists[ident]
                await self.emulator._buses[snapshot.target].unmark(snapshot.mark)

    async def _list(self, ask: Ask) -> aiohttp.web.Response:
        token = ask.params.get("continue") or ""
        limit = int(ask.params.get("limit") or 0)
        ident, _, offset = token.partition(":")
        snapshot = self._lists.get(ident) if token else None
        if token and snapshot is None:
            return aiohttp.web.json_response(EXPIRED, status=410)
        if snapshot is None:
            snapshot = await self._snapshot(ask)
            ident = self._keep(snapshot)
        start = int(offset or 0)
        end = start + limit if limit else len(snapshot.items)
        more = end < len(snapshot.items)
        meta: Body = {"resourceVersion": ident, "continue": f"{ident}:{end}" if more else ""}
        if more:
            # As an API server counts what a paged list without selectors leaves.
            meta["remainingItemCount"] = len(snapshot.items) - end
        items = snapshot.items[start:end]
        if ask.metadata_only:
            return aiohttp.web.json_response(
                {
                    "apiVersion": "meta.k8s.io/v1",
                    "kind": "PartialObjectMetadataList",
                    "metadata": meta,
                    "items": [{**PARTIAL, "metadata": item["metadata"]} for item in items],
                }
            )
        return aiohttp.web.json_response(
            {
                "apiVersion": ask.resource.api_version,
                "kind": f"{ask.resource.kind}List",
                "metadata": meta,
                "items": items,
            }
        )

    async def _watch(
        self, raw_request: aiohttp.web.BaseRequest, ask: Ask
    ) -> aiohttp.web.StreamResponse:
        version = ask.params.get("resourceVersion") or "0"
        snapshot: Snapshot | None
        initial: list[Body] = []
        if version == "0":
            snapshot = await self._snapshot(ask)
            version = self._keep(snapshot)
            initial = snapshot.items
        else:
            snapshot = self._lists.get(version)
        response = aiohttp.web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(raw_request)
        if snapshot is None:
            await send(response, GONE)
            return response
        # Its objects are served by now (the list's pages, or below): only the mark stays.
        snapshot.items = []
        snapshot.watchers += 1
        meta = {"resourceVersion": version}
        kind = {"kind": ask.resource.kind, "apiVersion": ask.resource.api_version}
        bookmark = {"type": "BOOKMARK", "object": {**kind, "metadata": meta}}
        bookmarks = ask.params.get("allowWatchBookmarks") in ("true", "1")
        changes: asyncio.Queue[Body] = asyncio.Queue()
        pump = asyncio.create_task(self._pump(snapshot, changes))
        try:
            for raw in initial:
                await send(response, {"type": "ADDED", "object": raw})
            while True:
                try:
                    event = await asyncio.wait_for(changes.get(), BOOKMARK_SECONDS)
                except TimeoutError:
                    if bookmarks:
                        await send(response, bookmark)
                    continue
                namespace = (event.get("object") or {}).get("metadata", {}).get("namespace")
                if ask.namespace in (None, namespace):
                    await send(response, event)
        except ConnectionError:
            # The client went away; an API server just ends the stream.
            return response
        finally:
            pump.cancel()
            snapshot.watchers -= 1
            snapshot.taken = asyncio.get_running_loop().time()

    async def _pump(self, snapshot: Snapshot, changes: asyncio.Queue[Body]) -> None:
        """Move the changes since a snapshot's mark onto a watch's queue, as they come.

        A task of its own, so that the watch can wait for the next change with a
        timeout (for its bookmarks) without cancelling the bus's stream mid-item.
        """
        bus = self.emulator._buses[snapshot.target]
        async for event in bus.stream(since=snapshot.mark):
            changes.put_nowait(event)


@contextlib.asynccontextmanager
async def fast_cluster(
    before: Iterable[tuple[Resource, Any]] = (),
) -> AsyncIterator[Cluster]:
    """An emulated cluster as ``testbed.cluster.emulated_cluster`` serves it, but with
    every resource's LIST and WATCH, namespaces' too, served by ``FastApi``.

    ``before``: (resource, stream) pairs whose WATCH a stream of the caller's serves
    instead, as a kmock reaction.
    """
    emulator = FastEmulator()
    async with (
        emulator,
        kmock.Server(emulator) as server,
        Cluster(emulator, str(server.url)) as cluster,
    ):
        resources = [NAMESPACES, PODS, EVENTS, CRDS]
        resources += [job_resource(kind) for kind in (*BUILTIN_KINDS, *INTERMEDIATE_KINDS)]
        for resource in resources:
            cluster.serve(resource)
        cluster.serve_kube_system()
        for resource, stream in before:
            target = kmock.resource(resource.group, resource.version, resource.plural)
            cluster.emulator[kmock.action.WATCH, target] << stream
        emulator.api = FastApi(emulator, resources, [resource for resource, _ in before])
        yield cluster
