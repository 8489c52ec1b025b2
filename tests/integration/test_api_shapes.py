"""The OpenAPI document says what every answer holds: each route's 200 answer, on both
databases, validates against the schema the document gives it (JSON Schema 2020-12, as
OpenAPI 3.1 writes it), and so does every error; a path of the API that is no route, or
a method other than GET, is answered in JSON too (the Kubernetes API's: a Status),
never aiohttp's text."""

from collections.abc import AsyncIterator
from typing import Any

import jsonschema  # type: ignore[import-untyped]  # the package ships no type information
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from jobarchive.reading import api, auth, openapi
from tests.support.console import keep_log_tail, oom_killed_job
from tests.support.history import History

Client = TestClient[web.Request, web.Application]
DOCUMENT = api.openapi()


@pytest.fixture
async def archive(database: str) -> AsyncIterator[tuple[Client, dict[str, str]]]:
    """A failed job with its pods, Events and a log tail, and a job still running (its
    finish and duration not known yet): the uid and name of the failed one."""
    async with History() as history:
        story = await oom_killed_job(history)
        await history.job("still-running", status="Running")
    await keep_log_tail(story["job"], story["pods"][1], b"CUDA out of memory\n")
    meta = story["job"]["metadata"]
    async with TestClient(TestServer(api.Api(auth.NoAuth()).site())) as client:
        yield client, {"uid": meta["uid"], "namespace": meta["namespace"], "name": meta["name"]}


def validator(name: str) -> Any:
    """A validator of one of the document's schemas, its references resolved in it."""
    root = {"$ref": f"#/components/schemas/{name}", "components": DOCUMENT["components"]}
    return jsonschema.Draft202012Validator(root)


def answer_schema(path: str, code: str) -> str:
    """The name of the schema the document gives a route's answer of that status."""
    content = DOCUMENT["paths"][path]["get"]["responses"][code]["content"]
    reference: str = content["application/json"]["schema"]["$ref"]
    return reference.rsplit("/", 1)[1]


def test_usage_is_documented_as_json_and_as_csv() -> None:
    content = DOCUMENT["paths"]["/usage"]["get"]["responses"]["200"]["content"]
    assert sorted(content) == ["application/json", "text/csv"]


def test_every_schema_is_json_schema() -> None:
    assert DOCUMENT["openapi"] == "3.1.0"
    for schema in openapi.SCHEMAS.values():
        jsonschema.Draft202012Validator.check_schema(schema)


async def test_every_routes_answer_is_the_shape_the_document_says(
    archive: tuple[Client, dict[str, str]],
) -> None:
    client, job = archive
    asked = {
        "/jobs": ["/jobs", "/jobs?limit=1", "/jobs?status=Running"],
        "/jobs/{uid}": ["/jobs/{uid}", "/jobs/{uid}?limit=1"],
        "/jobs/{uid}/logs": ["/jobs/{uid}/logs"],
        "/jobs/{namespace}/{name}": ["/jobs/{namespace}/{name}"],
        "/events": ["/events", "/events?namespace={namespace}&type=Warning&limit=1"],
        "/stats": [f"/stats?by={by}" for by in ("status", "kind", "owner", "namespace", "tenant")],
        "/usage": [
            f"/usage?by={by}&since=2000-01-01{every}"
            for by in ("namespace", "owner", "queue")
            for every in ("", "&every=month")
        ],
    }
    assert set(asked) == set(DOCUMENT["paths"])
    for route, paths in asked.items():
        check = validator(answer_schema(route, "200"))
        for path in paths:
            response = await client.get(api.PREFIX + path.format(**job))
            body = await response.json()
            assert response.status == 200, body
            errors = [f"{list(e.absolute_path)}: {e.message}" for e in check.iter_errors(body)]
            assert errors == [], path
            assert body.get("items") != [], path  # each answer had something to check
    detail = await (await client.get(f"{api.PREFIX}/jobs/{job['uid']}")).json()
    assert detail["pods"] and detail["events"] and detail["replicas"]


async def test_every_error_is_the_error_schema(archive: tuple[Client, dict[str, str]]) -> None:
    client, job = archive
    check = validator(answer_schema("/jobs/{uid}", "404"))
    for path, status in (
        ("/jobs?colour=red", 400),
        ("/jobs/no-such-uid", 404),
        (f"/jobs/{job['namespace']}/nothing", 404),
        ("/stats?by=colour", 400),
    ):
        response = await client.get(api.PREFIX + path)
        body = await response.json()
        assert response.status == status and body["error"]["status"] == status
        check.validate(body)


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("GET", "/api/", 404),
        ("GET", "/api/v1", 404),
        ("GET", "/api/v1/", 404),
        ("GET", "/api/v2/jobs", 404),
        ("GET", "/api/v1/jobs/a/b/c", 404),
        ("POST", "/api/v1/jobs", 405),
        ("DELETE", "/api/v1/stats", 405),
        ("PUT", "/api/v1/openapi.json", 405),
        ("GET", "/api/console.css", 404),
        # The Kubernetes API's paths answer a metav1.Status.
        ("GET", "/apis/other.example.io/v1", 404),
        ("GET", "/apis/archive.jobarchive.io/v2/archivedjobs", 404),
        ("POST", "/apis/archive.jobarchive.io/v1/namespaces/team-a/archivedjobs", 405),
        ("GET", "/openapi/v4", 404),
    ],
)
async def test_a_path_of_the_api_that_is_no_route_is_answered_in_json(
    archive: tuple[Client, dict[str, str]], method: str, path: str, status: int
) -> None:
    client, _ = archive
    response = await client.request(method, path)
    assert (response.status, response.content_type) == (status, "application/json")
    body = await response.json()
    if path.startswith("/api/"):
        validator("Error").validate(body)
    else:
        assert (body["kind"], body["status"], body["code"]) == ("Status", "Failure", status)
    if status == 405:
        assert response.headers["Allow"] and "GET" in response.headers["Allow"]
    else:
        head = await client.head(path)
        assert (head.status, head.content_type) == (404, "application/json")
