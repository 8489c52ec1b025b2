"""The aggregated API's OpenAPI v3 document says what its objects hold: every list's and
every get's answer, on both databases, validates against the schema its path names in
the document as served (read back from OpenAPI 3.0's ``nullable`` to JSON Schema), and
kubectl explain's way to a kind (the path's GVK, then the schema that carries it) finds
each resource's schema."""

import json
from collections.abc import AsyncIterator
from typing import Any

import jsonschema  # type: ignore[import-untyped]  # the package ships no type information
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from jobarchive.reading import api, auth
from jobarchive.reading.kube import discovery, openapi
from tests.support.console import keep_log_tail, oom_killed_job
from tests.support.history import History

Client = TestClient[web.Request, web.Application]
PREFIX = discovery.PREFIX
NAMESPACED = f"{PREFIX}/namespaces/{{namespace}}"


def as_json_schema(schema: Any) -> Any:
    """OpenAPI 3.0's ``type: T, nullable: true`` read back as ``type: [T, "null"]``."""
    if isinstance(schema, list):
        return [as_json_schema(each) for each in schema]
    if not isinstance(schema, dict):
        return schema
    read = {key: as_json_schema(value) for key, value in schema.items() if key != "nullable"}
    if schema.get("nullable"):
        read["type"] = [schema["type"], "null"]
    return read


DOCUMENT = json.loads(openapi.served()[0])
SCHEMAS = as_json_schema(DOCUMENT["components"]["schemas"])


def validator(reference: str) -> Any:
    """A validator of the schema a reference names, its references resolved in the
    document's schemas."""
    root = {"$ref": reference, "components": {"schemas": SCHEMAS}}
    return jsonschema.Draft202012Validator(root)


def answer_of(path: str) -> str:
    """The reference to the schema the document gives a path's 200 answer."""
    content = DOCUMENT["paths"][path]["get"]["responses"]["200"]["content"]
    reference: str = content["application/json"]["schema"]["$ref"]
    return reference


@pytest.fixture
async def archive(database: str) -> AsyncIterator[tuple[Client, dict[str, str]]]:
    """A failed job with its pods, Events and a log tail, and a job of a queue still
    running: the names of the failed one, its pod and one of its Events."""
    async with History() as history:
        story = await oom_killed_job(history)
        await history.job("still-running", status="Running", queue="research")
    await keep_log_tail(story["job"], story["pods"][1], b"CUDA out of memory\n")
    async with TestClient(TestServer(api.Api(auth.NoAuth()).site())) as client:
        event = await (await client.get(f"{PREFIX}/archivedevents")).json()
        yield (
            client,
            {
                "namespace": "team-a",
                "job": story["job"]["metadata"]["name"],
                "pod": story["pods"][1]["metadata"]["name"],
                "event": event["items"][0]["metadata"]["name"],
            },
        )


def test_every_schema_is_json_schema_and_explain_finds_each_kind() -> None:
    assert DOCUMENT["openapi"] == "3.0.0"
    for schema in SCHEMAS.values():
        jsonschema.Draft202012Validator.check_schema(schema)
    for kind in discovery.KINDS:
        operation = DOCUMENT["paths"][f"{NAMESPACED}/{kind.plural}"]["get"]
        gvk = operation["x-kubernetes-group-version-kind"]
        carrying = [
            name
            for name, schema in SCHEMAS.items()
            if gvk in schema.get("x-kubernetes-group-version-kind", [])
        ]
        assert carrying == [f"io.jobarchive.archive.v1.{kind.kind}"]


async def test_every_answer_is_the_shape_the_document_says(
    archive: tuple[Client, dict[str, str]],
) -> None:
    client, names = archive
    asked = {
        f"{PREFIX}/archivedjobs": ["", "?limit=1", "?fieldSelector=spec.queue%3Dresearch"],
        f"{NAMESPACED}/archivedpods": ["", "?fieldSelector=status.phase%3DFailed"],
        f"{NAMESPACED}/archivedevents": ["", "?fieldSelector=type%3DWarning"],
        f"{NAMESPACED}/archivedjobs/{{name}}": ["", "?limit=1"],
        f"{NAMESPACED}/archivedpods/{{name}}": [""],
        f"{NAMESPACED}/archivedevents/{{name}}": [""],
    }
    named = {"archivedjobs": names["job"], "archivedpods": names["pod"]}
    named["archivedevents"] = names["event"]
    for route, queries in asked.items():
        check = validator(answer_of(route))
        plural = route.split("/")[-2 if route.endswith("{name}") else -1]
        path = route.format(namespace=names["namespace"], name=named[plural])
        for query in queries:
            response = await client.get(path + query)
            body = await response.json()
            assert response.status == 200, body
            errors = [f"{list(e.absolute_path)}: {e.message}" for e in check.iter_errors(body)]
            assert errors == [], path + query
            assert body.get("items") != [], path + query  # each answer had something to check
    job = await (await client.get(f"{PREFIX}/namespaces/team-a/archivedjobs/{names['job']}")).json()
    status = job["status"]
    assert status["pods"] and status["events"] and status["replicas"]
    assert any(pod["status"]["hasLogTail"] for pod in status["pods"])
