"""The aggregated API's OpenAPI v3 document, as kube-apiserver serves one per group
version (what ``kubectl explain`` reads), and the index of it at ``/openapi/v3``.

Its schemas are made of the objects' fields (``objects.JOB_FIELDS``, ...: where each
column stands) and the rows' schemas (``reading.described``: each column's type and
meaning, as the JSON API's document gives them; a job's detail's lists as it does), so
they describe what the routes answer and cannot drift from it.
Written as JSON Schema (a type and ``null`` for a value that may be absent), then
served as OpenAPI 3.0 writes it (``nullable``), as kube-openapi does. Fixed data, built
once (decision 28).
"""

import copy
import functools
import hashlib
import json
from collections.abc import Mapping
from typing import Any

from jobarchive.reading import described
from jobarchive.reading import openapi as json_api
from jobarchive.reading.kube import admitted, objects, selectors, used
from jobarchive.reading.kube.discovery import (
    EVENTS,
    GROUP,
    JOBS,
    KINDS,
    PODS,
    PREFIX,
    VERSION,
    Kind,
)
from jobarchive.reading.kube.objects import Field

Schema = dict[str, Any]

# The group's path in the index, and where its document is served.
GROUP_PATH = f"apis/{GROUP}/{VERSION}"
DOCUMENT_PATH = f"/openapi/v3/{GROUP_PATH}"
# Schemas are named as kube-openapi names a Go type: the group reversed, then the kind.
NAMED = ".".join((*reversed(GROUP.split(".")), VERSION)) + "."
TEXT: Schema = {"type": "string"}
# What the objects on a field's way mean (the objects' spec and status have their own).
PARTS = {
    "metadata": "Its name, namespace, uid and creation, as Kubernetes recorded them.",
    "requested": "What its containers request, as numbers (decision 32).",
    "involvedObject": "What the Event is about.",
}
FLAG: Schema = {"type": "boolean"}


def name(kind: str) -> str:
    """The name of a kind's schema in ``components.schemas``."""
    return NAMED + kind


def _ref(kind: str, description: str) -> Schema:
    # OpenAPI 3.0 ignores a $ref's siblings: a described reference is an allOf of one.
    return {"allOf": [{"$ref": f"#/components/schemas/{name(kind)}"}], "description": description}


def _gvk(kind: str) -> list[dict[str, str]]:
    return [{"group": GROUP, "kind": kind, "version": VERSION}]


def _empty(description: str = "") -> Schema:
    shape: Schema = {"type": "object", "properties": {}, "required": []}
    shape["additionalProperties"] = False
    if description:
        shape["description"] = description
    return shape


def _put(root: Schema, path: tuple[str, ...], schema: Schema, required: bool = True) -> None:
    """``schema`` at ``path`` in the object schema ``root``, each object on the way made."""
    place = root
    for key in path[:-1]:
        if key not in place["properties"]:
            place["properties"][key] = _empty(PARTS.get(key, ""))
            place["required"].append(key)
        place = place["properties"][key]
    place["properties"][path[-1]] = schema
    if required:
        place["required"].append(path[-1])


def _shape(fields: tuple[Field, ...], columns: Mapping[str, Schema], described: str) -> Schema:
    """An object of ``fields``, each with its column's schema (a flag a boolean)."""
    root = _empty(described)
    for field in fields:
        schema = (
            {**FLAG, **_meaning(columns[field.column])} if field.flag else columns[field.column]
        )
        _put(root, field.path, copy.deepcopy(schema), not field.optional)
    return root


def _meaning(schema: Schema) -> Schema:
    return {"description": schema["description"]} if "description" in schema else {}


def _apart(root: Schema, kind: str, part: str, description: str) -> tuple[str, Schema]:
    """``root``'s ``part`` (spec, status) as a schema of its own, referenced."""
    named = f"{kind}{part.capitalize()}"
    # Described where it is referenced: explain prints both descriptions.
    schema = root["properties"][part]
    root["properties"][part] = _ref(named, description)
    return name(named), schema


