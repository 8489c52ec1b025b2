"""Archived rows as Kubernetes objects, and back: pure converters between the rows the
read side answers (``queries.shapes``) and ArchivedJob, ArchivedPod and ArchivedEvent
(decision 28). Each converter carries every field of its row, so the row can be made
again from the object (the CLI's kubeconfig mode prints it as the database mode does).
A list makes its objects of the rows its query reads (``listed_job``, ...), in one step.
"""

import dataclasses
import datetime
from collections.abc import Mapping
from typing import Any

from jobarchive.core.cutting import clip, clipped_json
from jobarchive.core.rows import IMAGE_LENGTH, MESSAGE_LENGTH, REMARK_LENGTH, RESOURCES_LENGTH
from jobarchive.core.times import rfc3339, seconds
from jobarchive.reading.kube.admitted import kueue_detail, kueue_status, renamed
from jobarchive.reading.kube.discovery import EVENTS, GROUP_VERSION, JOBS, PODS, Kind
from jobarchive.reading.kube.used import efficiency_detail, efficiency_status

Object = dict[str, Any]


@dataclasses.dataclass(frozen=True)
class Field:
    """Where a row's column stands in its object (a path of keys), whether it is a flag
    (0 or 1 in the row, a boolean in the object), and whether a row may lack it."""

    path: tuple[str, ...]
    column: str
    flag: bool = False
    optional: bool = False


def _fields(*entries: tuple[str, str] | Field) -> tuple[Field, ...]:
    return tuple(
        entry if isinstance(entry, Field) else Field(tuple(entry[0].split(".")), entry[1])
        for entry in entries
    )


def _identity(namespace: str, uid: str, created: str) -> tuple[Field, ...]:
    """The metadata of an object: its name, namespace, uid and creation."""
    return _fields(
        ("metadata.name", "name"),
        ("metadata.namespace", namespace),
        ("metadata.uid", uid),
        ("metadata.creationTimestamp", created),
    )


def _recorded(deleted: str) -> tuple[Field, ...]:
    """What the archive knows of a job's or a pod's row: in the cluster still, deletion
    asked for, last written, at which resourceVersion, under which row id."""
    return (
        Field(("status", "inCluster"), "is_in_etcd", flag=True),
        Field(("status", "deleted"), deleted, flag=True),
        *_fields(
            ("status.modifiedAt", "gmt_modified"),
            ("status.resourceVersion", "version"),
            ("status.archiveID", "id"),
        ),
    )


JOB_FIELDS = (
    *_identity("namespace", "job_id", "gmt_created"),
    *_fields(
        ("spec.kind", "kind"),
        ("spec.owner", "owner"),
        ("spec.tenant", "tenant"),
        ("spec.region", "deploy_region"),
        ("spec.cluster", "cluster"),
        ("spec.queue", "queue"),
        ("spec.resources", "resources"),
        ("status.phase", "status"),
        ("status.runningAt", "gmt_job_running"),
        ("status.finishedAt", "gmt_finished"),
        ("status.jobFinishedAt", "gmt_job_finished"),
        ("status.durationSeconds", "duration_seconds"),
    ),
    *_recorded("deleted"),
)
POD_FIELDS = (
    *_identity("namespace", "pod_id", "gmt_created"),
    *_fields(
        ("spec.jobUID", "job_id"),
        ("spec.replicaType", "replica_type"),
        ("spec.image", "image"),
        ("spec.resources", "resources"),
        ("spec.requested.gpus", "gpus"),
        ("spec.requested.cpuMillis", "cpu_millis"),
        ("spec.requested.memoryBytes", "memory_bytes"),
        ("spec.nodeName", "node_name"),
        ("spec.hostIP", "host_ip"),
        ("spec.podIP", "pod_ip"),
        ("spec.region", "deploy_region"),
        ("spec.cluster", "cluster"),
        ("status.phase", "status"),
        ("status.startedAt", "gmt_started"),
        ("status.finishedAt", "gmt_finished"),
        ("status.remark", "remark"),
        ("status.restarts", "restarts"),
        ("status.restartedAt", "gmt_restarted"),
    ),
    *_recorded("is_del"),
    # Only in a job's detail, whose pods say whether a log tail was captured and, of
    # a failed pod, its failure class (decision 42).
    Field(("status", "hasLogTail"), "has_log_tail", optional=True),
    Field(("status", "failureClass"), "failure_class", optional=True),
)
# A core/v1 Event's fields stand at the top level; its subject is ``involvedObject``.
EVENT_FIELDS = (
    *_identity("obj_namespace", "event_id", "first_timestamp"),
    *_fields(
        ("involvedObject.kind", "kind"),
        ("involvedObject.name", "obj_name"),
        ("involvedObject.uid", "obj_uid"),
        ("reason", "reason"),
        ("message", "message"),
        ("type", "type"),
        ("count", "count"),
        ("lastTimestamp", "last_timestamp"),
        ("jobUID", "job_id"),
        ("region", "region"),
        ("cluster", "cluster"),
        ("archiveID", "id"),
    ),
)


