"""An emulated Kubernetes API for the end-to-end tests: kmock's KubernetesEmulator on a
real HTTP port, plus what a real API server would do and the emulator does not.

The emulator assigns no uid, resourceVersion or creationTimestamp; ``Cluster``
stamps them on create and patch, with one cluster-wide resourceVersion counter
as etcd has. ``Reviews`` (``testbed.reviews``) answers TokenReviews and
SubjectAccessReviews from tables, as the API server's authenticators and RBAC would;
``Feed`` (``testbed.feed``) streams bursts of objects fast. Everything goes over HTTP,
so the watch streams the operator sees are the emulator's own. The served resources
(``testbed.resources``), the reviews and the feeds are importable from here too, where
the tests, the benchmarks, the demo and the soak import them.
"""

import asyncio
import contextlib
import datetime
import itertools
import uuid
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import kmock
from kmock._internal.rendering import Response

from jobarchive.core.kinds import BUILTIN_KINDS, INTERMEDIATE_KINDS
from testbed.feed import Feed
from testbed.objects import Body
from testbed.resources import (
    ACCESS_REVIEWS,
    BATCH_JOBS,
    CLUSTER_QUEUES,
    CRDS,
    EVENTS,
    NAMESPACES,
    PEERINGS,
    PODS,
    REVIEWS,
    TOKEN_REVIEWS,
    WORKLOADS,
    WORKLOADS_V1BETA1,
    Resource,
    job_resource,
    resource_of,
)
from testbed.reviews import Reviews

__all__ = [
    "ACCESS_REVIEWS",
    "BATCH_JOBS",
    "CLUSTER_QUEUES",
    "CRDS",
    "EVENTS",
    "NAMESPACES",
    "PEERINGS",
    "PODS",
    "REVIEWS",
    "TOKEN_REVIEWS",
    "USER_AGENT",
    "WORKLOADS",
    "WORKLOADS_V1BETA1",
    "Cluster",
    "Emulator",
    "Feed",
    "Resource",
    "Reviews",
    "emulated_cluster",
    "job_resource",
    "now_rfc3339",
    "resource_of",
]

USER_AGENT = "jobarchive-e2e-tests"


