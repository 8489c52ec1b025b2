"""Shards: real operators, each under `kopf run --namespace` for namespaces of its own,
writing one database. Each records its namespaces (a pattern's late namespace too),
marks gone what was deleted in its namespaces while it was down, and never reads,
marks or prunes another shard's rows, whether that shard runs or not. Every request a
shard makes is one the shards' RBAC (manifests/overlays/shards/) grants it, and under
`--peering` a shard creates its KopfPeering objects and works."""

import asyncio
import datetime
import functools
import json
import pathlib
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import aiohttp.web
import pytest
import yaml

from jobarchive.core.kinds import BUILTIN_KINDS
from jobarchive.storage.models import Event, Job, Pod
from jobarchive.storage.store import Store
from testbed import objects as o
from testbed.cluster import (
    EVENTS,
    PODS,
    USER_AGENT,
    Cluster,
    Emulator,
    Resource,
    emulated_cluster,
    job_resource,
    resource_of,
)
from testbed.objects import Body
from testbed.operator import REPO, OperatorProcess, write_kubeconfig
from tests.support import rows
from tests.support.waiting import eventually

pytestmark = pytest.mark.e2e
TFJOBS = resource_of("kubeflow.org", "TFJob")
KOPF_PEERINGS = Resource("kopf.dev", "v1", "kopfpeerings", "KopfPeering")
WATCHED = [PODS, EVENTS, *(job_resource(kind) for kind in BUILTIN_KINDS)]
SHARDS = REPO / "manifests" / "overlays" / "shards"
# A shard started again lists its namespaces, then reconciles them: on a busy machine
# (two test workers beside other work, coverage tracing every process) longer than
# eventually's 30 s.
RECONCILED_WITHIN = 60.0

Start = Callable[..., Awaitable[OperatorProcess]]
NAMESPACE_PATHS = re.compile(r"/api/v1/namespaces(/[^/]+)?")


class Namespaces:
    """Namespaces served as an API server serves them (list, get, watch).

    kmock (pinned at 0.8) reads ``/api/v1/namespaces`` as the prefix of a namespaced
    path and answers every such request 500 before any reaction can. Kopf lists and
    watches namespaces under ``--namespace``, so they are served here, and each
    request is remembered as kmock remembers its own.
    """

    def __init__(self) -> None:
        self.names: dict[str, Body] = {}
        self.requests: list[tuple[str, str, dict[str, str], str]] = []
        self._streams: list[asyncio.Queue[Body]] = []
        self._version = 1

    def add(self, name: str) -> None:
        """Create a namespace, streaming ADDED to every watch."""
        self._version += 1
        meta = {"name": name, "uid": f"uid-{name}", "resourceVersion": str(self._version)}
        body = {"apiVersion": "v1", "kind": "Namespace", "metadata": meta}
        self.names[name] = body
        for stream in self._streams:
            stream.put_nowait({"type": "ADDED", "object": body})

    async def serve(self, request: aiohttp.web.BaseRequest) -> aiohttp.web.StreamResponse:
        agent = request.headers.get("User-Agent", "")
        self.requests.append((request.method, request.path, dict(request.query), agent))
        name = request.path.removeprefix("/api/v1/namespaces").strip("/")
        if name:
            if name not in self.names:
                return aiohttp.web.json_response({"kind": "Status", "code": 404}, status=404)
            return aiohttp.web.json_response(self.names[name])
        if request.query.get("watch") not in ("true", "1"):
            meta = {"resourceVersion": str(self._version)}
            items = list(self.names.values())
            return aiohttp.web.json_response(
                {"kind": "NamespaceList", "metadata": meta, "items": items}
            )
        response = aiohttp.web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request)
        stream: asyncio.Queue[Body] = asyncio.Queue()
        self._streams.append(stream)
        try:
            while True:
                await response.write(json.dumps(await stream.get()).encode() + b"\n")
        finally:
            self._streams.remove(stream)


