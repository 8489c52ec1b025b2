"""Fleet reads (decision 36) on both databases: two clusters' rows in one archive, read
through the JSON API and the aggregated API over real HTTP, the callers reviewed by
kmock's emulated API server. A reader of a namespace sees its home cluster's rows there;
another cluster's only with a grant on ``clusters`` naming it; a job of a cluster not
granted is as unknown as one that never was; a cluster filter is checked like any
other."""

import datetime
import re
from collections.abc import AsyncIterator
from html import unescape
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from jobarchive.core.efficiency import MEASURED, PodEfficiency
from jobarchive.reading import api, auth, queries
from jobarchive.reading.kube import discovery
from jobarchive.storage.models import Job, Pod
from jobarchive.storage.store import Store
from jobarchive.storage.summaries import Summary
from testbed.cluster import ACCESS_REVIEWS, Cluster, Reviews
from tests.support import fleet, rows
from tests.support.fleet import ALICE, BOB, DAVE, EAST, ERIN, WEST
from tests.support.history import History

Client = TestClient[web.Request, web.Application]
TEAM_A = f"{discovery.PREFIX}/namespaces/team-a"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


@pytest.fixture
def reviews(cluster: Cluster) -> Reviews:
    return fleet.fleet_readers(cluster)


@pytest.fixture
async def uids(database: str) -> dict[str, str]:
    async with History() as history:
        return await fleet.two_clusters(history)


@pytest.fixture
async def client(
    uids: dict[str, str], reviews: Reviews, cluster: Cluster, tmp_path: Any, monkeypatch: Any
) -> AsyncIterator[Client]:
    """The API, home in east, its callers reviewed by the emulated cluster."""
    fleet.own_kubeconfig(monkeypatch, tmp_path / "kubeconfig", cluster.url)
    site = api.Api(await auth.access("kubernetes"), home=EAST).site()
    async with TestClient(TestServer(site)) as test_client:
        yield test_client


async def get(
    client: Client, path: str, token: str, status: int = 200, accept: str = "application/json"
) -> Any:
    response = await client.get(
        path, headers={"Authorization": f"Bearer {token}", "Accept": accept}
    )
    body = await response.json(content_type=None)
    assert response.status == status, body
    return body


def clusters_of(page: dict[str, Any]) -> list[tuple[str, str]]:
    return [(item["name"], item["cluster"]) for item in page["items"]]


async def test_a_namespace_reader_sees_its_home_clusters_rows_only(
    client: Client, uids: dict[str, str]
) -> None:
    jobs = await get(client, f"{api.PREFIX}/jobs?namespace=team-a", ALICE)
    assert clusters_of(jobs) == [("mnist", EAST)]
    events = await get(client, f"{api.PREFIX}/events?namespace=team-a", ALICE)
    assert {event["cluster"] for event in events["items"]} == {EAST}
    named = await get(client, f"{api.PREFIX}/jobs/team-a/mnist", ALICE)
    assert [job["job_id"] for job in named["items"]] == [uids["east"]]
    # West's job by uid answers as a uid that never was, on every route.
    for path in (f"/jobs/{uids['west']}", f"/jobs/{uids['west']}/logs"):
        hidden = await get(client, api.PREFIX + path, ALICE, 404)
        assert hidden["error"]["message"] == f"no job with uid {uids['west']!r}"
    assert (await get(client, f"{api.PREFIX}/jobs/{uids['east']}", ALICE))["cluster"] == EAST
    # Naming the other cluster is refused, whether or not it holds anything.
    for name in (WEST, "no-such-cluster"):
        refused = await get(
            client, f"{api.PREFIX}/jobs?namespace=team-a&cluster={name}", ALICE, 403
        )
        assert refused["error"]["message"] == (
            f"user 'alice' may not get clusters.jobarchive.io {name!r}"
        )
    home = await get(client, f"{api.PREFIX}/jobs?namespace=team-a&cluster={EAST}", ALICE)
    assert clusters_of(home) == [("mnist", EAST)]


