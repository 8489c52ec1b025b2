"""Archived rows as Kubernetes objects, and back: pure converters between the rows the
read side answers (``queries.shapes``) and ArchivedJob, ArchivedPod and ArchivedEvent
(decision 28). Each converter carries every field of its row, so the row can be made
again from the object (the CLI's kubeconfig mode prints it as the database mode does).
"""

from collections.abc import Mapping
from typing import Any

from jobarchive.reading.kube.discovery import EVENTS, GROUP_VERSION, JOBS, PODS, Kind

Object = dict[str, Any]


def _meta(row: Mapping[str, Any], name: str, namespace: str, uid: str, created: str) -> Object:
    return {
        "name": row[name],
        "namespace": row[namespace],
        "uid": row[uid],
        "creationTimestamp": row[created],
    }


def archived_job(row: Mapping[str, Any]) -> Object:
    """An ArchivedJob of a job row (``shapes.job_json``)."""
    return {
        "apiVersion": GROUP_VERSION,
        "kind": JOBS.kind,
        "metadata": _meta(row, "name", "namespace", "job_id", "gmt_created"),
        "spec": {
            "kind": row["kind"],
            "owner": row["owner"],
            "tenant": row["tenant"],
            "region": row["deploy_region"],
            "resources": row["resources"],
        },
        "status": {
            "phase": row["status"],
            "inCluster": bool(row["is_in_etcd"]),
            "deleted": bool(row["deleted"]),
            "runningAt": row["gmt_job_running"],
            "finishedAt": row["gmt_finished"],
            "jobFinishedAt": row["gmt_job_finished"],
            "modifiedAt": row["gmt_modified"],
            "durationSeconds": row["duration_seconds"],
            "resourceVersion": row["version"],
            "archiveID": row["id"],
        },
    }


def job_row(job: Mapping[str, Any]) -> dict[str, Any]:
    """The job row an ArchivedJob was made of (``archived_job``'s inverse)."""
    meta, spec, status = job["metadata"], job["spec"], job["status"]
    return {
        "id": status["archiveID"],
        "name": meta["name"],
        "namespace": meta["namespace"],
        "job_id": meta["uid"],
        "version": status["resourceVersion"],
        "status": status["phase"],
        "kind": spec["kind"],
        "resources": spec["resources"],
        "deploy_region": spec["region"],
        "tenant": spec["tenant"],
        "owner": spec["owner"],
        "deleted": int(status["deleted"]),
        "is_in_etcd": int(status["inCluster"]),
        "gmt_created": meta["creationTimestamp"],
        "gmt_modified": status["modifiedAt"],
        "gmt_finished": status["finishedAt"],
        "gmt_job_running": status["runningAt"],
        "gmt_job_finished": status["jobFinishedAt"],
        "duration_seconds": status["durationSeconds"],
    }


def archived_pod(row: Mapping[str, Any], job_name: str | None = None) -> Object:
    """An ArchivedPod of a pod row (``shapes.pod_json``), naming its job (``job_name``,
    looked up apart: the row holds its uid)."""
    status = {
        "phase": row["status"],
        "inCluster": bool(row["is_in_etcd"]),
        "deleted": bool(row["is_del"]),
        "startedAt": row["gmt_started"],
        "finishedAt": row["gmt_finished"],
        "modifiedAt": row["gmt_modified"],
        "remark": row["remark"],
        "resourceVersion": row["version"],
        "archiveID": row["id"],
    }
    if "has_log_tail" in row:
        status["hasLogTail"] = row["has_log_tail"]
    return {
        "apiVersion": GROUP_VERSION,
        "kind": PODS.kind,
        "metadata": _meta(row, "name", "namespace", "pod_id", "gmt_created"),
        "spec": {
            "jobUID": row["job_id"],
            "jobName": job_name,
            "replicaType": row["replica_type"],
            "image": row["image"],
            "resources": row["resources"],
            "hostIP": row["host_ip"],
            "podIP": row["pod_ip"],
            "region": row["deploy_region"],
        },
        "status": status,
    }


