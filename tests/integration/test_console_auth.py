"""Who sees what in the console: the API's reviews, made of kmock's emulated API server,
which answers TokenReviews and SubjectAccessReviews from a table as a real one does.
A page carries the bearer token an authenticating proxy sets; a user allowed in one
namespace sees neither another namespace's job page (404, as if it never was) nor its
jobs in the list."""

import pathlib
from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from jobarchive import cluster as kube
from jobarchive.config import DbTls
from jobarchive.reading import api, auth
from jobarchive.storage import database as db
from jobarchive.storage.reads import ReadPool
from testbed.cluster import Cluster, Reviews
from testbed.operator import write_kubeconfig
from tests.support.console import oom_killed_job
from tests.support.history import History

Client = TestClient[web.Request, web.Application]
ALICE, BOB = "alice-token", "bob-token"


@pytest.fixture
async def uids(tmp_path: pathlib.Path) -> AsyncIterator[dict[str, str]]:
    """The OOM-killed job in team-a and in team-b: their uids by namespace."""
    url = f"sqlite://{tmp_path / 'archive.sqlite3'}"
    await db.open_database(url, encryption=DbTls(), read_pool=ReadPool(url))
    async with History() as history:
        mine = await oom_killed_job(history, "team-a")
        theirs = await oom_killed_job(history, "team-b")
    yield {"team-a": mine["job"]["metadata"]["uid"], "team-b": theirs["job"]["metadata"]["uid"]}
    await db.close_database()


@pytest.fixture
async def console(
    uids: dict[str, str], cluster: Cluster, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Client]:
    """The application as ``jobarchive serve`` builds it, reviewing with the cluster's
    API: alice reads team-a, bob every namespace."""
    reviews = Reviews(cluster)
    reviews.user(ALICE, "alice", "ml-team-a")
    reviews.user(BOB, "bob")
    reviews.grant("group:ml-team-a", "team-a")
    reviews.grant("user:bob")
    kubeconfig = tmp_path / "kubeconfig"
    write_kubeconfig(kubeconfig, cluster.url)
    monkeypatch.setattr(kube, "KUBE_CONFIG_DEFAULT_LOCATION", str(kubeconfig))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    access = await auth.access("kubernetes")
    async with TestClient(TestServer(api.Api(access).site())) as client:
        yield client


async def page(client: Client, path: str, token: str | None, status: int) -> str:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    response = await client.get(path, headers=headers)
    text = await response.text()
    assert response.status == status, text
    assert response.content_type == "text/html"
    return text


async def test_a_namespace_reader_sees_that_namespace_only(
    console: Client, uids: dict[str, str]
) -> None:
    mine = await page(console, "/?namespace=team-a", ALICE, 200)
    assert uids["team-a"] in mine and "team-a/bert-finetune" in mine
    assert "OOMKilled" in await page(console, f"/jobs/{uids['team-a']}", ALICE, 200)

    hidden = await page(console, f"/jobs/{uids['team-b']}", ALICE, 404)
    assert "no job with uid" in hidden and "team-b" not in hidden
    refused = await page(console, "/?namespace=team-b", ALICE, 403)
    assert "may not list jobs.jobarchive.io in namespace &#39;team-b&#39;" in refused
    assert uids["team-b"] not in refused
    everywhere = await page(console, "/", ALICE, 403)
    assert "name a namespace" in everywhere and uids["team-b"] not in everywhere
    assert "covers all namespaces" in await page(console, "/stats", ALICE, 403)


async def test_a_cluster_wide_reader_sees_everything_and_strangers_nothing(
    console: Client, uids: dict[str, str]
) -> None:
    everything = await page(console, "/", BOB, 200)
    assert uids["team-a"] in everything and uids["team-b"] in everything
    assert "OOMKilled" in await page(console, f"/jobs/{uids['team-b']}", BOB, 200)
    assert "Jobs per day" in await page(console, "/stats", BOB, 200)

    for path in ("/", f"/jobs/{uids['team-a']}", "/stats"):
        response = await console.get(path)
        assert response.status == 401 and response.headers["WWW-Authenticate"] == "Bearer"
        assert "bearer token is required" in await response.text()
    stolen = await page(console, f"/jobs/{uids['team-a']}", "stolen-token", 401)
    assert uids["team-a"] not in stolen.split("<main>")[1]
