"""The aggregated API on both databases over real HTTP, its callers reviewed by kmock's
emulated API server: discovery without the database or a token, objects and Tables,
pages with continue, the newest incarnation of a name, field selectors, Statuses, and
each review made with the URL's own attributes."""

from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from jobarchive.infra import cluster as kube
from jobarchive.reading import api, auth
from jobarchive.reading.kube import discovery, objects
from jobarchive.reading.kube.status import not_found
from jobarchive.storage.models import Job
from jobarchive.storage.store import Store
from testbed.cluster import ACCESS_REVIEWS, TOKEN_REVIEWS, Cluster, Reviews
from testbed.operator import write_kubeconfig
from tests.support import rows
from tests.support.history import History
from tests.support.kube import kube_archive

Client = TestClient[web.Request, web.Application]
ALICE, BOB, CAROL = "alice-token", "bob-token", "carol-token"
PREFIX = discovery.PREFIX
TEAM_A = f"{PREFIX}/namespaces/team-a"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"


@pytest.fixture
async def uids(database: str) -> dict[str, Any]:
    async with History() as history:
        return await kube_archive(history)


@pytest.fixture
def reviews(cluster: Cluster) -> Reviews:
    """alice reads team-a; bob everything; carol only team-a's archived jobs."""
    table = Reviews(cluster)
    table.user(ALICE, "alice", "ml-team-a")
    table.user(BOB, "bob")
    table.user(CAROL, "carol")
    table.grant("group:ml-team-a", "team-a")
    table.grant("user:bob")
    table.grant("user:carol", "team-a", frozenset({("archive.jobarchive.io", "archivedjobs", "")}))
    return table