def pod_row(pod: Mapping[str, Any]) -> dict[str, Any]:
    """The pod row an ArchivedPod was made of (``archived_pod``'s inverse)."""
    meta, spec, status = pod["metadata"], pod["spec"], pod["status"]
    row = {
        "id": status["archiveID"],
        "name": meta["name"],
        "image": spec["image"],
        "namespace": meta["namespace"],
        "pod_id": meta["uid"],
        "version": status["resourceVersion"],
        "status": status["phase"],
        "job_id": spec["jobUID"],
        "replica_type": spec["replicaType"],
        "resources": spec["resources"],
        "host_ip": spec["hostIP"],
        "pod_ip": spec["podIP"],
        "deploy_region": spec["region"],
        "is_del": int(status["deleted"]),
        "is_in_etcd": int(status["inCluster"]),
        "remark": status["remark"],
        "gmt_created": meta["creationTimestamp"],
        "gmt_modified": status["modifiedAt"],
        "gmt_started": status["startedAt"],
        "gmt_finished": status["finishedAt"],
    }
    if "hasLogTail" in status:
        row["has_log_tail"] = status["hasLogTail"]
    return row


def archived_event(row: Mapping[str, Any]) -> Object:
    """An ArchivedEvent of an Event row (``shapes.event_json``), shaped as a core/v1
    Event: its fields at the top level, its subject as ``involvedObject``."""
    return {
        "apiVersion": GROUP_VERSION,
        "kind": EVENTS.kind,
        "metadata": _meta(row, "name", "obj_namespace", "event_id", "first_timestamp"),
        "involvedObject": {
            "kind": row["kind"],
            "namespace": row["obj_namespace"],
            "name": row["obj_name"],
            "uid": row["obj_uid"],
        },
        "reason": row["reason"],
        "message": row["message"],
        "type": row["type"],
        "count": row["count"],
        "firstTimestamp": row["first_timestamp"],
        "lastTimestamp": row["last_timestamp"],
        "jobUID": row["job_id"],
        "region": row["region"],
        "archiveID": row["id"],
    }


def event_row(event: Mapping[str, Any]) -> dict[str, Any]:
    """The Event row an ArchivedEvent was made of (``archived_event``'s inverse)."""
    meta, subject = event["metadata"], event["involvedObject"]
    return {
        "id": event["archiveID"],
        "event_id": meta["uid"],
        "name": meta["name"],
        "kind": subject["kind"],
        "type": event["type"],
        "obj_namespace": subject["namespace"],
        "obj_name": subject["name"],
        "obj_uid": subject["uid"],
        "job_id": event["jobUID"],
        "reason": event["reason"],
        "message": event["message"],
        "count": event["count"],
        "region": event["region"],
        "first_timestamp": event["firstTimestamp"],
        "last_timestamp": event["lastTimestamp"],
    }


def job_with_detail(detail: Mapping[str, Any], job_names: Mapping[str, str]) -> Object:
    """An ArchivedJob as a GET answers it: a job's detail (``queries.job_detail``) with
    its replicas, a page of its pods and of its Events in its status, and the
    cursors of the next pages when there are more."""
    job = archived_job(detail)
    status = job["status"]
    status["replicas"] = detail["replicas"]
    status["pods"] = [archived_pod(pod, job_names.get(pod["job_id"])) for pod in detail["pods"]]
    status["events"] = [archived_event(event) for event in detail["events"]]
    for key, cursor in (
        ("podsContinue", "pods_next_cursor"),
        ("eventsContinue", "events_next_cursor"),
    ):
        if detail[cursor] is not None:
            status[key] = detail[cursor]
    return job


def detail_row(job: Mapping[str, Any]) -> dict[str, Any]:
    """The job's detail an ArchivedJob of a GET was made of (``job_with_detail``'s
    inverse, the pods' job names aside)."""
    status = job["status"]
    return {
        **job_row(job),
        "pods": [pod_row(pod) for pod in status["pods"]],
        "pods_next_cursor": status.get("podsContinue"),
        "replicas": status["replicas"],
        "events": [event_row(event) for event in status["events"]],
        "events_next_cursor": status.get("eventsContinue"),
    }


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
