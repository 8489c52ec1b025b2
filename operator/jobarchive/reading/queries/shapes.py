"""Rows as the read side answers them: plain dicts under the seed's JSON field names,
timestamps as RFC 3339 strings in UTC, stored text cut to its bound with the mark."""

import datetime
from typing import Any

from jobarchive.core.cutting import clip, clipped_json
from jobarchive.core.rows import (
    IMAGE_LENGTH,
    MESSAGE_LENGTH,
    REMARK_LENGTH,
    RESOURCES_LENGTH,
    SHORT_TEXT_LENGTH,
)
from jobarchive.core.times import rfc3339, seconds
from jobarchive.storage.models import (
    LOG_TAIL_LENGTH,
    NOTE_LENGTH,
    Event,
    Job,
    LogTail,
    Pod,
)


def job_json(job: Job, now: datetime.datetime | None = None) -> dict[str, Any]:
    """A job row under the seed's field names, with its duration so far or in total."""
    end = job.gmt_finished or (now if job.is_in_etcd else None)
    return {
        "id": job.id,
        "name": job.name,
        "namespace": job.namespace,
        "job_id": job.job_id,
        "version": job.version,
        "status": job.status,
        "kind": job.kind,
        "resources": clipped_json(job.resources, RESOURCES_LENGTH),
        "deploy_region": job.deploy_region,
        "cluster": job.cluster,
        "tenant": job.tenant,
        "owner": job.owner,
        "queue": job.queue,
        "deleted": int(job.deleted),
        "is_in_etcd": int(job.is_in_etcd),
        "gmt_created": rfc3339(job.gmt_created),
        "gmt_modified": rfc3339(job.gmt_modified),
        "gmt_finished": rfc3339(job.gmt_finished),
        "gmt_job_running": rfc3339(job.gmt_job_running),
        "gmt_job_finished": rfc3339(job.gmt_job_finished),
        "duration_seconds": seconds(job.gmt_created, end),
    }


def pod_json(pod: Pod) -> dict[str, Any]:
    """A pod row under the seed's field names."""
    return {
        "id": pod.id,
        "name": pod.name,
        "image": clip(pod.image, IMAGE_LENGTH),
        "namespace": pod.namespace,
        "pod_id": pod.pod_id,
        "version": pod.version,
        "status": pod.status,
        "job_id": pod.job_id,
        "replica_type": pod.replica_type,
        "resources": clipped_json(pod.resources, RESOURCES_LENGTH),
        "gpus": pod.gpus,
        "cpu_millis": pod.cpu_millis,
        "memory_bytes": pod.memory_bytes,
        "node_name": pod.node_name,
        "host_ip": pod.host_ip,
        "pod_ip": pod.pod_ip,
        "deploy_region": pod.deploy_region,
        "cluster": pod.cluster,
        "is_del": int(pod.deleted),
        "is_in_etcd": int(pod.is_in_etcd),
        "remark": clip(pod.remark, REMARK_LENGTH),
        "gmt_created": rfc3339(pod.gmt_created),
        "gmt_modified": rfc3339(pod.gmt_modified),
        "gmt_started": rfc3339(pod.gmt_started),
        "gmt_finished": rfc3339(pod.gmt_finished),
        "restarts": pod.restarts,
        "gmt_restarted": rfc3339(pod.gmt_restarted),
    }


def event_json(event: Event) -> dict[str, Any]:
    """An Event row under the seed's field names."""
    return {
        "id": event.id,
        "event_id": event.event_id,
        "name": event.name,
        "kind": event.kind,
        "type": event.type,
        "obj_namespace": event.obj_namespace,
        "obj_name": event.obj_name,
        "obj_uid": event.obj_uid,
        "job_id": event.job_id,
        "reason": event.reason,
        "message": clip(event.message, MESSAGE_LENGTH),
        "count": event.count,
        "region": event.region,
        "cluster": event.cluster,
        "first_timestamp": rfc3339(event.first_timestamp),
        "last_timestamp": rfc3339(event.last_timestamp),
    }


def log_tail_json(tail: LogTail) -> dict[str, Any]:
    """A stored log tail: which container instance, how it ended, and its text (or,
    ``captured`` false, the ``note`` saying why there is none)."""
    return {
        "id": tail.id,
        "job_id": tail.job_id,
        "namespace": tail.namespace,
        "pod_name": tail.pod_name,
        "pod_id": tail.pod_id,
        "container": tail.container,
        "container_type": tail.container_type,
        "restart_count": tail.restart_count,
        "exit_code": tail.exit_code,
        "reason": clip(tail.reason, SHORT_TEXT_LENGTH),
        "gmt_failed": rfc3339(tail.gmt_failed),
        "captured": tail.captured,
        "truncated": tail.truncated,
        "note": clip(tail.note, NOTE_LENGTH),
        "log_tail": clip(tail.log_tail, LOG_TAIL_LENGTH),
        "gmt_created": rfc3339(tail.gmt_created),
    }