async def test_a_grant_naming_a_cluster_adds_its_rows(
    client: Client, uids: dict[str, str], reviews: Reviews
) -> None:
    jobs = await get(client, f"{api.PREFIX}/jobs?namespace=team-a", DAVE)
    assert clusters_of(jobs) == [("mnist", WEST), ("mnist", EAST)]
    west = await get(client, f"{api.PREFIX}/jobs?namespace=team-a&cluster={WEST}", DAVE)
    assert clusters_of(west) == [("mnist", WEST)]
    assert (await get(client, f"{api.PREFIX}/jobs/{uids['west']}", DAVE))["cluster"] == WEST
    asked = [a for a in reviews.asked if a["resource"] == "clusters"]
    assert {(a["group"], a.get("name", ""), a["namespace"], a["verb"]) for a in asked} == {
        ("jobarchive.io", "", "", "get"),
        ("jobarchive.io", WEST, "", "get"),
    }
    # A grant of every cluster reads them all, reviewed once.
    every = await get(client, f"{api.PREFIX}/jobs?namespace=team-a", ERIN)
    assert clusters_of(every) == [("mnist", WEST), ("mnist", EAST)]


async def test_a_row_kubedls_writer_inserted_is_no_clusters_and_needs_every_cluster(
    client: Client, uids: dict[str, str], reviews: Reviews
) -> None:
    # KubeDL's writer names no cluster: not the home cluster's, nor one named "None".
    await Job.filter(job_id=uids["east"]).update(cluster=None)
    assert await queries.job_clusters(100) == ([WEST], False)  # east's one job was it
    path = f"{api.PREFIX}/jobs/{uids['east']}"
    assert (await get(client, path, ALICE, 404))["error"]["message"].startswith("no job")
    assert (await get(client, path, ERIN))["cluster"] is None
    named = {a.get("name", "") for a in reviews.asked if a["resource"] == "clusters"}
    assert named <= {"", WEST}, named


async def test_a_list_over_every_namespace_leaks_no_other_clusters_rows(
    client: Client, cluster: Cluster
) -> None:
    everything = await get(client, f"{api.PREFIX}/jobs", BOB)
    assert {job["cluster"] for job in everything["items"]} == {EAST}
    assert ("bert", WEST) not in clusters_of(everything)
    events = await get(client, f"{api.PREFIX}/events", BOB)
    assert {event["cluster"] for event in events["items"]} == {EAST}
    before = cluster.requests_to(ACCESS_REVIEWS)
    await get(client, f"{api.PREFIX}/jobs", BOB)
    # The answers are cached: a second page asks nothing again.
    assert cluster.requests_to(ACCESS_REVIEWS) == before


async def test_a_bad_cluster_value_is_a_400(client: Client) -> None:
    long = "x" * 64
    for query, said in (
        (f"cluster={long}", "cluster: 64 characters, longer than any stored value (63)"),
        ("cluster=a&cluster=b", "cluster: given 2 times; give it once"),
    ):
        refused = await get(client, f"{api.PREFIX}/jobs?namespace=team-a&{query}", ERIN, 400)
        assert refused["error"]["message"] == said
    status = await get(client, f"{TEAM_A}/archivedjobs?cluster={long}", ERIN, 400)
    assert (status["kind"], status["reason"]) == ("Status", "BadRequest")


async def test_a_namespace_longer_than_any_stored_is_a_400_before_any_review(
    client: Client, cluster: Cluster
) -> None:
    before = cluster.requests_to(ACCESS_REVIEWS)
    for route in ("jobs", "events", "usage", "stats"):
        refused = await get(client, f"{api.PREFIX}/{route}?namespace={'x' * 129}", ALICE, 400)
        said = "namespace: 129 characters, longer than any stored value (128)"
        assert refused["error"]["message"] == said
    # The aggregated API's namespace is its path's.
    for route in ("archivedjobs", "archivedjobs/x", "usage"):
        path = f"{discovery.PREFIX}/namespaces/{'x' * 129}/{route}"
        status = await get(client, path, ALICE, 400)
        assert (status["kind"], status["reason"]) == ("Status", "BadRequest")
    assert cluster.requests_to(ACCESS_REVIEWS) == before