def _top(kind: str, shape: Schema) -> Schema:
    """An object of the group: its apiVersion and kind, and the GVK kubectl looks for."""
    shape["properties"] = {
        "apiVersion": {**TEXT, "description": f"Always {GROUP}/{VERSION}."},
        "kind": {**TEXT, "description": f"Always {kind}."},
        **shape["properties"],
    }
    shape["required"] = ["apiVersion", "kind", *shape["required"]]
    shape["x-kubernetes-group-version-kind"] = _gvk(kind)
    return shape


def _list(kind: Kind) -> Schema:
    listed = _empty(f"A page of {kind.plural}, newest first.")
    listed["properties"]["metadata"] = _empty("The page's: continue names the next one.")
    listed["required"].append("metadata")
    _put(listed, ("metadata", "resourceVersion"), {**TEXT, "description": "Always empty."})
    cursor = {**TEXT, "description": "Pass it back as continue for the next page."}
    _put(listed, ("metadata", "continue"), cursor, required=False)
    _put(listed, ("items",), {"type": "array", "items": _ref(kind.kind, f"One {kind.kind}.")})
    return _top(f"{kind.kind}List", listed)


def _job_detail(status: Schema) -> None:
    """What a GET adds to an ArchivedJob's status (``objects.job_with_detail``)."""
    omission = copy.deepcopy(json_api.OMISSION)
    omission["properties"]["field"]["description"] = (
        f"What is left out: {', '.join(objects.OMITTED_FIELDS.values())}."
    )
    extras = {
        "replicas": {
            "type": "object",
            "description": "Its pods counted by replica type (a GET's).",
            "additionalProperties": json_api.POD_COUNTS,
        },
        "pods": {
            "type": "array",
            "description": "A page of its pods, in the order they were recorded (a GET's).",
            "items": _ref(PODS.kind, "A pod of the job."),
        },
        "podsContinue": {**TEXT, "description": "Pass it back as pods_cursor for more pods."},
        "events": {
            "type": "array",
            "description": "A page of the Events about it, oldest first (a GET's).",
            "items": _ref(EVENTS.kind, "An Event about the job."),
        },
        "eventsContinue": {**TEXT, "description": "Pass it back as events_cursor for more."},
        "failure": _failure(),
        **_kueue(),
        "efficiency": used.efficiency_schema(),
        "omitted": {
            "type": "array",
            "description": "The lists left out, and why: the caller may not read them.",
            "items": omission,
        },
    }
    status["properties"].update(extras)


def _failure() -> Schema:
    """The JSON API's failure, its fields as Kubernetes spells them."""
    failure = copy.deepcopy(json_api.FAILURE)
    properties = failure["properties"]
    for field, shown in objects.FAILURE_FIELDS.items():
        properties[shown] = properties.pop(field)
    failure["required"] = list(properties)
    return failure


def _kueue() -> dict[str, Schema]:
    """The JSON API's Kueue attempts, waits and figures of a job, as Kubernetes spells
    them (``admitted``): a GET's."""
    found = copy.deepcopy(json_api.KUEUE)
    for key, names in (("attempts", admitted.ATTEMPT_NAMES), ("waits", admitted.WAIT_NAMES)):
        item = found[key]["items"]
        item["properties"] = admitted.renamed(item["properties"], names)
        item["required"] = list(item["properties"])
    return admitted.renamed(found, admitted.STATUS_NAMES)


