"""The OpenAPI 3.1 document of the JSON API: its routes, their parameters (from the
parameter tables, so they cannot drift) and the shape of every answer, as JSON Schema
(``components.schemas``): what ``queries.shapes`` writes, page by page."""

from typing import Any

from jobarchive.reading import queries
from jobarchive.reading.queries import Param

Schema = dict[str, Any]

TEXT: Schema = {"type": "string"}
MAYBE_TEXT: Schema = {"type": ["string", "null"]}
NUMBER: Schema = {"type": "integer"}
MAYBE_NUMBER: Schema = {"type": ["integer", "null"]}
FLAG: Schema = {"type": "integer", "enum": [0, 1]}
TIME: Schema = {"type": "string", "format": "date-time"}
MAYBE_TIME: Schema = {"type": ["string", "null"], "format": "date-time"}
SECONDS: Schema = {"type": ["number", "null"]}
HOURS: Schema = {"type": "number"}
# A JSON column: parsed when it holds JSON, else its text as stored.
JSON_COLUMN: Schema = {"description": "The stored JSON, or its text when it is not JSON."}
CURSOR: Schema = {
    "type": ["string", "null"],
    "description": "Pass it back for the next page; null on the last.",
}


def _object(properties: dict[str, Schema], description: str) -> Schema:
    """An object with exactly these fields, each always present."""
    return {
        "type": "object",
        "description": description,
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


TYPES: dict[str, Schema] = {
    "integer": NUMBER,
    "maybe_integer": MAYBE_NUMBER,
    "text": TEXT,
    "maybe_text": MAYBE_TEXT,
    "flag": FLAG,
    "boolean": {"type": "boolean"},
    "time": TIME,
    "maybe_time": MAYBE_TIME,
    "seconds": SECONDS,
    "json": JSON_COLUMN,
}


def _fields(described: dict[str, str] | None = None, **names: str) -> dict[str, Schema]:
    """Fields by their type's name in ``TYPES`` (``text="name namespace"``), some with
    what they mean."""
    fields = {field: TYPES[kind] for kind, line in names.items() for field in line.split()}
    for field, description in (described or {}).items():
        fields[field] = {**fields[field], "description": description}
    return fields


CLUSTER = "The cluster it was recorded in; null only in a row KubeDL's own writer inserted."
# What a job's, a pod's and an Event's fields mean: this document's, and the aggregated
# API's objects' (``kube.openapi``), which carry the same values under their own names.
ROW_ID = "The archive's row id."
JOB = _fields(
    {
        "id": ROW_ID,
        "name": "The job's name.",
        "namespace": "The job's namespace.",
        "job_id": "The job's uid.",
        "version": "The resourceVersion last recorded.",
        "status": f"As last recorded: one of {', '.join(queries.JOB_STATUSES)}.",
        "kind": "The job's kind (TFJob, PyTorchJob, RayJob, Job, ...).",
        "tenant": "The tenancy's tenant (KubeDL's annotation), else empty.",
        "owner": "The tenancy's user (KubeDL's annotation), else empty.",
        "deploy_region": "The region it ran in, as KubeDL's tenancy names it.",
        "resources": "Each replica type's replicas and resources, as the job asked.",
        "deleted": "1 once its deletion was asked for.",
        "is_in_etcd": "1 while the job is in the cluster.",
        "duration_seconds": "So far, while it runs.",
        "queue": "Kueue's queue-name label, else Volcano's or the scheduling policy's queue.",
        "gmt_created": "When the job was created.",
        "gmt_modified": "When the archive last wrote the row.",
        "gmt_finished": "When it finished: succeeded, failed or stopped.",
        "gmt_job_finished": "The same finish, under KubeDL 0.4's name.",
        "gmt_job_running": "When it was first seen running; never moved later.",
        "cluster": CLUSTER,
    },
    integer="id",
    text="name namespace job_id version status kind tenant owner",
    maybe_text="deploy_region queue cluster",
    json="resources",
    flag="deleted is_in_etcd",
    time="gmt_created gmt_modified",
    maybe_time="gmt_finished gmt_job_running gmt_job_finished",
    seconds="duration_seconds",
)
POD = _fields(
    {
        "id": ROW_ID,
        "name": "The pod's name.",
        "namespace": "The pod's namespace.",
        "pod_id": "The pod's uid.",
        "version": "The resourceVersion last recorded.",
        "status": f"Its phase as last recorded, or Stopped: {', '.join(queries.POD_STATUSES)}.",
        "job_id": "The uid of the pod's job.",
        "replica_type": "The replica type (worker, ps, chief, head, ...).",
        "image": "The main container's image.",
        "resources": "The containers' resources, as the pod asked.",
        "host_ip": "The node's IP.",
        "pod_ip": "The pod's IP.",
        "deploy_region": "The region it ran in.",
        "is_del": "1 once its deletion was asked for.",
        "is_in_etcd": "1 while the pod is in the cluster.",
        "gmt_created": "When the pod was created.",
        "gmt_modified": "When the archive last wrote the row.",
        "gmt_started": "When its containers started.",
        "gmt_finished": "When it finished.",
        "remark": "How it ended: reason and exit code.",
        "gpus": "GPUs requested, every accelerator counted; null if not known.",
        "cpu_millis": "CPU requested, in millicores.",
        "memory_bytes": "Memory requested, in bytes.",
        "node_name": "The node it was bound to.",
        "cluster": CLUSTER,
    },
    integer="id",
    maybe_integer="gpus cpu_millis memory_bytes",
    text="name image namespace pod_id version status job_id replica_type",
    maybe_text="node_name host_ip pod_ip deploy_region remark cluster",
    json="resources",
    flag="is_del is_in_etcd",
    time="gmt_created gmt_modified",
    maybe_time="gmt_started gmt_finished",
)
EVENT = _fields(
    {
        "id": ROW_ID,
        "event_id": "The Event's uid.",
        "name": "The Event's name.",
        "type": "Normal or Warning.",
        "obj_namespace": "The involved object's namespace.",
        "obj_name": "The involved object's name.",
        "obj_uid": "The involved object's uid.",
        "reason": "Why it occurred, e.g. OOMKilling.",
        "message": "What it says.",
        "count": "How often it occurred.",
        "region": "The region it occurred in.",
        "first_timestamp": "When it first occurred.",
        "last_timestamp": "When it last occurred.",
        "kind": "The involved object's kind.",
        "job_id": "The uid of the job the Event is about.",
        "cluster": CLUSTER,
    },
    integer="id count",
    text="event_id name kind type obj_namespace obj_name obj_uid reason message",
    maybe_text="job_id region cluster",
    maybe_time="first_timestamp last_timestamp",
)
LOG_TAIL = _fields(
    {
        "truncated": "Earlier lines were not kept.",
        "note": "Why there is no text, when not captured.",
    },
    integer="id restart_count",
    maybe_integer="exit_code",
    text="job_id namespace pod_name pod_id container container_type",
    maybe_text="reason note log_tail",
    boolean="captured truncated",
    time="gmt_created",
    maybe_time="gmt_failed",
)
POD_COUNTS = _object(
    {name: NUMBER for name in ("active", "succeeded", "failed", "stopped")},
    "A replica type's pods by how they are.",
)


def _optional(schema: Schema, *fields: str) -> Schema:
    """``schema`` with ``fields`` no longer required."""
    return {**schema, "required": [name for name in schema["required"] if name not in fields]}


HAS_LOG_TAIL: Schema = {
    "type": "boolean",
    "description": "Whether the last lines of a failed container's log were kept.",
}
DETAIL_POD = _optional(
    _object({**POD, "has_log_tail": HAS_LOG_TAIL}, "A pod of the job."), "has_log_tail"
)
OMISSION = _object(
    {
        "field": {
            "type": "string",
            "description": "What is left out: events, pods or pods[].has_log_tail.",
        },
        "reason": {
            "type": "string",
            "description": "The grant the caller lacks, as RBAC names it: "
            "'forbidden: list jobs.jobarchive.io in namespace team-a'.",
        },
    },
    "A list left out of the answer, and why.",
)


def _ref(name: str) -> Schema:
    return {"$ref": f"#/components/schemas/{name}"}


def _page(item: str) -> Schema:
    return _object(
        {"items": {"type": "array", "items": _ref(item)}, "next_cursor": CURSOR},
        f"One keyset page of {item} objects.",
    )


SCHEMAS: dict[str, Schema] = {
    "Job": _object(JOB, "A job as recorded, under KubeDL's field names."),
    "Pod": _object(POD, "A pod as recorded."),
    "Event": _object(EVENT, "A core/v1 Event as recorded."),
    "LogTail": _object(LOG_TAIL, "The last lines of a failed container instance's log."),
    "JobPage": _page("Job"),
    "EventPage": _page("Event"),
    "LogTailPage": _page("LogTail"),
    "JobDetail": _optional(
        _object(
            {
                **JOB,
                "pods": {"type": "array", "items": DETAIL_POD},
                "pods_next_cursor": CURSOR,
                "replicas": {"type": "object", "additionalProperties": POD_COUNTS},
                "events": {"type": "array", "items": _ref("Event")},
                "events_next_cursor": CURSOR,
                "omitted": {"type": "array", "items": OMISSION},
            },
            "One job with a page of its pods and of its Events, and its pods counted by "
            "replica type. A list the caller may not read on its own is left out, with its "
            "cursor (and the pods' has_log_tail, without the grant to read the log tails), "
            "and named in omitted; omitted is absent when nothing is.",
        ),
        "pods",
        "pods_next_cursor",
        "events",
        "events_next_cursor",
        "omitted",
    ),
    "Stats": _object(
        {
            "items": {
                "type": "array",
                "items": {
                    "type": "object",
                    "description": "One value of the grouping column (named by it: "
                    "status, kind, ...) and its jobs.",
                    "properties": {
                        "jobs": NUMBER,
                        "finished": NUMBER,
                        "avg_duration_seconds": SECONDS,
                        "max_duration_seconds": SECONDS,
                    },
                    "required": [
                        "jobs",
                        "finished",
                        "avg_duration_seconds",
                        "max_duration_seconds",
                    ],
                    "additionalProperties": MAYBE_TEXT,
                    "minProperties": 5,
                    "maxProperties": 5,
                },
            }
        },
        "Counts and durations of jobs by a column.",
    ),
    "Usage": _object(
        {
            "items": {
                "type": "array",
                "items": {
                    "type": "object",
                    "description": "One group (named by its dimension: namespace, owner, "
                    "...) and, with every, its UTC period (period: YYYY-MM-DD, or YYYY-MM); "
                    "as text/csv when asked for by Accept, the reasons as reason=hours; ...",
                    "properties": {
                        **{name: NUMBER for name in ("jobs", "succeeded", "failed")},
                        **{name: HOURS for name in ("gpu_hours", "failed_gpu_hours", "cpu_hours")},
                        "queue_wait_p50_s": SECONDS,
                        "queue_wait_p95_s": SECONDS,
                        "top_failure_reasons": {
                            "type": "array",
                            "items": _object(
                                {"reason": TEXT, "gpu_hours": HOURS, "jobs": NUMBER},
                                "A failure reason and the failed jobs' GPU-hours it cost.",
                            ),
                        },
                    },
                    "additionalProperties": MAYBE_TEXT,
                },
            }
        },
        "Usage rolled up by a job's column over a window of UTC time (decision 33).",
    ),
    "Error": _object(
        {"error": _object({"status": NUMBER, "message": TEXT}, "What went wrong.")},
        "Every error's answer.",
    ),
}
ERRORS = {
    "400": "Bad input; the message says what to change.",
    "401": "No bearer token, or one Kubernetes does not accept.",
    "403": "The caller may not read the namespace, or all of them.",
    "503": "Kubernetes could not review the caller, or every read connection stayed busy "
    "(Retry-After says when to retry).",
    "504": "The query outlived the timeout; the database stopped it.",
}


def _parameter(param: Param) -> Schema:
    schema: Schema = {"type": param.type}
    if param.type == "time":
        schema = {"type": "string", "format": "date-time"}
    return {"name": param.name, "in": "query", "description": param.description, "schema": schema}


# The usage rows as CSV: the JSON's columns, in order, the reasons as one cell.
CSV_ROWS: Schema = {
    "type": "string",
    "description": "A header of the JSON items' names, then a line per item; "
    "top_failure_reasons as reason=hours; ...; every text cell quoted, text a "
    "spreadsheet would run as a formula given a leading '.",
}


def _answer(description: str, schema: str) -> Schema:
    return {"description": description, "content": {"application/json": {"schema": _ref(schema)}}}


def _operation(
    summary: str, answer: str, params: tuple[Param, ...], path: tuple[str, ...] = ()
) -> Schema:
    parameters = [
        {"name": name, "in": "path", "required": True, "schema": TEXT} for name in path
    ] + [_parameter(param) for param in params]
    responses = {"200": _answer("OK", answer)}
    responses.update({code: _answer(text, "Error") for code, text in ERRORS.items()})
    if path:
        responses["404"] = _answer("No such job.", "Error")
    return {"get": {"summary": summary, "parameters": parameters, "responses": responses}}


def document(prefix: str, description: str) -> dict[str, Any]:
    """The OpenAPI document of the API served under ``prefix``."""
    paths = {
        "/jobs": _operation(
            "Jobs, newest first, one keyset page.", "JobPage", queries.JOB_PARAMS + queries.PAGE
        ),
        "/jobs/{uid}": _operation(
            "One job, a page of its pods and of its Events, and its replicas.",
            "JobDetail",
            queries.DETAIL_PARAMS,
            ("uid",),
        ),
        "/jobs/{uid}/logs": _operation(
            "The last lines of the job's failed containers' logs, newest failure first "
            "(a job named logs in a namespace named like a uid: read it by uid).",
            "LogTailPage",
            queries.LOG_PARAMS,
            ("uid",),
        ),
        "/jobs/{namespace}/{name}": _operation(
            "Every job recorded under a name, one keyset page.",
            "JobPage",
            queries.PAGE,
            ("namespace", "name"),
        ),
        "/events": _operation(
            "Events, most recent first, one keyset page.",
            "EventPage",
            queries.EVENT_PARAMS + queries.PAGE,
        ),
        "/stats": _operation(
            "Counts and durations of jobs by a column.", "Stats", queries.STATS_PARAMS
        ),
        "/usage": _operation(
            "GPU- and CPU-hours, jobs, outcomes, queue waits and the costliest failure "
            "reasons by a job's column over a window, per UTC period when asked; CSV when "
            "Accept prefers text/csv (by q, then order).",
            "Usage",
            queries.USAGE_PARAMS,
        ),
    }
    paths["/usage"]["get"]["responses"]["200"]["content"]["text/csv"] = {"schema": CSV_ROWS}
    return {
        "openapi": "3.1.0",
        "info": {"title": "jobarchive", "version": "1", "description": description},
        "servers": [{"url": prefix}],
        "paths": paths,
        "components": {
            "schemas": SCHEMAS,
            # A Kubernetes bearer token (unless served with authentication "none").
            "securitySchemes": {"kubernetes": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"kubernetes": []}],
    }