async def test_the_aggregated_api_shows_the_cluster_and_selects_by_it(
    client: Client, uids: dict[str, str]
) -> None:
    # alice's newest mnist is east's, though west recorded one later.
    got = await get(client, f"{TEAM_A}/archivedjobs/mnist", ALICE)
    assert (got["metadata"]["uid"], got["spec"]["cluster"]) == (uids["east"], EAST)
    await get(client, f"{TEAM_A}/archivedjobs/{uids['west']}", ALICE, 404)
    got = await get(client, f"{TEAM_A}/archivedjobs/mnist", DAVE)
    assert (got["metadata"]["uid"], got["spec"]["cluster"]) == (uids["west"], WEST)
    selected = await get(client, f"{TEAM_A}/archivedjobs?fieldSelector=spec.cluster%3D{WEST}", DAVE)
    assert [job["metadata"]["uid"] for job in selected["items"]] == [uids["west"]]
    pods = await get(client, f"{TEAM_A}/archivedpods?fieldSelector=spec.cluster%3D{EAST}", DAVE)
    assert pods["items"] and {pod["spec"]["cluster"] for pod in pods["items"]} == {EAST}
    events = await get(client, f"{TEAM_A}/archivedevents?fieldSelector=cluster%3D{WEST}", DAVE)
    assert events["items"] and {event["cluster"] for event in events["items"]} == {WEST}
    refused = await get(
        client, f"{TEAM_A}/archivedjobs?fieldSelector=spec.cluster%3D{WEST}", ALICE, 403
    )
    assert "clusters.archive.jobarchive.io" in refused["message"]
    table = await get(client, f"{TEAM_A}/archivedjobs", DAVE, accept=TABLE)
    names = [column["name"] for column in table["columnDefinitions"]]
    cells = [dict(zip(names, row["cells"], strict=True)) for row in table["rows"]]
    assert [cell["Cluster"] for cell in cells] == [WEST, EAST]


async def test_without_access_control_every_cluster_is_read(
    uids: dict[str, str], database: str
) -> None:
    async with TestClient(TestServer(api.Api(auth.NoAuth(), home=EAST).app())) as served:
        jobs = await get(served, f"{api.PREFIX}/jobs", "anyone")
        assert {job["cluster"] for job in jobs["items"]} == {EAST, WEST}
        assert (await get(served, f"{api.PREFIX}/jobs/{uids['west']}", "anyone"))["cluster"] == WEST


async def page(client: Client, path: str, token: str, status: int = 200) -> str:
    response = await client.get(path, headers={"Authorization": f"Bearer {token}"})
    html = await response.text()
    assert response.status == status, html
    return html


def listed_clusters(html: str) -> list[str]:
    rows = re.findall(r'<tr class="job">(.*?)</tr>', html, re.S)
    return [re.findall(r'<td class="cluster">([^<]*)</td>', row)[0] for row in rows]


async def test_the_console_filters_by_cluster_and_shows_it(
    client: Client, uids: dict[str, str]
) -> None:
    assert listed_clusters(await page(client, "/?namespace=team-a", DAVE)) == [WEST, EAST]
    assert listed_clusters(await page(client, f"/?namespace=team-a&cluster={WEST}", DAVE)) == [WEST]
    assert listed_clusters(await page(client, "/?namespace=team-a", ALICE)) == [EAST]
    form = await page(client, "/?namespace=team-a", ALICE)
    assert '<input name="cluster"' in form
    refused = await page(client, f"/?namespace=team-a&cluster={WEST}", ALICE, 403)
    assert "may not get clusters.jobarchive.io" in unescape(refused)
    job = await page(client, f"/job?uid={uids['west']}", DAVE)
    assert f'<dd class="cluster">{WEST}</dd>' in job
    await page(client, f"/job?uid={uids['west']}", ALICE, 404)
    # The other jobs of its name are those the caller may read: none of west's for alice.
    mine = await page(client, f"/job?uid={uids['east']}", ALICE)
    assert uids["west"] not in mine
    assert uids["east"] in await page(client, f"/job?uid={uids['west']}", DAVE)


