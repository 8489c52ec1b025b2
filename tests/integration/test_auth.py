"""The API's authentication and authorization against kmock's emulated API server, which
answers TokenReviews and SubjectAccessReviews from a table as a real one does: who
reads which namespace, what is cached and for how long, and what an API server that
does not answer costs (503, never an open door).

On SQLite only: authorization sits above the queries, whose dialects test_api.py covers.
"""

import asyncio
import logging
import pathlib
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from kubernetes_asyncio import client

from jobarchive.config import DbTls
from jobarchive.core.bounded import Expiring
from jobarchive.infra import cluster as kube
from jobarchive.reading import api, auth
from jobarchive.storage import database as db
from jobarchive.storage.readpool import ReadPool
from testbed.cluster import ACCESS_REVIEWS, TOKEN_REVIEWS, Cluster, Reviews
from testbed.operator import write_kubeconfig
from testbed.ports import free_port
from tests.support.history import History
from tests.support.waiting import eventually

Client = TestClient[web.Request, web.Application]
ALICE, BOB, CAROL = "alice-token", "bob-token", "carol-token"


@pytest.fixture
async def jobs(tmp_path: pathlib.Path) -> AsyncIterator[dict[str, str]]:
    """An archive with one job in team-a and one in team-b: their uids by namespace."""
    url = f"sqlite://{tmp_path / 'archive.sqlite3'}"
    await db.open_database(url, encryption=DbTls(), read_pool=ReadPool(url))
    async with History() as history:
        mine = await history.job("mnist", namespace="team-a")
        pod = await history.pod(mine, "Worker", 0)
        await history.event(pod, "OOMKilling", "Out of memory", type="Warning")
        theirs = await history.job("bert", namespace="team-b", kind="PyTorchJob")
    yield {"team-a": mine["metadata"]["uid"], "team-b": theirs["metadata"]["uid"]}
    await db.close_database()


@pytest.fixture
def reviews(cluster: Cluster) -> Reviews:
    """alice in group ml-team-a (reader in team-a), bob a cluster-wide reader, carol none."""
    table = Reviews(cluster)
    table.user(ALICE, "alice", "ml-team-a")
    table.user(BOB, "bob", "platform")
    table.user(CAROL, "carol")
    table.grant("group:ml-team-a", "team-a")
    table.grant("user:bob")
    return table