class ServingNamespaces(Emulator):
    """The test bed's emulator, with namespaces served (``Namespaces``)."""

    def __init__(self) -> None:
        super().__init__()
        self.namespaces = Namespaces()

    async def __call__(self, raw_request: aiohttp.web.BaseRequest) -> aiohttp.web.StreamResponse:
        if NAMESPACE_PATHS.fullmatch(raw_request.path):
            return await self.namespaces.serve(raw_request)
        return await super().__call__(raw_request)


@pytest.fixture
async def cluster() -> AsyncIterator[Cluster]:
    """The emulated API server of ``testbed.cluster.emulated_cluster``, serving
    namespaces too."""
    async with emulated_cluster(ServingNamespaces()) as api:
        # Served here rather than by the test bed's reaction: the cluster's identity.
        assert isinstance(api.kube_system, dict)
        namespaces_of(api).names["kube-system"] = api.kube_system
        yield api


def namespaces_of(cluster: Cluster) -> Namespaces:
    assert isinstance(cluster.emulator, ServingNamespaces)
    return cluster.emulator.namespaces


@pytest.fixture
async def start_shard(
    cluster: Cluster, archive: str, operator_env: dict[str, str | None], tmp_path: pathlib.Path
) -> AsyncIterator[Start]:
    """Starts shards (``--namespace`` for each pattern given) against the emulated
    cluster and the e2e database; stops them all at the end and prints their logs."""
    kubeconfig = tmp_path / "kubeconfig"
    write_kubeconfig(kubeconfig, cluster.url)
    shards: list[OperatorProcess] = []

    async def start(*patterns: str, peering: str | None = None, **env: str) -> OperatorProcess:
        workdir = tmp_path / f"shard-{len(shards)}"
        workdir.mkdir()
        shard = OperatorProcess(workdir, kubeconfig, {**operator_env, **env})
        shards.append(shard)
        args = [f"--namespace={pattern}" for pattern in patterns]
        await shard.start(*args, *([f"--peering={peering}"] if peering else []))
        return shard

    try:
        yield start
    finally:
        for shard in shards:
            await shard.stop()
            print(f"--- {shard.log_path}\n{shard.log()[-20000:]}")


async def watching(cluster: Cluster, namespaces: list[str]) -> None:
    """Wait until every tracked kind is watched in each namespace, and the streams
    receive changes."""
    paths = {resource.path(ns) for resource in WATCHED for ns in namespaces}

    async def ready() -> bool:
        streams = all(cluster.watchers(resource) >= len(namespaces) for resource in WATCHED)
        return paths <= cluster.watched() and streams

    await eventually(ready, within=60)


async def job_with_pod(cluster: Cluster, namespace: str) -> tuple[Body, Body]:
    """A TFJob, one worker pod of it and an Event about the pod, in a namespace."""
    spec = o.with_meta(o.example("tfjob-simple.yaml"), name=f"mnist-{namespace}")
    job = await cluster.create(TFJOBS, o.with_meta(spec, namespace=namespace))
    pod = await cluster.create(PODS, o.kubeflow_pod(job, "tfReplicaSpecs", "Worker", 0))
    await cluster.create(EVENTS, o.event(pod, "Scheduled", f"Assigned {namespace}/worker-0"))
    return job, pod


def in_etcd(pod: Body) -> Callable[[], Awaitable[bool]]:
    async def probe() -> bool:
        return await Pod.filter(pod_id=pod["metadata"]["uid"], is_in_etcd=True).exists()

    return probe


def gone(pod: Body) -> Callable[[], Awaitable[bool]]:
    async def probe() -> bool:
        return await Pod.filter(pod_id=pod["metadata"]["uid"], is_in_etcd=False).exists()

    return probe


async def recorded(namespace: str) -> bool:
    return (
        await Job.filter(namespace=namespace).exists()
        and await Pod.filter(namespace=namespace).exists()
        and await Event.filter(obj_namespace=namespace).exists()
    )