def _object(kind: Kind, fields: tuple[Field, ...], row: Mapping[str, Any]) -> Object:
    made: Object = {"apiVersion": GROUP_VERSION, "kind": kind.kind}
    for field in fields:
        if field.optional and field.column not in row:
            continue
        value = row[field.column]
        *parents, last = field.path
        place = made
        for key in parents:
            place = place.setdefault(key, {})
        place[last] = bool(value) if field.flag else value
    return made


def _row(fields: tuple[Field, ...], obj: Mapping[str, Any]) -> dict[str, Any]:
    row: dict[str, Any] = {}
    for field in fields:
        place: Any = obj
        for key in field.path[:-1]:
            place = place[key]
        if field.optional and field.path[-1] not in place:
            continue
        value = place[field.path[-1]]
        row[field.column] = int(value) if field.flag else value
    return row


def archived_job(row: Mapping[str, Any]) -> Object:
    """An ArchivedJob of a job row (``shapes.job_json``)."""
    return _object(JOBS, JOB_FIELDS, row)


def listed_job(job: Any, now: datetime.datetime | None = None) -> Object:
    """An ArchivedJob of a job as a list reads it (a ``storage.models.Job``, read by
    attribute: this module imports no database), the one ``archived_job`` makes of its
    row (a test holds them to it); its duration counted to ``now`` while in the cluster."""
    end = job.gmt_finished or (now if job.is_in_etcd else None)
    return {
        "apiVersion": GROUP_VERSION,
        "kind": JOBS.kind,
        "metadata": {
            "name": job.name,
            "namespace": job.namespace,
            "uid": job.job_id,
            "creationTimestamp": rfc3339(job.gmt_created),
        },
        "spec": {
            "kind": job.kind,
            "owner": job.owner,
            "tenant": job.tenant,
            "region": job.deploy_region,
            "cluster": job.cluster,
            "queue": job.queue,
            "resources": clipped_json(job.resources, RESOURCES_LENGTH),
        },
        "status": {
            "phase": job.status,
            "runningAt": rfc3339(job.gmt_job_running),
            "finishedAt": rfc3339(job.gmt_finished),
            "jobFinishedAt": rfc3339(job.gmt_job_finished),
            "durationSeconds": seconds(job.gmt_created, end),
            "inCluster": bool(job.is_in_etcd),
            "deleted": bool(job.deleted),
            "modifiedAt": rfc3339(job.gmt_modified),
            "resourceVersion": job.version,
            "archiveID": job.id,
        },
    }


def listed_pod(pod: Any) -> Object:
    """An ArchivedPod of a pod as a list reads it (a ``storage.models.Pod``), as
    ``archived_pod`` makes it of its row; its job's name is filled in by the list."""
    return {
        "apiVersion": GROUP_VERSION,
        "kind": PODS.kind,
        "metadata": {
            "name": pod.name,
            "namespace": pod.namespace,
            "uid": pod.pod_id,
            "creationTimestamp": rfc3339(pod.gmt_created),
        },
        "spec": {
            "jobUID": pod.job_id,
            "replicaType": pod.replica_type,
            "image": clip(pod.image, IMAGE_LENGTH),
            "resources": clipped_json(pod.resources, RESOURCES_LENGTH),
            "requested": {
                "gpus": pod.gpus,
                "cpuMillis": pod.cpu_millis,
                "memoryBytes": pod.memory_bytes,
            },
            "nodeName": pod.node_name,
            "hostIP": pod.host_ip,
            "podIP": pod.pod_ip,
            "region": pod.deploy_region,
            "cluster": pod.cluster,
            "jobName": None,
        },
        "status": {
            "phase": pod.status,
            "startedAt": rfc3339(pod.gmt_started),
            "finishedAt": rfc3339(pod.gmt_finished),
            "remark": clip(pod.remark, REMARK_LENGTH),
            "restarts": pod.restarts,
            "restartedAt": rfc3339(pod.gmt_restarted),
            "inCluster": bool(pod.is_in_etcd),
            "deleted": bool(pod.deleted),
            "modifiedAt": rfc3339(pod.gmt_modified),
            "resourceVersion": pod.version,
            "archiveID": pod.id,
        },
    }


def listed_event(event: Any) -> Object:
    """An ArchivedEvent of an Event as a list reads it (a ``storage.models.Event``), as
    ``archived_event`` makes it of its row."""
    return {
        "apiVersion": GROUP_VERSION,
        "kind": EVENTS.kind,
        "metadata": {
            "name": event.name,
            "namespace": event.obj_namespace,
            "uid": event.event_id,
            "creationTimestamp": rfc3339(event.first_timestamp),
        },
        "involvedObject": {
            "kind": event.kind,
            "name": event.obj_name,
            "uid": event.obj_uid,
            "namespace": event.obj_namespace,
        },
        "reason": event.reason,
        "message": clip(event.message, MESSAGE_LENGTH),
        "type": event.type,
        "count": event.count,
        "lastTimestamp": rfc3339(event.last_timestamp),
        "jobUID": event.job_id,
        "region": event.region,
        "cluster": event.cluster,
        "archiveID": event.id,
        "firstTimestamp": rfc3339(event.first_timestamp),
    }