@pytest.fixture
async def client(
    uids: dict[str, Any],
    reviews: Reviews,
    cluster: Cluster,
    tmp_path: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> AsyncIterator[Client]:
    kubeconfig = tmp_path / "kubeconfig"
    write_kubeconfig(kubeconfig, cluster.url)
    monkeypatch.setattr(kube, "KUBE_CONFIG_DEFAULT_LOCATION", str(kubeconfig))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    access = await auth.access("kubernetes")
    async with TestClient(TestServer(api.Api(access).site())) as test_client:
        yield test_client


async def get(
    client: Client, path: str, token: str | None = BOB, status: int = 200, accept: str = ""
) -> Any:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    if accept:
        headers["Accept"] = accept
    response = await client.get(path, headers=headers)
    body = await response.json(content_type=None)
    assert response.status == status, body
    if status >= 400:
        assert (body["kind"], body["code"], response.content_type) == (
            "Status",
            status,
            "application/json",
        )
    return body


async def test_discovery_needs_no_token_and_asks_nobody(client: Client, cluster: Cluster) -> None:
    response = await client.get("/apis", headers={"Accept": AGGREGATED})
    assert response.headers["Content-Type"] == discovery.AGGREGATED
    assert (await response.json(content_type=None)) == discovery.aggregated()
    assert await get(client, "/apis", None, accept="application/json") == discovery.group_list()
    assert await get(client, "/apis/archive.jobarchive.io", None) == discovery.group()
    assert await get(client, PREFIX, None) == discovery.resource_list()
    assert (await get(client, "/api", None, 404))["reason"] == "NotFound"
    assert "no OpenAPI v2" in (await get(client, "/openapi/v2", None, 404))["message"]
    assert (await get(client, "/openapi/v3/apis/apps/v1", None, 404))["reason"] == "NotFound"
    assert (await get(client, f"{PREFIX}/nothing", None, 404))["reason"] == "NotFound"
    assert (await get(client, "/apis", None, 406, accept="application/yaml"))["code"] == 406
    gone = await client.post(f"{TEAM_A}/archivedjobs")
    assert (gone.status, (await gone.json())["reason"]) == (405, "MethodNotAllowed")
    assert cluster.requests_to(TOKEN_REVIEWS) == cluster.requests_to(ACCESS_REVIEWS) == 0


async def test_openapi_v3_is_served_as_kube_openapi_serves_it_without_a_token(
    client: Client, cluster: Cluster
) -> None:
    index = await get(client, "/openapi/v3", None)
    url = index["paths"]["apis/archive.jobarchive.io/v1"]["serverRelativeURL"]
    path, _, digest = url.partition("?hash=")
    assert path == "/openapi/v3/apis/archive.jobarchive.io/v1" and len(digest) == 128
    response = await client.get(url, headers={"Accept": "application/json"})
    document = await response.json()
    assert (response.status, response.headers["ETag"]) == (200, f'"{digest}"')
    assert response.headers["Cache-Control"] == "public, immutable"
    assert document["openapi"] == "3.0.0"
    operation = document["paths"][f"{TEAM_A.replace('team-a', '{namespace}')}/archivedjobs"]
    assert operation["get"]["x-kubernetes-group-version-kind"]["kind"] == "ArchivedJob"
    stale = await client.get(f"{path}?hash=0", allow_redirects=False)
    assert (stale.status, stale.headers["Location"]) == (301, url)
    again = await client.get(path, headers={"If-None-Match": f'"{digest}"'})
    assert again.status == 304
    await get(
        client, path, None, 406, accept="application/com.github.proto-openapi.spec.v3.v1.0+protobuf"
    )
    assert cluster.requests_to(TOKEN_REVIEWS) == cluster.requests_to(ACCESS_REVIEWS) == 0


async def test_a_namespaces_jobs_as_a_list_and_as_a_table(
    client: Client, uids: dict[str, Any]
) -> None:
    listed = await get(client, f"{TEAM_A}/archivedjobs", ALICE)
    assert listed["kind"] == "ArchivedJobList" and "continue" not in listed["metadata"]
    names = [job["metadata"]["name"] for job in listed["items"]]
    assert names == ["bert-finetune", *(f"sweep-{i}" for i in reversed(range(5))), "bert-finetune"]
    assert {job["metadata"]["namespace"] for job in listed["items"]} == {"team-a"}
    table = await get(client, f"{TEAM_A}/archivedjobs", ALICE, accept=TABLE)
    assert table["kind"] == "Table" and len(table["rows"]) == 7
    assert table["rows"][-1]["cells"][:3] == ["bert-finetune", "TFJob", "Failed"]
    assert table["rows"][-1]["object"]["metadata"]["uid"] == uids["first"]
    whole = await get(client, f"{TEAM_A}/archivedjobs?includeObject=Object", ALICE, accept=TABLE)
    assert whole["rows"][0]["object"]["kind"] == "ArchivedJob"
    owned = await get(client, f"{TEAM_A}/archivedjobs?owner=alice&status=Failed", ALICE)
    assert [job["metadata"]["uid"] for job in owned["items"]] == [uids["first"]]
    queued = await get(client, f"{TEAM_A}/archivedjobs?fieldSelector=spec.queue%3Dresearch", ALICE)
    assert [job["metadata"]["name"] for job in queued["items"]] == ["sweep-4", "sweep-2", "sweep-0"]
    by_query = await get(client, f"{TEAM_A}/archivedjobs?queue=research", ALICE)
    assert [job["metadata"] for job in by_query["items"]] == [
        job["metadata"] for job in queued["items"]
    ]
    # A namespace selected is the one reviewed: alice may list team-a, not every one.
    selected = await get(
        client, f"{PREFIX}/archivedjobs?fieldSelector=metadata.namespace%3Dteam-a", ALICE
    )
    assert len(selected["items"]) == 7


async def test_pages_follow_continue_and_every_row_comes_once(client: Client) -> None:
    seen: list[str] = []
    following = ""
    while True:
        page = await get(client, f"{TEAM_A}/archivedjobs?limit=2{following}", accept=TABLE)
        assert len(page["rows"]) <= 2
        seen += [row["object"]["metadata"]["uid"] for row in page["rows"]]
        cursor = page["metadata"].get("continue")
        if cursor is None:
            break
        following = f"&continue={cursor}"
    assert len(seen) == len(set(seen)) == 7


async def test_a_page_past_500_is_cut_at_500_and_says_more_follow(client: Client) -> None:
    many = [
        rows.job(uid=f"bulk-{i}", name=f"bulk-{i}", namespace="bulk", gmt_created=rows.T0)
        for i in range(501)
    ]
    await Store().upsert(Job, many)
    for asked in ("", "?limit=0", "?limit=1000"):
        response = await client.get(
            f"{PREFIX}/namespaces/bulk/archivedjobs{asked}",
            headers={"Authorization": f"Bearer {BOB}"},
        )
        page = await response.json()
        assert len(page["items"]) == 500 and page["metadata"]["continue"]
        assert response.headers["Warning"].startswith('299 - "at most 500 archivedjobs a page')
    last = await get(
        client, f"{PREFIX}/namespaces/bulk/archivedjobs?continue={page['metadata']['continue']}"
    )
    assert len(last["items"]) == 1


async def test_get_answers_the_newest_incarnation_a_uid_any_other(
    client: Client, uids: dict[str, Any]
) -> None:
    newest = await get(client, f"{TEAM_A}/archivedjobs/bert-finetune", ALICE)
    assert newest["metadata"]["uid"] == uids["again"]
    first = await get(client, f"{TEAM_A}/archivedjobs/{uids['first']}", ALICE)
    assert (first["metadata"]["uid"], first["status"]["phase"]) == (uids["first"], "Failed")
    remarks = {pod["metadata"]["name"]: pod["status"]["remark"] for pod in first["status"]["pods"]}
    assert remarks["bert-finetune-worker-1"] == "OOMKilled (exit code 137)"
    assert {pod["spec"]["jobName"] for pod in first["status"]["pods"]} == {"bert-finetune"}
    assert [event["reason"] for event in first["status"]["events"]] == [
        "Scheduled",
        "OOMKilling",
        "TFJobFailed",
    ]
    assert first["status"]["replicas"]["worker"]["failed"] == 2
    paged = await get(client, f"{TEAM_A}/archivedjobs/{uids['first']}?limit=1", ALICE)
    assert paged["status"]["podsContinue"] and paged["status"]["eventsContinue"]
    assert objects.detail_row(first)["job_id"] == uids["first"]
    every = await get(client, f"{TEAM_A}/archivedjobs?fieldSelector=metadata.name%3Dbert-finetune")
    assert [job["metadata"]["uid"] for job in every["items"]] == [uids["again"], uids["first"]]
    # Another namespace's uid is not this namespace's job.
    assert (await get(client, f"{TEAM_A}/archivedjobs/{uids['theirs']}", BOB, 404))["message"]
    one = await get(client, f"{TEAM_A}/archivedjobs/bert-finetune", accept=TABLE)
    assert [row["cells"][0] for row in one["rows"]] == ["bert-finetune"]


async def test_pods_events_and_the_log_subresource(client: Client, uids: dict[str, Any]) -> None:
    doomed = uids["doomed"]
    pods = await get(client, f"{TEAM_A}/archivedpods?fieldSelector=spec.jobUID%3D{uids['first']}")
    assert sorted(pod["metadata"]["name"] for pod in pods["items"]) == [
        "bert-finetune-worker-0",
        "bert-finetune-worker-1",
    ]
    assert {pod["spec"]["jobName"] for pod in pods["items"]} == {"bert-finetune"}
    pod = await get(client, f"{TEAM_A}/archivedpods/{doomed['name']}")
    assert (pod["metadata"]["uid"], pod["status"]["phase"]) == (doomed["uid"], "Failed")
    assert (await get(client, f"{TEAM_A}/archivedpods/{doomed['uid']}"))["metadata"]["name"]
    table = await get(
        client, f"{TEAM_A}/archivedpods?fieldSelector=status.phase%3DFailed", accept=TABLE
    )
    assert len(table["rows"]) == 2
    warnings = await get(
        client, f"{TEAM_A}/archivedevents?fieldSelector=type%3DWarning", accept=TABLE
    )
    assert [row["cells"][2] for row in warnings["rows"]] == ["TFJobFailed", "OOMKilling"]
    about = await get(
        client, f"{TEAM_A}/archivedevents?fieldSelector=involvedObject.uid%3D{doomed['uid']}"
    )
    [event] = about["items"]
    assert event["kind"] == "ArchivedEvent" and event["involvedObject"]["name"] == doomed["name"]
    assert (await get(client, f"{TEAM_A}/archivedevents/{event['metadata']['name']}"))["reason"]
    assert (await get(client, f"{TEAM_A}/archivedevents/{event['metadata']['uid']}"))["reason"]
    log = await get(client, f"{TEAM_A}/archivedjobs/{uids['first']}/log")
    assert log == {"items": [], "next_cursor": None}
    assert (await get(client, f"{PREFIX}/stats?by=kind"))["items"]


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("fieldSelector=status.phase%21%3DFailed", "only = and == are supported"),
        ("fieldSelector=spec.colour%3Dred", "is not a field selector of archivedjobs"),
        ("fieldSelector=spec.resources%3Dx", "'spec.resources': no index serves this field"),
        ("fieldSelector=metadata.namespace%3Dteam-b", "is not the path's namespace 'team-a'"),
        ("fieldSelector=status.phase%3DBogus", "status: 'Bogus' is not one of"),
        ("fieldSelector=spec.kind%3DNoSuchJob", "kind: 'NoSuchJob' is not one of"),
        ("labelSelector=app%3Dx", "carry no labels"),
        ("limit=-1", "limit: '-1' is not a number"),
        ("continue=garbage", "cursor: not a cursor of this list"),
        ("colour=red", "unknown parameter 'colour'"),
        ("namespace=team-b", "unknown parameter 'namespace'"),
        ("includeObject=All", "includeObject: 'All' is not one of"),
    ],
)
async def test_bad_input_is_a_400_status_that_says_what_to_change(
    client: Client, query: str, message: str
) -> None:
    refused = await get(client, f"{TEAM_A}/archivedjobs?{query}", ALICE, 400)
    assert refused["reason"] == "BadRequest" and message in refused["message"], refused