def shard_rbac() -> dict[str, set[tuple[str, str, str]]]:
    """The (group, resource, verb) triples each ClusterRole of the shards' component grants."""
    grants: dict[str, set[tuple[str, str, str]]] = {}
    for doc in yaml.safe_load_all((SHARDS / "common" / "rbac.yaml").read_text()):
        if doc and doc["kind"] == "ClusterRole":
            grants[doc["metadata"]["name"]] = {
                (group, resource, verb)
                for rule in doc["rules"]
                for group in rule["apiGroups"]
                for resource in rule["resources"]
                for verb in rule["verbs"]
            }
    return grants


def attributes(method: str, path: str, params: Any) -> tuple[str, str, str | None, str] | None:
    """What RBAC checks of a request: group, resource (with subresource), namespace, verb;
    None for discovery, which every authenticated client may read."""
    parts = path.strip("/").split("/")
    if parts[0] == "api":
        group, rest = "", parts[2:]
    elif parts[0] == "apis" and len(parts) > 2:
        group, rest = parts[1], parts[3:]
    else:
        return None
    if not rest:
        return None
    namespace = None
    if rest[0] == "namespaces" and len(rest) >= 3:
        namespace, rest = rest[1], rest[2:]
    resource = "/".join(rest[:1] + rest[2:3])
    named = len(rest) > 1
    if method == "GET":
        watch = params.get("watch") in ("true", "1")
        verb = "watch" if watch else "get" if named else "list"
    else:
        verb = {"POST": "create", "PATCH": "patch", "PUT": "update", "DELETE": "delete"}[method]
    return group, resource, namespace, verb


def ungranted(cluster: Cluster, namespaces: set[str]) -> list[str]:
    """The shards' requests that their RBAC does not grant: a namespaced request needs
    jobarchive-shard in a namespace bound to it (or the cluster role), a cluster-wide
    one jobarchive-shard-cluster."""
    grants = shard_rbac()
    served = [
        (request.method.value, request.url.path, dict(request.params), request.headers)
        for request in cluster.emulator
    ]
    served += [
        (method, path, query, {"User-Agent": agent})
        for method, path, query, agent in namespaces_of(cluster).requests
    ]
    refused = []
    for method, path, params, headers in served:
        found = attributes(method, path, params)
        if headers.get("User-Agent") == USER_AGENT or found is None:
            continue
        group, resource, namespace, verb = found
        allowed = (group, resource, verb) in grants["jobarchive-shard-cluster"] or (
            namespace in namespaces and (group, resource, verb) in grants["jobarchive-shard"]
        )
        if not allowed:
            refused.append(f"{method} {path} {params}")
    return sorted(set(refused))


