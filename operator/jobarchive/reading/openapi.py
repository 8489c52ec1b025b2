"""The OpenAPI 3.1 document of the JSON API: its routes, their parameters (from the
parameter tables, so they cannot drift) and the shape of every answer, as JSON Schema
(``components.schemas``): what ``queries.shapes`` writes, page by page."""

from typing import Any

from jobarchive.reading import queries, usage
from jobarchive.reading.described import (
    CURSOR,
    EVENT,
    HOURS,
    JOB,
    JSON_COLUMN,
    LOG_TAIL,
    MAYBE_NUMBER,
    MAYBE_TEXT,
    MAYBE_TIME,
    NUMBER,
    POD,
    SECONDS,
    TEXT,
    TIME,
    Schema,
)
from jobarchive.reading.queries import Param
from jobarchive.reading.wellused import EFFICIENCY, FIGURES


def _object(properties: dict[str, Schema], description: str) -> Schema:
    """An object with exactly these fields, each always present."""
    return {
        "type": "object",
        "description": description,
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


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
FAILURE_CLASS: Schema = {
    **MAYBE_TEXT,
    "description": "Its failure class (decision 42) when it failed and was classified.",
}
DETAIL_POD = _optional(
    _object(
        {**POD, "has_log_tail": HAS_LOG_TAIL, "failure_class": FAILURE_CLASS}, "A pod of the job."
    ),
    "has_log_tail",
    "failure_class",
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


FAILURE: Schema = _object(
    {
        "class": {**TEXT, "description": "The failure class (decision 42), e.g. OOMKilled."},
        "pod": {**MAYBE_TEXT, "description": "The first failing pod's name."},
        "container": {**MAYBE_TEXT, "description": "The container it was read from."},
        "exit_code": MAYBE_NUMBER,
        "signal": MAYBE_NUMBER,
        "detail": {**MAYBE_TEXT, "description": "One line: what the class was read from."},
        "derived_exit_code": {
            **MAYBE_NUMBER,
            "description": "The highest exit code of the job's pods.",
        },
    },
    "Why the job failed; absent for a job not failed, or not classified yet.",
)


MAYBE_HOURS: Schema = {"type": ["number", "null"]}
FLAG: Schema = {"type": "boolean"}
ATTEMPT: Schema = _object(
    {
        "cluster_queue": MAYBE_TEXT,
        "local_queue": MAYBE_TEXT,
        "flavors": {**JSON_COLUMN, "description": "The flavor of each resource of each pod set."},
        "quota_reserved_at": {**TIME, "description": "When Kueue reserved its quota."},
        "admitted_at": MAYBE_TIME,
        "running_at": {**MAYBE_TIME, "description": "When every replica ran (PodsReady)."},
        "ended_at": MAYBE_TIME,
        "end_reason": {
            **MAYBE_TEXT,
            "description": "How it ended: Finished, Preempted, PodsReadyTimeout, Deleted...",
        },
        "underlying_cause": MAYBE_TEXT,
        "message": MAYBE_TEXT,
        "preemptor_workload_id": MAYBE_TEXT,
        "preemptor_job_id": {**MAYBE_TEXT, "description": "The uid of the job that preempted it."},
        "requeues": MAYBE_NUMBER,
    },
    "One admission of the job by Kueue, from its quota reservation to its end (decision 43).",
)
WAIT: Schema = _object(
    {
        "reason": {**TEXT, "description": "Kueue's reason: Pending, WaitingForQuota..."},
        "message": TEXT,
        "first_seen": TIME,
        "last_seen": TIME,
        "held_s": {"type": "number", "description": "How long it held, its stretches summed."},
    },
    "Why Kueue kept the job waiting: one reason and message, however often it held.",
)
# A job's figures from its attempts (``core.attempts``): null where Kueue never admitted it.
KUEUE_FIGURES: dict[str, Schema] = {
    "preemptions": {**MAYBE_NUMBER, "description": "Its attempts a preemption ended."},
    "preempted_gpu_hours": {
        **MAYBE_HOURS,
        "description": "Its pods' GPU-hours in attempts a preemption ended.",
    },
    "evicted_gpu_hours": {
        **MAYBE_HOURS,
        "description": "Its pods' GPU-hours in attempts another eviction ended.",
    },
    "quota_wait_s": {**SECONDS, "description": "From its creation to its first reservation."},
    "start_wait_s": {**SECONDS, "description": "From each admission to every replica running."},
    "requeue_wait_s": {**SECONDS, "description": "From each eviction to the next reservation."},
}
KUEUE: dict[str, Schema] = {
    "attempts": {"type": "array", "items": ATTEMPT, "description": "Oldest first."},
    "attempts_truncated": {**FLAG, "description": "Whether it has more attempts than shown."},
    "waits": {"type": "array", "items": WAIT, "description": "First seen first."},
    "waits_truncated": {**FLAG, "description": "Whether more waits were left unread."},
    **KUEUE_FIGURES,
}


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
                **KUEUE,
                "failure": FAILURE,
                "efficiency": EFFICIENCY,
                "omitted": {"type": "array", "items": OMISSION},
            },
            "One job with a page of its pods and of its Events, its pods counted by "
            "replica type, and Kueue's attempts and waits of it, with their figures. A "
            "list the caller may not read on its own is left out, with its "
            "cursor (and the pods' has_log_tail, without the grant to read the log tails), "
            "and named in omitted; omitted is absent when nothing is.",
        ),
        "pods",
        "pods_next_cursor",
        "events",
        "events_next_cursor",
        "failure",
        "efficiency",
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
                    "...) and, with every, its UTC period (period: YYYY-MM-DD, or YYYY-MM); by "
                    "clusterqueue, the queue's allocated, quota, borrowed and preempted "
                    "GPU-hours, utilization and waits (null where unknown), and no efficiency; "
                    "the efficiency null where no pod was measured; "
                    "as text/csv when asked for by Accept, the reasons as reason=hours; ...",
                    "properties": {
                        **{name: NUMBER for name in ("jobs", "succeeded", "failed")},
                        **{name: HOURS for name in ("gpu_hours", "failed_gpu_hours", "cpu_hours")},
                        "queue_wait_p50_s": SECONDS,
                        "queue_wait_p95_s": SECONDS,
                        # By clusterqueue (decision 44): none of the above but the waits.
                        **{
                            name: SECONDS
                            for name in usage.QUEUE_FIGURES
                            if name not in ("queue_wait_p50_s", "queue_wait_p95_s")
                        },
                        # How well they were used (decision 47), as a job's figures.
                        **{name: FIGURES[name] for name in usage.EFFICIENCY[:-1]},
                        usage.UNKNOWN_JOBS: {
                            "type": "integer",
                            "description": "The row's jobs no pod of which was measured.",
                        },
                        "top_failure_reasons": {
                            "type": "array",
                            "items": _object(
                                {"reason": TEXT, "gpu_hours": HOURS, "jobs": NUMBER},
                                "A failure class (Unclassified until classified) and the "
                                "failed jobs' GPU-hours it cost; none by failure.",
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
    "429": "The caller's access reviews are over its budget (Retry-After says when to retry).",
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