async def test_who_may_read_what_each_review_with_the_urls_attributes(
    client: Client, uids: dict[str, Any], reviews: Reviews
) -> None:
    assert (await get(client, f"{TEAM_A}/archivedjobs", None, 401))["reason"] == "Unauthorized"
    assert (await get(client, f"{TEAM_A}/archivedjobs", "made-up", 401))["code"] == 401
    forbidden = await get(client, f"{PREFIX}/namespaces/team-b/archivedjobs", ALICE, 403)
    assert (
        "may not list archivedjobs.archive.jobarchive.io in namespace 'team-b'"
        in forbidden["message"]
    )
    everything = await get(client, f"{PREFIX}/archivedjobs", ALICE, 403)
    assert "kubectl -n NAMESPACE" in everything["message"]
    hidden = await get(client, f"{PREFIX}/namespaces/team-b/archivedjobs/bert-finetune", ALICE, 404)
    unknown = await get(client, f"{TEAM_A}/archivedjobs/no-such-job", ALICE, 404)
    assert hidden["message"] == 'archivedjobs.archive.jobarchive.io "bert-finetune" not found'
    assert unknown["message"] == 'archivedjobs.archive.jobarchive.io "no-such-job" not found'
    assert await get(
        client, f"{PREFIX}/namespaces/team-b/archivedjobs/{uids['theirs']}/log", ALICE, 404
    )
    all_of_them = await get(client, f"{PREFIX}/archivedjobs")
    assert {job["metadata"]["namespace"] for job in all_of_them["items"]} == {"team-a", "team-b"}
    # carol may read team-a's archived jobs and nothing else of it.
    assert await get(client, f"{TEAM_A}/archivedjobs", CAROL)
    await get(client, f"{TEAM_A}/archivedpods", CAROL, 403)
    await get(client, f"{TEAM_A}/archivedjobs/{uids['first']}/log", CAROL, 404)
    await get(client, f"{PREFIX}/stats", CAROL, 403)
    # Statistics and usage per namespace, for its reader; over all, for a cluster reader.
    own = await get(client, f"{TEAM_A}/stats?by=namespace", ALICE)
    assert [row["namespace"] for row in own["items"]] == ["team-a"]
    used = await get(client, f"{TEAM_A}/usage?by=namespace&since=2000-01-01", ALICE)
    assert [row["namespace"] for row in used["items"]] == ["team-a"]
    await get(client, f"{TEAM_A}/usage?namespace=team-b", ALICE, 400)
    await get(client, f"{PREFIX}/usage", ALICE, 403)
    await get(client, f"{TEAM_A}/usage", CAROL, 403)
    asked = {
        (a["verb"], a["group"], a["resource"], a.get("subresource", ""), a.get("namespace", ""))
        for a in reviews.asked
    }
    assert {
        ("list", "archive.jobarchive.io", "archivedjobs", "", "team-b"),
        ("list", "archive.jobarchive.io", "archivedjobs", "", ""),
        ("get", "archive.jobarchive.io", "archivedjobs", "", "team-b"),
        ("get", "archive.jobarchive.io", "archivedjobs", "log", "team-b"),
        ("list", "archive.jobarchive.io", "archivedpods", "", "team-a"),
        ("list", "archive.jobarchive.io", "stats", "", ""),
        ("list", "archive.jobarchive.io", "stats", "", "team-a"),
    } <= asked
    assert all(a["group"] == "archive.jobarchive.io" for a in reviews.asked)