def job_row(job: Mapping[str, Any]) -> dict[str, Any]:
    """The job row an ArchivedJob was made of (``archived_job``'s inverse)."""
    return _row(JOB_FIELDS, job)


def archived_pod(row: Mapping[str, Any], job_name: str | None = None) -> Object:
    """An ArchivedPod of a pod row (``shapes.pod_json``), naming its job (``job_name``,
    looked up apart: the row holds its uid)."""
    pod = _object(PODS, POD_FIELDS, row)
    pod["spec"]["jobName"] = job_name
    return pod


def pod_row(pod: Mapping[str, Any]) -> dict[str, Any]:
    """The pod row an ArchivedPod was made of (``archived_pod``'s inverse)."""
    return _row(POD_FIELDS, pod)


def archived_event(row: Mapping[str, Any]) -> Object:
    """An ArchivedEvent of an Event row (``shapes.event_json``), shaped as a core/v1
    Event; its namespace is its subject's (decision 17)."""
    event = _object(EVENTS, EVENT_FIELDS, row)
    event["involvedObject"]["namespace"] = row["obj_namespace"]
    event["firstTimestamp"] = row["first_timestamp"]
    return event


def event_row(event: Mapping[str, Any]) -> dict[str, Any]:
    """The Event row an ArchivedEvent was made of (``archived_event``'s inverse)."""
    return _row(EVENT_FIELDS, event)


# Where each field a job's detail may leave out (``reading.embedded``) stands in its
# ArchivedJob: ``status.omitted`` names them so.
OMITTED_FIELDS = {
    "events": "status.events",
    "pods": "status.pods",
    "pods[].has_log_tail": "status.pods[].status.hasLogTail",
}


# A job's failure (decision 42): the JSON API's fields, as Kubernetes spells them.
FAILURE_FIELDS = {"exit_code": "exitCode", "derived_exit_code": "derivedExitCode"}
FAILURE_NAMES = {shown: field for field, shown in FAILURE_FIELDS.items()}


def job_with_detail(detail: Mapping[str, Any], job_names: Mapping[str, str]) -> Object:
    """An ArchivedJob as a GET answers it: a job's detail (``queries.job_detail``) with
    its replicas, a page of its pods and of its Events in its status, and the
    cursors of the next pages when there are more, its failure and its class, its
    Kueue attempts, waits and figures (``admitted``); a list the detail left out is
    absent, and named in ``status.omitted``."""
    job = archived_job(detail)
    status = job["status"]
    status["replicas"] = detail["replicas"]
    if "pods" in detail:
        status["pods"] = [archived_pod(pod, job_names.get(pod["job_id"])) for pod in detail["pods"]]
    if "events" in detail:
        status["events"] = [archived_event(event) for event in detail["events"]]
    for key, cursor in (
        ("podsContinue", "pods_next_cursor"),
        ("eventsContinue", "events_next_cursor"),
    ):
        if detail.get(cursor) is not None:
            status[key] = detail[cursor]
    failure = detail.get("failure")
    status["failureClass"] = None if failure is None else failure["class"]
    if failure is not None:
        status["failure"] = renamed(failure, FAILURE_FIELDS)
    status.update(kueue_status(detail))
    if "efficiency" in detail:
        status["efficiency"] = efficiency_status(detail["efficiency"])
    if "omitted" in detail:
        status["omitted"] = _renamed(detail["omitted"], OMITTED_FIELDS)
    return job


def detail_row(job: Mapping[str, Any]) -> dict[str, Any]:
    """The job's detail an ArchivedJob of a GET was made of (``job_with_detail``'s
    inverse, the pods' job names aside)."""
    status = job["status"]
    row = job_row(job)
    if "pods" in status:
        row["pods"] = [pod_row(pod) for pod in status["pods"]]
        row["pods_next_cursor"] = status.get("podsContinue")
    row["replicas"] = status["replicas"]
    if "events" in status:
        row["events"] = [event_row(event) for event in status["events"]]
        row["events_next_cursor"] = status.get("eventsContinue")
    if "failure" in status:
        row["failure"] = renamed(status["failure"], FAILURE_NAMES)
    row.update(kueue_detail(status))
    if "efficiency" in status:
        row["efficiency"] = efficiency_detail(status["efficiency"])
    if "omitted" in status:
        fields = {shown: field for field, shown in OMITTED_FIELDS.items()}
        row["omitted"] = _renamed(status["omitted"], fields)
    return row


def _renamed(omitted: list[dict[str, str]], names: Mapping[str, str]) -> list[dict[str, str]]:
    """``omitted``'s fields under their other names (one not known kept as it is)."""
    return [{**each, "field": names.get(each["field"], each["field"])} for each in omitted]


def list_of(kind: Kind, items: list[Object], next_cursor: str | None) -> Object:
    """A list object (``ArchivedJobList``, ...) with the continue of the next page."""
    metadata: dict[str, Any] = {"resourceVersion": ""}
    if next_cursor is not None:
        metadata["continue"] = next_cursor
    return {
        "apiVersion": GROUP_VERSION,
        "kind": f"{kind.kind}List",
        "metadata": metadata,
        "items": items,
    }