@pytest.fixture
def kubeconfig(cluster: Cluster, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The process's own credentials: a kubeconfig for the emulated cluster, no pod's."""
    path = tmp_path / "kubeconfig"
    write_kubeconfig(path, cluster.url)
    monkeypatch.setattr(kube, "KUBE_CONFIG_DEFAULT_LOCATION", str(path))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)


async def serving(access: auth.Access) -> Client:
    test_client: Client = TestClient(TestServer(api.Api(access).app()))
    await test_client.start_server()
    return test_client


@pytest.fixture
async def kubernetes(
    jobs: dict[str, str], reviews: Reviews, kubeconfig: None
) -> AsyncIterator[Client]:
    """The API with the ``kubernetes`` access control, as ``jobarchive serve`` builds it."""
    test_client = await serving(await auth.access("kubernetes"))
    yield test_client
    await test_client.close()


async def get(client_: Client, path: str, token: str | None, status: int = 200) -> Any:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    response = await client_.get(api.PREFIX + path, headers=headers)
    body = await response.json()
    assert response.status == status, body
    if status >= 400:
        assert body["error"]["status"] == status and body["error"]["message"]
    return body


async def test_without_a_valid_bearer_token_every_route_is_a_401(
    kubernetes: Client, cluster: Cluster
) -> None:
    for path in ("/jobs", "/stats", "/openapi.json", "/jobs/some-uid"):
        response = await kubernetes.get(api.PREFIX + path)
        assert response.status == 401
        assert response.headers["WWW-Authenticate"] == "Bearer"
        assert "bearer token is required" in (await response.json())["error"]["message"]
    basic = await kubernetes.get(api.PREFIX + "/jobs", headers={"Authorization": "Basic eDp5"})
    assert basic.status == 401
    assert cluster.requests_to(TOKEN_REVIEWS) == 0
    refused = await get(kubernetes, "/jobs?namespace=team-a", "stolen-token", 401)
    assert "not accepted" in refused["error"]["message"]


async def test_a_namespace_reader_reads_that_namespace_and_nothing_else(
    kubernetes: Client, jobs: dict[str, str]
) -> None:
    listed = await get(kubernetes, "/jobs?namespace=team-a", ALICE)
    assert [job["name"] for job in listed["items"]] == ["mnist"]
    events = await get(kubernetes, "/events?namespace=team-a", ALICE)
    assert [event["reason"] for event in events["items"]] == ["OOMKilling"]
    assert (await get(kubernetes, f"/jobs/{jobs['team-a']}", ALICE))["name"] == "mnist"
    assert (await get(kubernetes, "/jobs/team-a/mnist", ALICE))["items"][0]["name"] == "mnist"

    other = await get(kubernetes, "/jobs?namespace=team-b", ALICE, 403)
    assert other["error"]["message"] == (
        "user 'alice' may not list jobs.jobarchive.io in namespace 'team-b'"
    )
    await get(kubernetes, "/jobs/team-b/bert", ALICE, 403)
    for path in ("/jobs", "/events", "/jobs?status=Running"):
        everything = await get(kubernetes, path, ALICE, 403)
        assert "name a namespace" in everything["error"]["message"]
    stats = await get(kubernetes, "/stats", ALICE, 403)
    assert stats["error"]["message"].startswith("/stats covers all namespaces")
    # Another namespace's job by uid is as unknown as a uid that never was.
    hidden = await get(kubernetes, f"/jobs/{jobs['team-b']}", ALICE, 404)
    unknown = await get(kubernetes, "/jobs/no-such-uid", ALICE, 404)
    assert hidden["error"]["message"] == f"no job with uid {jobs['team-b']!r}"
    assert unknown["error"]["message"] == "no job with uid 'no-such-uid'"


async def test_a_cluster_wide_reader_reads_everything_and_nobody_else_does(
    kubernetes: Client, jobs: dict[str, str]
) -> None:
    everything = await get(kubernetes, "/jobs", BOB)
    assert {job["namespace"] for job in everything["items"]} == {"team-a", "team-b"}
    stats = await get(kubernetes, "/stats?by=namespace", BOB)
    assert {row["namespace"] for row in stats["items"]} == {"team-a", "team-b"}
    assert (await get(kubernetes, f"/jobs/{jobs['team-b']}", BOB))["name"] == "bert"
    assert (await get(kubernetes, "/openapi.json", CAROL))["openapi"].startswith("3.")
    await get(kubernetes, "/jobs?namespace=team-a", CAROL, 403)
    await get(kubernetes, f"/jobs/{jobs['team-a']}", CAROL, 404)


async def test_reviews_are_cached_briefly_by_a_hash_of_the_token(
    jobs: dict[str, str], reviews: Reviews, cluster: Cluster
) -> None:
    kubernetes = auth.KubernetesAuth(api_client(cluster.url), ttl=1.0)
    test_client = await serving(kubernetes)
    alice = {"Authorization": f"Bearer {ALICE}"}
    try:
        for _ in range(3):
            await get(test_client, "/jobs?namespace=team-a", ALICE)
        await get(test_client, "/jobs?namespace=team-b", ALICE, 403)
        await get(test_client, "/jobs?namespace=team-b", ALICE, 403)
        assert (cluster.requests_to(TOKEN_REVIEWS), cluster.requests_to(ACCESS_REVIEWS)) == (1, 2)
        stored = repr(kubernetes._identities._answers._entries)
        assert ALICE not in stored and "alice" in stored

        # A revoked grant is honoured once the answers expire, not before.
        reviews.grants.discard(("group:ml-team-a", "team-a"))
        await get(test_client, "/jobs?namespace=team-a", ALICE)

        async def refused() -> bool:
            response = await test_client.get(f"{api.PREFIX}/jobs?namespace=team-a", headers=alice)
            return response.status == 403

        await eventually(refused, within=5)
        assert (cluster.requests_to(TOKEN_REVIEWS), cluster.requests_to(ACCESS_REVIEWS)) == (2, 3)
    finally:
        await test_client.close()


async def test_a_name_no_namespace_can_have_is_a_400_before_any_review(
    kubernetes: Client, cluster: Cluster
) -> None:
    for path in (
        "/jobs?namespace=Team-A",
        "/jobs/Team-A/mnist",
        "/events?namespace=team_a",
        "/usage?namespace=-team-a",
        "/stats?namespace=team-a.",
    ):
        refused = await get(kubernetes, path, ALICE, 400)
        assert "is not a namespace's name" in refused["error"]["message"], path
    assert cluster.requests_to(ACCESS_REVIEWS) == 0


async def test_one_callers_flood_of_questions_pushes_out_no_one_elses_answers(
    jobs: dict[str, str], reviews: Reviews, cluster: Cluster
) -> None:
    # Each identity's answers apart: carol's flood, past the capacity the callers' answers
    # once shared, leaves bob's kept.
    kubernetes = auth.KubernetesAuth(api_client(cluster.url), ttl=60, capacity=2)
    test_client = await serving(kubernetes)
    try:
        await get(test_client, "/jobs?namespace=team-a", BOB)
        for number in range(10):
            await get(test_client, f"/jobs?namespace=flood-{number}", CAROL, 403)
        await get(test_client, "/jobs?namespace=team-a", BOB)
        assert reviews.asked_by == ["bob", *["carol"] * 10]
    finally:
        await test_client.close()


def test_the_cache_holds_a_bounded_number_of_answers() -> None:
    answers: Expiring[str, bool] = Expiring(ttl=60, capacity=2)
    for key in ("a", "b", "c"):
        answers.put(key, True)
    assert [answers.get(key) for key in ("a", "b", "c")] == [None, True, True]


async def test_an_api_server_that_fails_or_does_not_answer_is_a_503_never_a_yes(
    jobs: dict[str, str],
    reviews: Reviews,
    cluster: Cluster,
    caplog: pytest.LogCaptureFixture,
) -> None:
    kubernetes = auth.KubernetesAuth(api_client(cluster.url), ttl=60)
    test_client = await serving(kubernetes)
    caplog.set_level(logging.INFO, logger=auth.__name__)
    try:
        reviews.failing = True
        failed = await get(test_client, "/jobs?namespace=team-a", ALICE, 503)
        assert failed["error"]["message"] == (
            "cannot check the caller's access: the Kubernetes API answered 500 "
            "Internal Server Error"
        )
        await get(test_client, "/jobs?namespace=team-a", ALICE, 503)
        # A failure is not remembered: the next answer is the API server's.
        reviews.failing = False
        await get(test_client, "/jobs?namespace=team-a", ALICE)
    finally:
        await test_client.close()
    messages = [record.getMessage() for record in caplog.records if record.name == auth.__name__]
    assert messages == [
        "Cannot review API callers (a TokenReview): the Kubernetes API answered 500 "
        "Internal Server Error",
        "Access reviews are answered again",
    ]
    assert not [record for record in caplog.records if ALICE in record.getMessage()]

    nowhere = auth.KubernetesAuth(api_client(f"http://127.0.0.1:{free_port()}"))
    test_client = await serving(nowhere)
    try:
        unreachable = await get(test_client, "/jobs?namespace=team-a", ALICE, 503)
        assert "the Kubernetes API did not answer" in unreachable["error"]["message"]
    finally:
        await test_client.close()


async def status_with(session: aiohttp.ClientSession, base: str, token: str) -> int:
    headers = {"Authorization": f"Bearer {token}"}
    async with session.get(f"{base}/jobs?namespace=team-a", headers=headers) as response:
        return response.status


async def test_a_flood_of_made_up_tokens_costs_a_few_reviews_and_users_still_get_in(
    jobs: dict[str, str], reviews: Reviews, cluster: Cluster
) -> None:
    # Nothing cached (ttl 0): every request of alice, known since her first, is reviewed.
    kubernetes = auth.KubernetesAuth(api_client(cluster.url), ttl=0)
    test_client = await serving(kubernetes)
    base = str(test_client.make_url(api.PREFIX))
    # The users' own connections: not queued behind the flood's in the client.
    async with aiohttp.ClientSession() as users:
        assert await status_with(users, base, ALICE) == 200
        started = time.monotonic()
        flood = [
            asyncio.ensure_future(status_with(test_client.session, base, f"made-up-{i}"))
            for i in range(300)
        ]
        # During the flood alice, known, takes no turn: never turned away.
        alice = [await status_with(users, base, ALICE) for _ in range(5)]
        # bob, new, takes his turn with the flood: retried after Retry-After, he gets in.
        bob = [await status_with(users, base, BOB)]
        while bob[-1] == 503 and time.monotonic() - started < 30:
            await asyncio.sleep(auth.REVIEW_WAIT)
            bob.append(await status_with(users, base, BOB))
        bob_in = time.monotonic() - started
        statuses = await asyncio.gather(*flood)
        elapsed = time.monotonic() - started
    await test_client.close()
    assert alice == [200] * 5
    assert bob[-1] == 200 and bob_in <= elapsed + 2 * auth.REVIEW_WAIT, (bob, bob_in)
    reviewed, turned_away = statuses.count(401), statuses.count(503)
    assert reviewed + turned_away == 300
    # The turns granted: a burst, then the rate over the flood and over the last wait.
    assert reviewed <= auth.REVIEW_BURST + auth.REVIEW_RATE * (elapsed + auth.REVIEW_WAIT)
    assert cluster.requests_to(TOKEN_REVIEWS) == reviewed + 1 + len(alice) + 1
    print(f"300 made-up tokens, {elapsed:.2f} s: {reviewed} reviews; bob {bob} in {bob_in:.2f} s")


async def test_a_refused_token_is_reviewed_once_in_a_while_and_never_pushes_a_user_out(
    jobs: dict[str, str], reviews: Reviews, cluster: Cluster
) -> None:
    kubernetes = auth.KubernetesAuth(api_client(cluster.url), capacity=2, refused_ttl=2)
    test_client = await serving(kubernetes)
    base = str(test_client.make_url(api.PREFIX))
    try:
        assert await status_with(test_client.session, base, ALICE) == 200
        for token in ("made-up", "made-up", "other", "another"):
            assert await status_with(test_client.session, base, token) == 401
        assert await status_with(test_client.session, base, ALICE) == 200
        # Three made-up tokens, over the capacity of 2, and alice's answer is still kept.
        assert cluster.requests_to(TOKEN_REVIEWS) == 1 + 3

        async def reviewed_again() -> bool:
            assert await status_with(test_client.session, base, "made-up") == 401
            return cluster.requests_to(TOKEN_REVIEWS) == 5

        await eventually(reviewed_again, within=5)
    finally:
        await test_client.close()


async def test_without_a_cluster_kubernetes_authentication_cannot_be_built(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kube, "KUBE_CONFIG_DEFAULT_LOCATION", str(tmp_path / "nothing"))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(auth.NoCluster, match="no kubeconfig at"):
        await auth.access("kubernetes")
    assert isinstance(await auth.access("none"), auth.NoAuth)


@pytest.mark.parametrize(("host", "warned"), [("0.0.0.0", True), ("127.0.0.1", False)])
async def test_serving_without_authentication_beyond_loopback_is_warned_of(
    host: str, warned: bool, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    runner = await api.serve(host, free_port(), auth.NoAuth())
    assert runner is not None
    await runner.cleanup()
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert bool(warnings) == warned
    assert all("checks no caller (authentication: none)" in w for w in warnings)


def api_client(url: str) -> client.ApiClient:
    """A client of the API server at ``url``, for an access control the test configures."""
    return client.ApiClient(client.Configuration(host=url))


async def test_a_namespace_reader_gets_usage_and_statistics_of_that_namespace_only(
    kubernetes: Client,
) -> None:
    window = "since=2000-01-01&until=2100-01-01"
    mine = await get(kubernetes, f"/usage?by=namespace&namespace=team-a&{window}", ALICE)
    assert {row["namespace"] for row in mine["items"]} == {"team-a"}
    counted = await get(kubernetes, "/stats?by=namespace&namespace=team-a", ALICE)
    assert {row["namespace"] for row in counted["items"]} == {"team-a"}
    other = await get(kubernetes, f"/usage?namespace=team-b&{window}", ALICE, 403)
    assert "in namespace 'team-b'" in other["error"]["message"]
    await get(kubernetes, "/stats?namespace=team-b", ALICE, 403)
    everything = await get(kubernetes, f"/usage?by=namespace&{window}", ALICE, 403)
    assert everything["error"]["message"].startswith("usage over all namespaces covers")
    # As CSV too: the refusal comes before any row is read.
    response = await kubernetes.get(
        f"{api.PREFIX}/usage?by=namespace",
        headers={"Authorization": f"Bearer {ALICE}", "Accept": "text/csv"},
    )
    assert response.status == 403
    wide = await get(kubernetes, f"/usage?by=namespace&{window}", BOB)
    assert {row["namespace"] for row in wide["items"]} == {"team-a", "team-b"}
    await get(kubernetes, f"/usage?namespace=team-a&{window}", CAROL, 403)