async def test_a_list_request_is_reviewed_once(
    uids: dict[str, Any],
    reviews: Reviews,
    cluster: Cluster,
    tmp_path: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One SubjectAccessReview per list, on every face: counted with no answer kept (a
    TTL of 0), so that a list reviewed twice would send two."""
    kubeconfig = tmp_path / "kubeconfig"
    write_kubeconfig(kubeconfig, cluster.url)
    monkeypatch.setattr(kube, "KUBE_CONFIG_DEFAULT_LOCATION", str(kubeconfig))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    access = auth.KubernetesAuth(await kube.api_client(), ttl=0.0)
    lists = {
        f"{TEAM_A}/archivedjobs": ("archive.jobarchive.io", "archivedjobs"),
        f"{TEAM_A}/archivedjobs?fieldSelector=status.phase%3DFailed": (
            "archive.jobarchive.io",
            "archivedjobs",
        ),
        f"{TEAM_A}/archivedpods": ("archive.jobarchive.io", "archivedpods"),
        f"{TEAM_A}/archivedevents": ("archive.jobarchive.io", "archivedevents"),
        f"{api.PREFIX}/jobs?namespace=team-a": ("jobarchive.io", "jobs"),
        f"{api.PREFIX}/events?namespace=team-a": ("jobarchive.io", "jobs"),
    }
    async with TestClient(TestServer(api.Api(access).site())) as test_client:
        for path, (group, resource) in lists.items():
            # As kubectl asks: a Table (the JSON API answers JSON whatever it is asked).
            headers = {"Authorization": f"Bearer {ALICE}", "Accept": TABLE}
            before = len(reviews.asked)
            response = await test_client.get(path, headers=headers)
            assert response.status == 200, await response.text()
            asked = {"group": group, "resource": resource, "verb": "list", "namespace": "team-a"}
            assert reviews.asked[before:] == [asked], path


async def test_another_namespaces_objects_are_not_reached_through_ones_own(
    client: Client, uids: dict[str, Any]
) -> None:
    """alice reads team-a only: team-b's job, its pods, Events and log tails, named by
    uid under team-a's path or selected by its uid, are as unknown as a made-up name."""
    theirs = uids["theirs"]
    for path, plural, name in (
        (f"{TEAM_A}/archivedjobs/{theirs}", "archivedjobs", theirs),
        (f"{TEAM_A}/archivedjobs/{theirs}/log", "archivedjobs", theirs),
        (f"{PREFIX}/namespaces/team-b/archivedjobs/{theirs}/log", "archivedjobs", theirs),
        (f"{PREFIX}/namespaces/team-b/archivedpods/bert-finetune-worker-1", "archivedpods", None),
        (f"{TEAM_A}/archivedevents/{'x' * 300}.17a2", "archivedevents", None),
    ):
        refused = await get(client, path, ALICE, 404)
        asked = name or path.rpartition("/")[2]
        assert refused["message"] == not_found(plural, asked)
    for selector in (f"spec.jobUID%3D{theirs}", "metadata.uid%3D" + theirs):
        assert (await get(client, f"{TEAM_A}/archivedpods?fieldSelector={selector}", ALICE))[
            "items"
        ] == []
    selected = await get(
        client, f"{TEAM_A}/archivedjobs?fieldSelector=metadata.uid%3D{theirs}", ALICE
    )
    assert selected["items"] == []
    events = await get(client, f"{TEAM_A}/archivedevents?uid={theirs}", ALICE)
    assert events["items"] == []
