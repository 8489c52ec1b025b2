"""An emulated Kubernetes API for the end-to-end tests: kmock's KubernetesEmulator on a
real HTTP port, plus what a real API server would do and the emulator does not.

The emulator assigns no uid, resourceVersion or creationTimestamp; ``Cluster``
stamps them on create and patch, with one cluster-wide resourceVersion counter
as etcd has. ``Reviews`` answers TokenReviews and SubjectAccessReviews from tables,
as the API server's authenticators and RBAC would. Everything goes over HTTP, so the
watch streams the operator sees are the emulator's own.
"""

import asyncio
import contextlib
import dataclasses
import datetime
import itertools
import uuid
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import kmock
from kmock._internal.rendering import Response

from jobarchive.core.kinds import BUILTIN_KINDS, INTERMEDIATE_KINDS, JobKind
from testbed.objects import Body


@dataclasses.dataclass(frozen=True)
class Resource:
    """A served resource: where its objects live in the API."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True

    def path(self, namespace: str | None, name: str | None = None) -> str:
        base = f"/api/{self.version}" if not self.group else f"/apis/{self.group}/{self.version}"
        if self.namespaced and namespace is not None:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        return f"{base}/{name}" if name else base

    @property
    def key(self) -> str:
        return (
            f"{self.group}/{self.version}/{self.plural}"
            if self.group
            else f"{self.version}/{self.plural}"
        )

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


USER_AGENT = "jobarchive-e2e-tests"
PODS = Resource("", "v1", "pods", "Pod")
EVENTS = Resource("", "v1", "events", "Event")
NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
CRDS = Resource(
    "apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False
)
BATCH_JOBS = Resource("batch", "v1", "jobs", "Job")
PEERINGS = Resource("kopf.dev", "v1", "clusterkopfpeerings", "ClusterKopfPeering", False)
TOKEN_REVIEWS = Resource("authentication.k8s.io", "v1", "tokenreviews", "TokenReview", False)
ACCESS_REVIEWS = Resource(
    "authorization.k8s.io", "v1", "subjectaccessreviews", "SubjectAccessReview", False
)
# The API's authorization POSTs these, and an API server stores none of them: they
# change nothing in the cluster.
REVIEWS = (TOKEN_REVIEWS, ACCESS_REVIEWS)
# Kueue's Workload in the version Kueue 0.16 and later serve (and 0.15 and earlier's):
# served only where a test installs Kueue (``Cluster.serve``), not by default.
WORKLOADS = Resource("kueue.x-k8s.io", "v1beta2", "workloads", "Workload")
WORKLOADS_V1BETA1 = Resource("kueue.x-k8s.io", "v1beta1", "workloads", "Workload")
# Kueue's ClusterQueue: cluster-scoped, served where a test installs Kueue.
CLUSTER_QUEUES = Resource(
    "kueue.x-k8s.io", "v1beta2", "clusterqueues", "ClusterQueue", namespaced=False
)


def job_resource(kind: JobKind) -> Resource:
    return Resource(kind.group, kind.version, kind.plural, kind.kind)


def resource_of(group: str, kind: str) -> Resource:
    for job_kind in (*BUILTIN_KINDS, *INTERMEDIATE_KINDS):
        if job_kind.group == group and job_kind.kind == kind:
            return job_resource(job_kind)
    raise KeyError((group, kind))


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


class Reviews:
    """TokenReview and SubjectAccessReview answered as an API server does, from two
    tables: whose each token is, and who may read what of jobarchive's resources where
    (the ``jobarchive-reader`` ClusterRole's: ``jobs.jobarchive.io`` and the aggregated
    API's resources, unless a grant names fewer). Every access review's attributes are
    kept, in order (``asked``), and the user it asked about (``asked_by``).

    As with RBAC, a grant in namespace ``""`` (a ClusterRoleBinding of the reader
    role) allows every namespace and requests over all of them; a grant in a namespace
    (a RoleBinding) allows that namespace only. A subject is ``user:<name>`` or
    ``group:<name>``. A cluster grant (``grant_clusters``) is a ClusterRole's rule on
    ``clusters`` with ``resourceNames``, or without them: every cluster, and a review
    that names none.
    """

    GROUP, RESOURCE, VERBS = "jobarchive.io", "jobs", ("get", "list")
    # (group, resource, subresource) as the reader role grants them.
    READER = frozenset(
        {
            ("jobarchive.io", "jobs", ""),
            *(
                ("archive.jobarchive.io", resource, "")
                for resource in ("archivedjobs", "archivedpods", "archivedevents", "stats")
            ),
            ("archive.jobarchive.io", "archivedjobs", "log"),
            ("archive.jobarchive.io", "console", ""),
        }
    )

    def __init__(self, cluster: Cluster) -> None:
        self.tokens: dict[str, Body] = {}
        self.grants: set[tuple[str, str]] = set()
        self.scoped: dict[tuple[str, str], frozenset[tuple[str, str, str]]] = {}
        # Per grant, the verbs it allows when fewer than ``VERBS``.
        self.verbs: dict[tuple[str, str], tuple[str, ...]] = {}
        # Per subject, the clusters it may get; None: every cluster (no resourceNames).
        self.clusters: dict[str, frozenset[str] | None] = {}
        self.asked: list[Body] = []
        self.asked_by: list[str] = []
        # While set, both reviews answer 500, as an API server whose etcd is away.
        self.failing = False
        answers = {TOKEN_REVIEWS: self._token_review, ACCESS_REVIEWS: self._access_review}
        for resource, answer in answers.items():
            target = kmock.resource(resource.group, resource.version, resource.plural)
            failure = {"kind": "Status", "code": 500, "message": "etcdserver: request timed out"}
            # Registered first, so it answers before the table while failing.
            cluster.emulator[kmock.action.CREATE, target, lambda: self.failing] << 500 << failure
            cluster.emulator[kmock.action.CREATE, target] << answer

    def user(self, token: str, name: str, *groups: str) -> None:
        """Make ``token`` authenticate ``name`` with ``groups`` (and system:authenticated)."""
        self.tokens[token] = {
            "username": name,
            "uid": f"uid-of-{name}",
            "groups": [*groups, "system:authenticated"],
            "extra": {"authentication.kubernetes.io/credential-id": [f"JTI={name}"]},
        }

    def grant(
        self,
        subject: str,
        namespace: str = "",
        resources: frozenset[tuple[str, str, str]] | None = None,
        verbs: tuple[str, ...] = VERBS,
    ) -> None:
        """Let ``subject`` get and list (or only ``verbs``) the reader's resources (or
        only ``resources``) in ``namespace`` ("": cluster-wide)."""
        self.grants.add((subject, namespace))
        if resources is not None:
            self.scoped[(subject, namespace)] = resources
        self.verbs[(subject, namespace)] = verbs

    def grant_clusters(self, subject: str, *names: str) -> None:
        """Let ``subject`` get the ``clusters`` named (none: every cluster), in either
        group, cluster-scoped."""
        self.clusters[subject] = frozenset(names) if names else None

    def _cluster_granted(self, subjects: set[str], wanted: Body) -> bool:
        name = wanted.get("name") or ""
        if wanted.get("verb") != "get" or wanted.get("namespace"):
            return False
        for subject in subjects & set(self.clusters):
            names = self.clusters[subject]
            if names is None or name in names:
                return True
        return False

    def _token_review(self, request: Any) -> Body:
        spec = request.data["spec"]
        user = self.tokens.get(spec.get("token"))
        status: Body = {"authenticated": True, "user": user, "audiences": ["https://kubernetes"]}
        if user is None:
            status = {"authenticated": False, "error": "invalid bearer token", "user": {}}
        return {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "status": status}

    def _access_review(self, request: Any) -> Body:
        spec = request.data["spec"]
        wanted = spec.get("resourceAttributes") or {}
        self.asked.append(dict(wanted))
        self.asked_by.append(str(spec.get("user")))
        namespace = wanted.get("namespace") or ""
        subjects = {f"user:{spec.get('user')}", *(f"group:{g}" for g in spec.get("groups", []))}
        asked = (wanted.get("group"), wanted.get("resource"), wanted.get("subresource") or "")
        allowed = any(
            (subject, place) in self.grants
            and asked in self.scoped.get((subject, place), self.READER)
            and wanted.get("verb") in self.verbs.get((subject, place), self.VERBS)
            for subject in subjects
            for place in {"", namespace}
        )
        if wanted.get("resource") == "clusters":
            allowed = self._cluster_granted(subjects, wanted)
        status: Body = {"allowed": allowed}
        if allowed:
            status["reason"] = "RBAC: allowed by a binding of ClusterRole jobarchive-reader"
        return {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": spec,
            "status": status,
        }
