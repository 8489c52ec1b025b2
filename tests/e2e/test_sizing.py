"""The count at start of what the catch-up will list, and the warning line when its
predicted peak passes the container's memory limit (ARCHITECTURE.md, decision 38).

kmock's emulator ignores the metadata-only Accept header and knows no
``remainingItemCount``: there the count pages through full objects (a server that
cannot serve metadata alone answers so). The bench's emulator answers both, as an API
server does: metadata alone, and one page that says how many remain."""

import pathlib
import uuid

import pytest
from kubernetes_asyncio import client

from jobarchive.bindings import LIST_CHUNK_SIZE
from jobarchive.core.kinds import BUILTIN_KINDS
from jobarchive.infra import sizing
from jobarchive.infra.cluster import METADATA_ONLY, get_json
from jobarchive.infra.sizing import MIB, Counts
from testbed import objects as o
from testbed.cluster import EVENTS, PODS, Cluster, resource_of
from testbed.fast_emulator import FastEmulator, fast_cluster
from tests.support.operators import OperatorFactory
from tests.support.waiting import eventually

pytestmark = pytest.mark.e2e
TFJOBS = resource_of("kubeflow.org", "TFJob")
KINDS = [kind for kind in BUILTIN_KINDS if kind.plural in ("tfjobs", "pytorchjobs")]


def store(cluster: Cluster, namespace: str, pods: int, events: int) -> None:
    """Pods and Events straight into the emulator's store, as a large cluster holds them."""
    job = o.with_meta(o.example("tfjob-simple.yaml"), uid=str(uuid.uuid4()), namespace=namespace)
    for index in range(pods):
        pod = o.with_meta(o.kubeflow_pod(job, "tfReplicaSpecs", "Worker", index), uid=f"p{index}")
        cluster.emulator.objects[PODS.key, namespace, pod["metadata"]["name"]] = pod
        if index < events:
            event = o.with_meta(o.event(pod, "Pulled", "pulled"), uid=f"e{index}")
            cluster.emulator.objects[EVENTS.key, namespace, event["metadata"]["name"]] = event


def lists_of(cluster: Cluster, path: str) -> list[str]:
    """The ``continue`` tokens of every request for ``path`` (empty: the first page)."""
    return [r.params.get("continue", "") for r in cluster.emulator if r.url.path == path]


async def test_the_count_pages_full_lists_from_a_server_that_ignores_the_metadata_header(
    cluster: Cluster,
) -> None:
    store(cluster, "team-a", 1234, 7)
    store(cluster, "team-b", 30, 0)
    await cluster.create(TFJOBS, o.with_meta(o.example("tfjob-simple.yaml"), namespace="team-a"))
    await cluster.create(TFJOBS, o.with_meta(o.example("tfjob-simple.yaml"), namespace="team-b"))

    async with client.ApiClient(client.Configuration(host=cluster.url)) as api:
        everything = await sizing.count(api, KINDS, [None])
        team_a = await sizing.count(api, KINDS, ["team-a"])

    assert everything == Counts(pods=1264, events=7, jobs=2)
    assert team_a == Counts(pods=1234, events=7, jobs=1)
    # 1,264 pods in pages of 1,000 (sizing.COUNT_PAGE): two requests, the second continuing.
    assert len(lists_of(cluster, "/api/v1/pods")) == 2
    assert all(
        r.headers.get("Accept") == METADATA_ONLY for r in cluster.emulator if "pods" in r.url.path
    )


async def test_a_server_that_says_what_remains_is_asked_for_one_page_of_metadata() -> None:
    async with fast_cluster() as cluster:
        store(cluster, "team-a", 1234, 1234)
        emulator = cluster.emulator
        assert isinstance(emulator, FastEmulator)
        async with client.ApiClient(client.Configuration(host=cluster.url)) as api:
            counted = await sizing.count(api, KINDS, [None, "team-a"])
            page = await get_json(
                api,
                "/api/v1/pods",
                query_params=[("limit", 2)],
                header_params={"Accept": METADATA_ONLY},
            )

    assert counted == Counts(pods=2468, events=2468, jobs=0)
    assert emulator.gets["", "/api/v1/pods"] == 2
    assert emulator.gets["", "/api/v1/namespaces/team-a/events"] == 1
    assert page["kind"] == "PartialObjectMetadataList"
    assert page["metadata"]["remainingItemCount"] == 1232
    assert [sorted(item) for item in page["items"]] == [["apiVersion", "kind", "metadata"]] * 2


def cgroup(root: pathlib.Path, limit: str) -> pathlib.Path:
    """A cgroup v2 root whose memory.max is ``limit``."""
    root.mkdir()
    (root / "memory.max").write_text(f"{limit}\n")
    return root


async def test_a_catch_up_predicted_past_the_limit_is_said_in_one_line_before_listing(
    cluster: Cluster, start_operator: OperatorFactory, archive: str, tmp_path: pathlib.Path
) -> None:
    store(cluster, "default", 40, 40)
    limit = sizing.BASE_BYTES // 2
    root = cgroup(tmp_path / "cgroup", str(limit))

    operator = await start_operator(JOBARCHIVE_CGROUP_ROOT=str(root))
    log = await eventually(lambda: _when("before watching", operator.log()))

    warned = [line for line in log.splitlines() if "is predicted to peak at" in line]
    assert len(warned) == 1, log
    expected = sizing.predict(Counts(pods=40, events=40))
    assert "40 pods, 40 Events and 0 jobs in all namespaces" in warned[0]
    assert f"peak at {expected / MIB:,.0f} MiB" in warned[0]
    assert f"memory limit of {limit / MIB:,.0f} MiB" in warned[0]
    assert "raise the limit to at least" in warned[0]
    # Said before Kopf lists, and then it goes on: the forecast warns, it does not stop.
    assert log.index("is predicted to peak at") < log.index("before watching")
    await eventually(lambda: _watching(cluster, "/api/v1/pods"))
    assert operator.running
    # Kopf's own LIST of pods, paged as bindings asks (its Accept is not the count's).
    kopf_lists = [
        request.params.get("limit")
        for request in cluster.emulator
        if request.url.path == "/api/v1/pods"
        and "watch" not in request.params
        and request.headers.get("Accept") != METADATA_ONLY
    ]
    assert kopf_lists == [str(LIST_CHUNK_SIZE)]


async def test_no_warning_where_the_catch_up_fits_or_nothing_limits(
    cluster: Cluster, start_operator: OperatorFactory, archive: str, tmp_path: pathlib.Path
) -> None:
    store(cluster, "default", 40, 40)
    roomy = await start_operator(JOBARCHIVE_CGROUP_ROOT=str(cgroup(tmp_path / "v2", "max")))
    log = await eventually(lambda: _when("before watching", roomy.log()))
    assert "Counted 40 pods, 40 Events and 0 jobs in all namespaces before listing" in log
    assert "(memory limit: none)" in log and "is predicted to peak at" not in log
    await roomy.stop()

    v1 = tmp_path / "v1" / "memory"
    v1.mkdir(parents=True)
    (v1 / "memory.limit_in_bytes").write_text(f"{64 * 1024 * MIB}\n")
    sized = await start_operator(JOBARCHIVE_CGROUP_ROOT=str(v1.parent))
    log = await eventually(lambda: _when("before watching", sized.log()))
    assert "(memory limit: 65,536 MiB)" in log and "is predicted to peak at" not in log


async def _when(mark: str, log: str) -> str | None:
    return log if mark in log else None


async def _watching(cluster: Cluster, path: str) -> bool:
    return path in cluster.watched()