def now_rfc3339() -> str:
    return datetime.datetime.now(tz=datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Emulator(kmock.KubernetesEmulator):
    """kmock's KubernetesEmulator, except that it stores no review.

    The emulator stores every POST as an object under its namespace and name, and
    answers a second one under the same key with 409; a TokenReview or
    SubjectAccessReview has no name, and an API server stores neither. kmock (pinned at
    0.8) has no public switch for that: its storing step, ``_handle``, is skipped for
    reviews, which go straight to the reactions (``Reviews``).
    """

    async def _handle(self, request: kmock.Request) -> aiohttp.web.StreamResponse:
        reviews = [kmock.resource(r.group, r.version, r.plural) for r in REVIEWS]
        if request.action == kmock.action.CREATE and request.resource in reviews:
            return await kmock.KubernetesScaffold._handle(self, request)
        return await super()._handle(request)


@contextlib.asynccontextmanager
async def emulated_cluster(
    emulator: "Emulator | None" = None, port: int | None = None
) -> AsyncIterator["Cluster"]:
    """A KubernetesEmulator (``emulator``, else the test bed's own) on a real port (``port``,
    else a free one) serving every built-in kind, Pods, Events, CRDs."""
    emulator = Emulator() if emulator is None else emulator
    async with (
        emulator,
        kmock.Server(emulator, port=port) as server,
        Cluster(emulator, str(server.url)) as cluster,
    ):
        for resource in (NAMESPACES, PODS, EVENTS, CRDS):
            cluster.serve(resource)
        cluster.serve_kube_system()
        for kind in (*BUILTIN_KINDS, *INTERMEDIATE_KINDS):
            cluster.serve(job_resource(kind))
        # Only where thousands of objects live: a reaction also declares its resource
        # in discovery, and job kinds must be able to go missing (CRD tests).
        for resource in (PODS, EVENTS):
            cluster.paginate(resource)
        yield cluster


class Cluster:
    """Create, patch and delete objects in the emulator as an API server would."""

    def __init__(self, emulator: kmock.KubernetesEmulator, url: str) -> None:
        self.emulator = emulator
        self.url = url.rstrip("/")
        self._versions = itertools.count(1000)
        self._session: aiohttp.ClientSession | None = None
        # The resources whose watch streams a Feed serves instead of the emulator.
        self.feeds: dict[str, Feed] = {}
        # The kube-system namespace's uid: the cluster's identity (decision 35); what a
        # GET of the namespace answers (a test may make it a ``kmock.Response``).
        self.uid = str(uuid.uuid4())
        meta = {"name": "kube-system", "uid": self.uid, "resourceVersion": "1"}
        self.kube_system: Body | Response = {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": meta,
        }

    def serve(self, resource: Resource) -> None:
        """Declare a resource in the emulator's discovery."""
        info = self.emulator.resources[resource.key]
        info.kind = resource.kind
        info.namespaced = resource.namespaced
        info.verbs = {"get", "list", "watch", "create", "patch", "update", "delete"}

    def serve_kube_system(self) -> None:
        """Answer GET of the kube-system namespace, with its uid, as every cluster has it.

        kmock reads ``/api/v1/namespaces/<name>`` as a namespace's prefix and answers
        404, so the namespace is a reaction of its own; it is not listed with the others.
        """
        self.emulator["get /api/v1/namespaces/kube-system"] << (lambda: self.kube_system)

    async def __aenter__(self) -> "Cluster":
        self._session = aiohttp.ClientSession(headers={"User-Agent": USER_AGENT})
        return self

    async def __aexit__(self, *_: object) -> None:
        if self._session is not None:
            await self._session.close()

    def _next_version(self) -> str:
        return str(next(self._versions))

    async def _request(self, method: str, path: str, body: Body | None = None) -> Body:
        if self._session is None:
            raise RuntimeError("Cluster is used outside its `async with`")
        async with self._session.request(method, self.url + path, json=body) as response:
            payload: Body = await response.json(content_type=None)
            if response.status >= 400:
                raise AssertionError(f"{method} {path}: {response.status} {payload}")
            return payload

    def stamp(self, resource: Resource, body: Body) -> Body:
        """A copy with uid, resourceVersion and creationTimestamp, as an API server adds."""
        obj = dict(body)
        meta = dict(obj.get("metadata") or {})
        if resource.namespaced:
            meta.setdefault("namespace", "default")
        meta.setdefault("uid", str(uuid.uuid4()))
        meta.setdefault("creationTimestamp", now_rfc3339())
        meta["resourceVersion"] = self._next_version()
        obj["metadata"] = meta
        obj.setdefault("apiVersion", resource.api_version)
        obj.setdefault("kind", resource.kind)
        return obj

    async def create(self, resource: Resource, body: Body) -> Body:
        """Create an object, stamping uid, resourceVersion and creationTimestamp."""
        obj = self.stamp(resource, body)
        return await self._request("POST", resource.path(obj["metadata"].get("namespace")), obj)

    async def create_unstamped(self, resource: Resource, body: Body) -> Body:
        """Create an object exactly as given: no uid, resourceVersion or time added."""
        namespace = (body.get("metadata") or {}).get("namespace", "default")
        return await self._request("POST", resource.path(namespace), body)

    async def patch(self, resource: Resource, namespace: str, name: str, patch: Body) -> Body:
        """Merge a patch into an object, bumping its resourceVersion."""
        merged = dict(patch)
        merged["metadata"] = {
            **(patch.get("metadata") or {}),
            "resourceVersion": self._next_version(),
        }
        return await self._request("PATCH", resource.path(namespace, name), merged)

    def paginate(self, resource: Resource) -> None:
        """Serve lists in pages when asked for ``limit``, as a real API server does.

        The emulator ignores ``limit`` and ``continue``; a client that pages (the
        reconciliation) would get everything at once, which no real cluster does.
        """
        target = kmock.resource(resource.group, resource.version, resource.plural)

        def listing(request: Any) -> Body:
            items = [
                obj.raw
                for (stored, namespace, _), obj in self.emulator.objects.items()
                if stored == target and not obj.deleted and request.namespace in (None, namespace)
            ]
            limit = int(request.params.get("limit") or 0)
            if not limit:
                return {"metadata": {"resourceVersion": "..."}, "items": items}
            start = int(request.params.get("continue") or 0)
            more = start + limit < len(items)
            meta = {"resourceVersion": "...", "continue": str(start + limit) if more else ""}
            return {"metadata": meta, "items": items[start : start + limit]}

        self.emulator[kmock.action.LIST, target] << listing

    def watched(self) -> set[str]:
        """The paths that some client has opened a watch stream on."""
        return {
            request.url.path
            for request in self.emulator
            if request.method == "GET" and request.params.get("watch") in ("true", "1")
        }

    def watchers(self, resource: Resource) -> int:
        """How many watch streams of a resource receive its changes now.

        A watch request is recorded as it arrives, but the emulator first streams the
        objects it holds and only then subscribes the stream to changes: what changes
        in between is never streamed. kmock (pinned at 0.8) has no public view of that
        subscription, so the bus it keeps per resource is read.
        """
        feed = self.feeds.get(resource.key)
        if feed is not None:
            return feed.watchers
        target = kmock.resource(resource.group, resource.version, resource.plural)
        bus = self.emulator._buses.get(target)
        return bus.consumer_count if bus is not None else 0

    async def wait_watching(self, resources: list[Resource], within: float = 30.0) -> None:
        """Wait until every resource is watched cluster-wide and its stream receives
        changes, as when an operator is ready."""
        paths = {resource.path(None) for resource in resources}
        deadline = asyncio.get_running_loop().time() + within
        while not (paths <= self.watched() and all(map(self.watchers, resources))):
            if asyncio.get_running_loop().time() > deadline:
                unwatched = sorted(paths - self.watched())
                unsubscribed = [r.key for r in resources if not self.watchers(r)]
                raise AssertionError(
                    f"after {within} s: not watched {unwatched}, not subscribed {unsubscribed}"
                )
            await asyncio.sleep(0.05)

    def writes_by_others(self) -> list[str]:
        """Every request that would change the cluster and was not made by the tests.

        A TokenReview or SubjectAccessReview is a POST that changes nothing: not one.
        """
        reviews = {resource.path(None) for resource in REVIEWS}
        return [
            f"{request.method.value} {request.url}"
            for request in self.emulator
            if request.method not in ("GET", "HEAD", "OPTIONS")
            and request.headers.get("User-Agent") != USER_AGENT
            and not (request.method == "POST" and request.url.path in reviews)
        ]

    def forget_requests(self, keep: int = 64) -> None:
        """Forget the requests served, but the last ``keep``.

        kmock (pinned at 0.8) matches each request to a reaction by scanning every
        request it ever served, once per reaction tried, so a run of hours slows to
        seconds per request. The requests still being matched are the last few. What is
        forgotten is gone from ``watched``, ``writes_by_others`` and ``requests_to``.
        """
        del self.emulator._requests[:-keep]

    def requests_to(self, resource: Resource) -> int:
        """How many requests the cluster-wide path of a resource was sent (reviews, say)."""
        path = resource.path(None)
        return sum(1 for request in self.emulator if request.url.path == path)

    async def delete(self, resource: Resource, namespace: str, name: str) -> None:
        """Delete an object (the emulator streams DELETED with its last state)."""
        await self._request("DELETE", resource.path(namespace, name))