def components() -> dict[str, Schema]:
    """Every schema of the document, as JSON Schema, by name."""
    job = _shape(objects.JOB_FIELDS, described.JOB, "A job as the archive recorded it.")
    pod_columns = json_api.DETAIL_POD["properties"]
    pod = _shape(objects.POD_FIELDS, pod_columns, "A pod of a job, as the archive recorded it.")
    event = _shape(
        objects.EVENT_FIELDS, described.EVENT, "A core/v1 Event about a job, its pods or its parts."
    )
    _put(pod, ("spec", "jobName"), {**described.MAYBE_TEXT, "description": "The pod's job."})
    failed = "Its failure class (decision 42) when it failed and was classified; a list's, a GET's."
    _put(job, ("status", "failureClass"), {**described.MAYBE_TEXT, "description": failed}, False)
    _put(event, ("involvedObject", "namespace"), {**TEXT, "description": "Its namespace."})
    first = described.EVENT["first_timestamp"]
    _put(event, ("firstTimestamp",), {**first, "description": "When it first occurred."})
    found: dict[str, Schema] = {}
    for kind, shape in ((JOBS, job), (PODS, pod)):
        for part, said in (("spec", "What it was."), ("status", "What became of it.")):
            named, schema = _apart(shape, kind.kind, part, said)
            found[named] = schema
    _job_detail(found[name(f"{JOBS.kind}Status")])
    for kind, shape in ((JOBS, job), (PODS, pod), (EVENTS, event)):
        found[name(kind.kind)] = _top(kind.kind, shape)
        found[name(f"{kind.kind}List")] = _list(kind)
    return dict(sorted(found.items()))


def _nullable(schema: Any) -> Any:
    """JSON Schema's ``type: [T, "null"]`` as OpenAPI 3.0 writes it: ``T`` nullable."""
    if isinstance(schema, list):
        return [_nullable(each) for each in schema]
    if not isinstance(schema, dict):
        return schema
    written = {key: _nullable(value) for key, value in schema.items()}
    kinds = written.get("type")
    if isinstance(kinds, list) and "null" in kinds:
        [written["type"]] = [each for each in kinds if each != "null"]
        written["nullable"] = True
    return written


def _parameters(kind: Kind, listed: bool) -> list[Schema]:
    if not listed:
        return []
    fields = selectors.supported(kind.plural)
    return [
        {
            "name": "fieldSelector",
            "in": "query",
            "description": f"FIELD=VALUE, comma-separated; the fields: {fields}.",
            "schema": TEXT,
        },
        {"name": "limit", "in": "query", "schema": {"type": "integer"}},
        {"name": "continue", "in": "query", "schema": TEXT},
    ]


def _operation(kind: Kind, action: str, path_names: tuple[str, ...]) -> Schema:
    answer = kind.kind if action == "get" else f"{kind.kind}List"
    parameters = [
        {"name": each, "in": "path", "required": True, "schema": TEXT} for each in path_names
    ]
    return {
        "get": {
            "description": f"{action} {kind.plural}",
            "operationId": f"{action}{kind.kind}",
            "parameters": parameters + _parameters(kind, action == "list"),
            "responses": {
                "200": {
                    "description": "OK",
                    "content": {
                        "application/json": {
                            "schema": {"$ref": f"#/components/schemas/{name(answer)}"}
                        }
                    },
                }
            },
            # kubectl explain finds a resource's kind here: the object's, on its list too.
            "x-kubernetes-action": action,
            "x-kubernetes-group-version-kind": _gvk(kind.kind)[0],
        }
    }


def _paths() -> Schema:
    namespaced = f"{PREFIX}/namespaces/{{namespace}}"
    paths: Schema = {}
    for kind in KINDS:
        paths[f"{PREFIX}/{kind.plural}"] = _operation(kind, "list", ())
        paths[f"{namespaced}/{kind.plural}"] = _operation(kind, "list", ("namespace",))
        paths[f"{namespaced}/{kind.plural}/{{name}}"] = _operation(
            kind, "get", ("namespace", "name")
        )
    return paths


@functools.cache
def served() -> tuple[bytes, str]:
    """The group's document as served (OpenAPI 3.0, JSON) and its hash: kube-openapi's,
    the SHA-512 of those bytes in upper-case hex."""
    document = {
        "openapi": "3.0.0",
        "info": {"title": "jobarchive", "version": VERSION},
        "paths": _paths(),
        "components": {"schemas": _nullable(components())},
    }
    body = json.dumps(document, sort_keys=True).encode()
    return body, hashlib.sha512(body).hexdigest().upper()


def index() -> dict[str, Any]:
    """The discovery document at ``/openapi/v3``: this server's one group version."""
    url = f"{DOCUMENT_PATH}?hash={served()[1]}"
    return {"paths": {GROUP_PATH: {"serverRelativeURL": url}}}
