"""The read-only HTTP API on both databases, over real HTTP: the CLI's queries as JSON,
errors as JSON with a message, and an OpenAPI document that matches the routes."""

import datetime
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from jobarchive import config
from jobarchive.logtails import inserts as tails
from jobarchive.logtails.text import tail
from jobarchive.logtails.triggers import Failure
from jobarchive.reading import api, auth, queries
from jobarchive.reading.kube.routes import NAMESPACE_CHECK
from tests.support.history import History
from tests.support.kinds import EXTRA_KINDS
from tests.support.rows import write_tails

Client = TestClient[web.Request, web.Application]


@pytest.fixture
async def client(database: str) -> AsyncIterator[Client]:
    async with History() as history:
        job = await history.job(
            "mnist", status="Failed", finished="2026-11-20T10:20:00Z", owner="alice"
        )
        pod = await history.pod(job, "Worker", 0)
        await history.event(pod, "OOMKilling", "Out of memory", type="Warning")
        for index in range(5):
            await history.job(
                f"sweep-{index}",
                namespace="team-b",
                created=f"2026-11-2{index}T00:00:00Z",
                kind="PyTorchJob",
            )
    async with TestClient(TestServer(api.Api(auth.NoAuth()).app())) as test_client:
        yield test_client


async def get(client: Client, path: str, status: int = 200) -> Any:
    response = await client.get(api.PREFIX + path)
    body = await response.json()
    assert response.status == status, body
    return body


async def test_jobs_are_listed_filtered_and_paged(client: Client) -> None:
    everything = await get(client, "/jobs")
    assert len(everything["items"]) == 6 and everything["next_cursor"] is None
    failed = await get(client, "/jobs?status=Failed&owner=alice&in_cluster=true")
    assert [job["name"] for job in failed["items"]] == ["mnist"]
    names, cursor = [], ""
    while True:
        page = await get(client, f"/jobs?namespace=team-b&limit=2{cursor}")
        names += [job["name"] for job in page["items"]]
        if page["next_cursor"] is None:
            break
        cursor = f"&cursor={page['next_cursor']}"
    assert names == [f"sweep-{index}" for index in reversed(range(5))]
    since = await get(client, "/jobs?created_since=2026-11-23&kind=PyTorchJob")
    assert [job["name"] for job in since["items"]] == ["sweep-4", "sweep-3"]


async def test_one_job_by_uid_or_name_with_its_pods_and_events(
    client: Client,
) -> None:
    [named] = (await get(client, "/jobs/team-a/mnist"))["items"]
    detail = await get(client, f"/jobs/{named['job_id']}")
    assert detail["replicas"] == {
        "worker": {"active": 1, "succeeded": 0, "failed": 0, "stopped": 0}
    }
    assert [event["reason"] for event in detail["events"]] == ["OOMKilling"]
    assert (await get(client, "/jobs/no-such-uid", 404))["error"]["message"]
    assert (await get(client, "/jobs/team-a/nothing", 404))["error"]["status"] == 404


async def test_a_jobs_log_tails_and_which_of_its_pods_have_one(client: Client) -> None:
    [named] = (await get(client, "/jobs/team-a/mnist"))["items"]
    uid = named["job_id"]
    [pod] = (await get(client, f"/jobs/{uid}"))["pods"]
    assert pod["has_log_tail"] is False
    assert (await get(client, f"/jobs/{uid}/logs"))["items"] == []
    failure = Failure(
        namespace="team-a",
        pod=pod["name"],
        pod_uid=pod["pod_id"],
        container="pytorch",
        container_type="container",
        restart_count=0,
        exit_code=137,
        reason="OOMKilled",
        finished_at=datetime.datetime(2026, 11, 20, 10, 19, tzinfo=datetime.UTC),
        previous=False,
    )
    text = tail(b"epoch 3\nCUDA out of memory\n", 100, 65536)
    await write_tails([tails.row(failure, uid, text, None)])
    [pod] = (await get(client, f"/jobs/{uid}"))["pods"]
    assert pod["has_log_tail"] is True
    [found] = (await get(client, f"/jobs/{uid}/logs?container=pytorch"))["items"]
    assert (found["log_tail"], found["exit_code"]) == ("epoch 3\nCUDA out of memory\n", 137)
    assert (await get(client, f"/jobs/{uid}/logs?container=other"))["items"] == []
    unknown = "00000000-0000-4000-8000-000000000000"
    assert (await get(client, f"/jobs/{unknown}/logs", 404))["error"]["status"] == 404
    assert "limit" in (await get(client, f"/jobs/{uid}/logs?limit=101", 400))["error"]["message"]


async def test_events_and_stats(client: Client) -> None:
    warnings = await get(client, "/events?type=Warning&reason=OOMKilling")
    assert [event["obj_name"] for event in warnings["items"]] == ["mnist-worker-0"]
    stats = await get(client, "/stats?by=kind")
    assert {row["kind"]: row["jobs"] for row in stats["items"]} == {"PyTorchJob": 5, "TFJob": 1}


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/jobs?colour=red", "unknown parameter 'colour'"),
        ("/jobs?created_since=last-week", "created_since: 'last-week'"),
        ("/jobs?status=Exploded", "status: 'Exploded'"),
        ("/jobs?cursor=xyz", "cursor"),
        ("/jobs?limit=501", "limit: 501 is outside 1..500"),
        ("/jobs?limit=ten", "limit: 'ten' is not a number"),
        ("/jobs?in_cluster=maybe", "in_cluster: 'maybe' is not true or false"),
        ("/events?since=noon", "since: 'noon'"),
        ("/stats?by=colour", "by: 'colour'"),
        ("/jobs/some-uid?verbose=1", "unknown parameter 'verbose'"),
    ],
)
async def test_bad_input_is_a_400_with_a_message(client: Client, path: str, message: str) -> None:
    body = await get(client, path, 400)
    assert message in body["error"]["message"]


async def test_a_kind_the_settings_add_is_a_filter_of_the_api_it_was_given_to(
    database: str,
) -> None:
    settings = config.load(EXTRA_KINDS)
    given = api.Api(auth.NoAuth(), kinds=queries.known_kinds(settings.kinds))
    async with TestClient(TestServer(given.app())) as client:
        assert await get(client, "/jobs?kind=llmjob") == {"items": [], "next_cursor": None}
        assert (await get(client, "/events?namespace=llm&kind=LLMJob"))["items"] == []
    async with TestClient(TestServer(api.Api(auth.NoAuth()).app())) as client:
        refused = await get(client, "/jobs?kind=LLMJob", 400)
    assert "kind: 'LLMJob' is not one of" in refused["error"]["message"]


async def test_a_query_past_the_timeout_is_a_504(database: str) -> None:
    async with TestClient(TestServer(api.Api(auth.NoAuth(), timeout=1e-6).app())) as slow:
        body = await get(slow, "/jobs", 504)
    assert "longer than" in body["error"]["message"]


async def test_the_openapi_document_lists_every_route_and_parameter(
    client: Client,
) -> None:
    document = await get(client, "/openapi.json")
    assert document["openapi"].startswith("3.")
    routes = {
        resource.canonical.removeprefix(api.PREFIX)
        for resource in client.app.router.resources()
        if resource.canonical.startswith(api.PREFIX + "/") and resource.canonical != NAMESPACE_CHECK
    }
    assert set(document["paths"]) == routes - {"/openapi.json"}
    listed = {p["name"] for p in document["paths"]["/jobs"]["get"]["parameters"]}
    assert listed == {p.name for p in api.JOB_PARAMS + api.PAGE}
