"""Every parameter and path segment of every route, given what a hostile or careless
caller sends: always a JSON answer with a status below 500, never a traceback, and
never the raw text in a log line."""

import logging
import urllib.parse
from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from jobarchive.reading import api, auth
from tests.support.history import History

Client = TestClient[web.Request, web.Application]

HOSTILE = [
    "x" * 5000,
    "n" * 300,
    "0001-01-01T00:00:00+14:00",
    "9999-12-31T23:59:59-14:00",
    "2026-13-45",
    "\uff15",
    "5_0",
    " 5 ",
    "-1",
    "99999999999999999999",
    # Within aiohttp's 8 KiB request line once percent-encoded; longer lines are
    # refused by its HTTP parser with a 400 before any route sees them.
    "[" * 2000,
    "eyJhIjogMX0",
    "WyJldmVudHMiLCAiIiwgM10",
    "W1tbW1tbW1tbW1tbW1tbW1tbW1tbW1tbXV1dXV1dXV1dXV1dXV1dXV1dXV1d",
    "line\nINFO forged",
    "' OR 1=1 --",
    "%",
    "\x00",
    "\U0001f680",
    "tfjob",
    "Bogus",
    "",
]
ROUTE_PARAMS = {
    "/jobs": [param.name for param in api.JOB_PARAMS + api.PAGE],
    "/events": [param.name for param in api.EVENT_PARAMS + api.PAGE],
    "/stats": [param.name for param in api.STATS_PARAMS],
    "/jobs/{uid}": [param.name for param in api.DETAIL_PARAMS],
    "/jobs/team-a/mnist": [param.name for param in api.PAGE],
}


@pytest.fixture
async def client(database: str) -> AsyncIterator[Client]:
    async with TestClient(TestServer(api.Api(auth.NoAuth()).app())) as test_client:
        yield test_client


@pytest.fixture
async def uid(database: str) -> str:
    async with History() as history:
        job = await history.job("mnist", namespace="team-a")
        await history.pod(job, "Worker", 0)
    return str(job["metadata"]["uid"])


async def answer(client: Client, path: str) -> tuple[int, dict[str, object]]:
    response = await client.get(api.PREFIX + path)
    assert response.content_type == "application/json", (path, await response.text())
    return response.status, await response.json()


async def test_every_parameter_of_every_route_answers_hostile_values_in_json_without_a_500(
    client: Client, uid: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    statuses: dict[int, int] = {}
    for route, params in ROUTE_PARAMS.items():
        path = route.replace("{uid}", uid)
        for param in params:
            for value in HOSTILE:
                query = urllib.parse.urlencode({param: value})
                status, body = await answer(client, f"{path}?{query}")
                assert status < 500, (path, param, value, body)
                statuses[status] = statuses.get(status, 0) + 1
    assert set(statuses) <= {200, 400, 404}
    # Escaped where it is logged at all: no line of the log starts with the forged text.
    assert "\nINFO forged" not in caplog.text
    assert "Traceback" not in caplog.text


@pytest.mark.parametrize(
    "segment", ["x" * 5000, "%0AINFO forged", "..%2F..%2Fetc", "%00", "\U0001f680", "' OR '1'='1"]
)
async def test_every_path_segment_answers_hostile_values_in_json_without_a_500(
    client: Client, segment: str
) -> None:
    for path in (f"/jobs/{segment}", f"/jobs/{segment}/mnist", f"/jobs/team-a/{segment}"):
        status, body = await answer(client, path)
        assert status in (400, 404), (path, body)


async def test_a_repeated_parameter_is_refused_not_guessed(client: Client) -> None:
    status, body = await answer(client, "/jobs?namespace=team-a&namespace=team-b")
    assert (status, body["error"]) == (
        400,
        {"status": 400, "message": "namespace: given 2 times; give it once"},
    )


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/jobs?limit=%EF%BC%95", "limit: '\uff15' is not a number"),
        ("/jobs?limit=5_0", "limit: '5_0' is not a number"),
        ("/jobs?kind=tfjobs", "kind: 'tfjobs' is not one of"),
        ("/events?type=Bogus&namespace=team-a", "type: 'Bogus' is not one of Normal, Warning"),
        ("/jobs?name_contains=nist", "name_contains: no index serves it"),
        # An unknown value is told as such before any index rule.
        ("/events?type=Bogus", "type: 'Bogus' is not one of Normal, Warning"),
        ("/events?kind=Bogus", "kind: 'Bogus' is not one of"),
        ("/jobs?status=Bogus&region=eu-1", "status: 'Bogus' is not one of"),
        ("/events?cursor=WyJqb2JzIiwgIiIsIDNd", "cursor: not a cursor of this list (events)"),
        ("/jobs?namespace=" + "n" * 300, "namespace: 300 characters"),
    ],
)
async def test_bad_values_are_named_in_one_line(client: Client, path: str, message: str) -> None:
    status, body = await answer(client, path)
    error = body["error"]
    assert status == 400 and isinstance(error, dict), body
    assert str(error["message"]).startswith(message), body


async def test_a_jobs_detail_pages_its_pods_and_events(client: Client, uid: str) -> None:
    status, first = await answer(client, f"/jobs/{uid}?limit=1")
    assert status == 200
    assert (len(first["pods"]), first["pods_next_cursor"]) == (1, None)  # type: ignore[arg-type]
    assert first["replicas"] == {"worker": {"active": 1, "succeeded": 0, "failed": 0, "stopped": 0}}
