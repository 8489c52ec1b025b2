"""The read side's rows as JSON Schema: each field's type and what it means, written
once for both documents that describe them, the JSON API's (``reading.openapi``) and
the aggregated API's objects' (``reading.kube.openapi``)."""

from typing import Any

from jobarchive.reading.params import JOB_STATUSES, POD_STATUSES

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
# The aggregated API's objects carry the same values under their own names.
ROW_ID = "The archive's row id."
JOB = _fields(
    {
        "id": ROW_ID,
        "name": "The job's name.",
        "namespace": "The job's namespace.",
        "job_id": "The job's uid.",
        "version": "The resourceVersion last recorded.",
        "status": f"As last recorded: one of {', '.join(JOB_STATUSES)}.",
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
        "status": f"Its phase as last recorded, or Stopped: {', '.join(POD_STATUSES)}.",
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
        "restarts": "Its containers' restarts added up; null if not recorded.",
        "gmt_restarted": "When a container of it last ended to be restarted.",
    },
    integer="id",
    maybe_integer="gpus cpu_millis memory_bytes restarts",
    text="name image namespace pod_id version status job_id replica_type",
    maybe_text="node_name host_ip pod_ip deploy_region remark cluster",
    json="resources",
    flag="is_del is_in_etcd",
    time="gmt_created gmt_modified",
    maybe_time="gmt_started gmt_finished gmt_restarted",
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