async def test_shards_record_reconcile_and_prune_only_their_own_namespaces(
    cluster: Cluster, start_shard: Start
) -> None:
    for namespace in ("team-a", "team-b", "ml-one", "nobodys"):
        namespaces_of(cluster).add(namespace)
    first_a = await start_shard("team-a")
    first_b = await start_shard("team-b", "ml-*,!ml-scratch")
    await watching(cluster, ["team-a", "team-b", "ml-one"])
    assert not {resource.path(None) for resource in WATCHED} & cluster.watched()
    pods = {}
    for namespace in ("team-a", "team-b", "ml-one", "nobodys"):
        _, pods[namespace] = await job_with_pod(cluster, namespace)
    for namespace in ("team-a", "team-b", "ml-one"):
        await eventually(functools.partial(recorded, namespace))
    assert not await Job.filter(namespace="nobodys").exists()
    # Shards of one cluster share its identity, and its rows name it (decision 35).
    for shard in (first_a, first_b):
        assert f"Cluster {cluster.uid} (the kube-system namespace's uid" in shard.log()
    assert {job.cluster for job in await Job.all()} == {cluster.uid}

    # Both shards down; a pod of each goes meanwhile, and nobody sees it go.
    await first_a.stop()
    await first_b.stop()
    for namespace in ("team-a", "team-b", "ml-one"):
        await cluster.delete(PODS, namespace, pods[namespace]["metadata"]["name"])
    # Finished a year ago and gone: retention's due, in each shard's namespace.
    finished = datetime.datetime.now(datetime.UTC) - datetime.timedelta(days=365)
    old: dict[str, Any] = {"status": "Succeeded", "is_in_etcd": False, "gmt_finished": finished}
    await Store(cluster=cluster.uid).upsert(
        Job,
        [
            rows.job("old-a", name="old", namespace="team-a", **old),
            rows.job("old-b", name="old", namespace="team-b", **old),
        ],
    )

    shard_a = await start_shard("team-a", JOBARCHIVE_RETENTION_DAYS="30")
    await eventually(gone(pods["team-a"]), within=RECONCILED_WITHIN)
    await eventually(lambda: logged(shard_a, "Reconciled with the cluster: 0 jobs and 1 pods"))
    await eventually(lambda: absent("old-a"))
    # Shard B is down: its rows are left as they were, by the reconciliation and retention.
    assert await in_etcd(pods["team-b"])() and await in_etcd(pods["ml-one"])()
    assert await Job.filter(job_id="old-b").exists()

    shard_b = await start_shard("team-b", "ml-*,!ml-scratch")
    await eventually(gone(pods["team-b"]), within=RECONCILED_WITHIN)
    await eventually(gone(pods["ml-one"]))

    # A namespace that matches B's pattern later is recorded by B; one it excludes is not.
    for namespace in ("ml-late", "ml-scratch"):
        namespaces_of(cluster).add(namespace)
    await watching(cluster, ["team-a", "team-b", "ml-one", "ml-late"])
    for namespace in ("ml-late", "ml-scratch"):
        await job_with_pod(cluster, namespace)
    await eventually(lambda: recorded("ml-late"))
    assert not await Job.filter(namespace="ml-scratch").exists()
    assert await Pod.filter(namespace="team-a").count() == 1
    assert "namespaces team-b ml-*,!ml-scratch" in shard_b.log()
    # One stream per kind and namespace: a shard bounds what each has in flight.
    assert "Handling at most 200 objects of each kind and namespace at once" in shard_b.log()
    served = {"team-a", "team-b", "ml-one", "ml-late"}
    assert ungranted(cluster, served) == []


async def logged(shard: OperatorProcess, text: str) -> bool:
    return text in shard.log()


async def absent(job_uid: str) -> bool:
    return not await Job.filter(job_id=job_uid).exists()


async def test_a_shard_under_peering_creates_its_kopfpeerings_and_works(
    cluster: Cluster, start_shard: Start
) -> None:
    cluster.serve(KOPF_PEERINGS)
    for namespace in ("team-a", "team-b"):
        namespaces_of(cluster).add(namespace)
    shard = await start_shard(
        "team-a", "team-b", peering="jobarchive", JOBARCHIVE_PEERING_LIFETIME="4"
    )

    async def peerings() -> bool:
        async with aiohttp.ClientSession() as session:
            for namespace in ("team-a", "team-b"):
                url = cluster.url + KOPF_PEERINGS.path(namespace, "jobarchive")
                async with session.get(url) as response:
                    if response.status != 200:
                        return False
        return True

    await eventually(peerings)
    # Kopf waits for the objects (the peering is mandatory), then works.
    await watching(cluster, ["team-a", "team-b"])
    await job_with_pod(cluster, "team-b")
    await eventually(lambda: recorded("team-b"))

    async def active() -> bool:
        return (await shard.scrape()).get(("jobarchive_active", frozenset())) == 1

    await eventually(active)
    assert ungranted(cluster, {"team-a", "team-b"}) == []
    writes = {
        f"{request.method.value} {request.url.path}"
        for request in cluster.emulator
        if request.method.value not in ("GET", "HEAD")
        and request.headers.get("User-Agent") != USER_AGENT
    }
    assert writes <= {
        f"{method} {KOPF_PEERINGS.path(namespace, name)}"
        for method, name in (("POST", None), ("PATCH", "jobarchive"))
        for namespace in ("team-a", "team-b")
    }