async def test_statistics_count_only_the_clusters_the_caller_may_read(client: Client) -> None:
    mine = await get(client, f"{api.PREFIX}/stats?by=namespace", BOB)
    assert [(row["namespace"], row["jobs"]) for row in mine["items"]] == [("team-a", 1)]
    both = await get(client, f"{api.PREFIX}/stats?namespace=team-a", DAVE)
    assert sum(row["jobs"] for row in both["items"]) == 2
    kube = await get(client, f"{discovery.PREFIX}/stats?by=namespace", BOB)
    assert kube["items"] == mine["items"]
    assert (await page(client, "/stats", BOB)).count("<svg") >= 1


async def test_usage_counts_only_the_clusters_the_caller_may_read(client: Client) -> None:
    window = "since=2026-11-01T00:00:00Z&until=2026-12-01T00:00:00Z"
    mine = await get(client, f"{api.PREFIX}/usage?by=cluster&{window}", BOB)
    assert [(row["cluster"], row["jobs"]) for row in mine["items"]] == [(EAST, 1)]
    both = await get(client, f"{api.PREFIX}/usage?by=cluster&namespace=team-a&{window}", DAVE)
    assert sorted((row["cluster"], row["jobs"]) for row in both["items"]) == [
        (EAST, 1),
        (WEST, 1),
    ]
    west = await get(client, f"{api.PREFIX}/usage?cluster={WEST}&namespace=team-a&{window}", DAVE)
    assert [(row["namespace"], row["jobs"]) for row in west["items"]] == [("team-a", 1)]
    await get(client, f"{api.PREFIX}/usage?cluster={WEST}&{window}", BOB, status=403)
    kube = await get(client, f"{discovery.PREFIX}/usage?by=cluster&{window}", BOB)
    assert kube["items"] == mine["items"]
    assert "team-b" not in await page(client, f"/usage?by=namespace&{window}", BOB)


async def test_usage_efficiency_of_another_cluster_never_shows(
    client: Client, uids: dict[str, str]
) -> None:
    # West's team-a pod ran an hour on 2 GPUs, measured at 50%; east's has no summary.
    start = datetime.datetime(2026, 11, 20, 10, tzinfo=datetime.UTC)
    ran = {"gmt_started": start, "gmt_finished": start + datetime.timedelta(hours=1)}
    await Pod.filter(job_id=uids["west"]).update(gpus=2, **ran)
    [pod] = await Pod.filter(job_id=uids["west"]).values()
    found = PodEfficiency(MEASURED, gpu_activity_mean=0.5)
    await Store(cluster=WEST).upsert(Summary, [rows.summary(pod, found)])  # type: ignore[arg-type]
    window = "since=2026-11-01T00:00:00Z&until=2026-12-01T00:00:00Z"
    # Bob reads east alone: its job's efficiency unknown, west's never in it.
    mine = await get(client, f"{api.PREFIX}/usage?by=cluster&{window}", BOB)
    assert [
        (
            row["cluster"],
            row["gpu_activity_mean"],
            row["idle_gpu_hours"],
            row["efficiency_unknown_jobs"],
        )
        for row in mine["items"]
    ] == [(EAST, None, None, 1)]
    csv = await client.get(
        f"{api.PREFIX}/usage?by=cluster&{window}",
        headers={"Authorization": f"Bearer {BOB}", "Accept": "text/csv"},
    )
    assert "0.5" not in (await csv.text()).splitlines()[1]
    # Dave reads team-a of west too: west's figures, east's unknown beside them.
    both = await get(client, f"{api.PREFIX}/usage?by=cluster&namespace=team-a&{window}", DAVE)
    assert sorted(
        (row["cluster"], row["gpu_activity_mean"], row["idle_gpu_hours"]) for row in both["items"]
    ) == [(EAST, None, None), (WEST, 0.5, 1.0)]
    # Alice reads team-a of the home cluster: west's measured hour is not in her row.
    alice = await get(client, f"{api.PREFIX}/usage?namespace=team-a&{window}", ALICE)
    assert [(row["namespace"], row["gpu_activity_mean"]) for row in alice["items"]] == [
        ("team-a", None)
    ]
