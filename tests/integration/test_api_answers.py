"""What every answer of the read side carries and refuses, whoever asks: the same
headers on every answer (aiohttp's own 404 and 405 included), one Authorization header
only, and a job another namespace owns refused before anything of it but its namespace
is read, with the reviews of kmock's emulated API server."""

import pathlib
from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from jobarchive.infra import cluster as kube
from jobarchive.reading import api, auth
from jobarchive.reading.handling import HEADERS
from jobarchive.storage import database as db
from testbed.cluster import Cluster, Reviews
from testbed.operator import write_kubeconfig
from tests.support.history import History

Client = TestClient[web.Request, web.Application]
ALICE = "alice-token"


@pytest.fixture
async def uids(database: str) -> dict[str, str]:
    """A job of three pods in team-a and one in team-b: their uids by namespace."""
    async with History() as history:
        uids = {}
        for namespace in ("team-a", "team-b"):
            job = await history.job("mnist", namespace=namespace)
            for index in range(3):
                await history.pod(job, "Worker", index)
            uids[namespace] = job["metadata"]["uid"]
    return uids


@pytest.fixture
async def client(
    uids: dict[str, str], cluster: Cluster, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Client]:
    """The application as ``jobarchive serve`` builds it: alice reads team-a."""
    reviews = Reviews(cluster)
    reviews.user(ALICE, "alice", "ml-team-a")
    reviews.grant("group:ml-team-a", "team-a")
    kubeconfig = tmp_path / "kubeconfig"
    write_kubeconfig(kubeconfig, cluster.url)
    monkeypatch.setattr(kube, "KUBE_CONFIG_DEFAULT_LOCATION", str(kubeconfig))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    access = await auth.access("kubernetes")
    async with TestClient(TestServer(api.Api(access).site())) as test_client:
        yield test_client


BEARER = {"Authorization": f"Bearer {ALICE}"}


async def test_every_answer_carries_the_headers_aiohttps_own_404_and_405_included(
    client: Client, uids: dict[str, str]
) -> None:
    asked = [
        ("GET", f"{api.PREFIX}/jobs?namespace=team-a", 200, "application/json"),
        ("GET", f"{api.PREFIX}/jobs/{uids['team-b']}", 404, "application/json"),
        ("GET", f"{api.PREFIX}/no-such-route", 404, "application/json"),
        ("POST", f"{api.PREFIX}/jobs", 405, "application/json"),
        ("DELETE", f"{api.PREFIX}/jobs/{uids['team-a']}", 405, "application/json"),
        ("GET", "/no-such-page", 404, "text/html"),
        ("POST", "/", 405, "text/html"),
        ("GET", f"/job?uid={uids['team-a']}", 200, "text/html"),
        ("GET", f"/jobs/{uids['team-a']}", 200, "text/html"),  # sent on to the above
    ]
    for method, path, status, content_type in asked:
        response = await client.request(method, path, headers=BEARER)
        body = await response.read()
        assert (response.status, response.content_type) == (status, content_type), (path, body)
        for name, value in HEADERS.items():
            assert response.headers.get(name) == value, (path, name)
        if content_type == "application/json" and status >= 400:
            error = (await response.json())["error"]
            assert error["status"] == status and error["message"]
    refused = await client.post(f"{api.PREFIX}/jobs", headers=BEARER)
    assert refused.headers["Allow"] == "GET,HEAD"


async def test_two_authorization_headers_are_refused_whatever_they_hold(
    client: Client,
) -> None:
    for second in (f"Bearer {ALICE}", "Bearer someone-else", "Basic eDp5"):
        headers = [("Authorization", f"Bearer {ALICE}"), ("Authorization", second)]
        for path in (f"{api.PREFIX}/jobs?namespace=team-a", "/?namespace=team-a"):
            response = await client.get(path, headers=headers)
            assert response.status == 400, path
            assert "2 Authorization headers" in await response.text()


async def _selects() -> int:
    _, found = await db.connection().execute_query("SHOW GLOBAL STATUS LIKE 'Com_select'")
    return int(found[0]["Value"])


@pytest.mark.parametrize("db_url", ["mysql"], indirect=True)
async def test_a_job_the_caller_may_not_see_costs_the_statements_of_one_that_never_was(
    client: Client, uids: dict[str, str]
) -> None:
    counted = {}
    unknown = "00000000-0000-4000-8000-00000000dead"
    for what, uid in (("unknown", unknown), ("theirs", uids["team-b"]), ("mine", uids["team-a"])):
        for path in (f"{api.PREFIX}/jobs/{uid}", f"{api.PREFIX}/jobs/{uid}/logs", f"/jobs/{uid}"):
            before = await _selects()
            response = await client.get(path, headers=BEARER)
            counted[what, path.replace(uid, "UID")] = (response.status, await _selects() - before)
    for path in (f"{api.PREFIX}/jobs/UID", f"{api.PREFIX}/jobs/UID/logs", "/jobs/UID"):
        assert counted["unknown", path] == counted["theirs", path] == (404, 1), counted
        status, statements = counted["mine", path]
        assert status == 200 and statements > 1, counted
