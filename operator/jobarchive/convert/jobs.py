"""Training job (Kubeflow v1 shape) -> ``job_info`` row.

Status is the type of the last condition whose status is "True" (the
controllers append conditions in order and flip earlier ones to "False"),
``Created`` when none is. Tenancy comes from KubeDL's ``kubedl.io/tenancy``
annotation, a JSON object ``{"tenant", "user", "region"}``; an unreadable one is
ignored rather than costing the job its row.
"""

import datetime
import json
from collections.abc import Mapping
from typing import Any

from jobarchive import models
from jobarchive.convert.common import (
    TERMINAL_STATUSES,
    InvalidObject,
    clip,
    identity,
    integer,
    mapping,
    sequence,
    text,
    timestamp,
    uid,
)
from jobarchive.convert.resources import effective_resources, resources_json
from jobarchive.kinds import JobKind

TENANCY_ANNOTATION = "kubedl.io/tenancy"
CREATED = "Created"


def job_row(obj: Mapping[str, Any], kind: JobKind, region: str | None) -> dict[str, Any]:
    """The ``job_info`` row of a job object of the given kind."""
    meta = mapping(obj.get("metadata"))
    status = mapping(obj.get("status"))
    conditions = [mapping(c) for c in sequence(status.get("conditions"))]
    tenancy = _tenancy(mapping(meta.get("annotations")).get(TENANCY_ANNOTATION))
    current = job_status(conditions)
    row = identity(obj)
    row.update(
        job_id=uid(obj),
        kind=kind.kind,
        status=clip(current, models.STATUS_LENGTH),
        resources=resources_json(replica_resources(obj, kind)),
        deploy_region=clip(region or tenancy.get("region"), models.SHORT_TEXT_LENGTH),
        tenant=clip(tenancy.get("tenant"), models.SHORT_TEXT_LENGTH),
        owner=clip(tenancy.get("user"), models.SHORT_TEXT_LENGTH),
        deleted=meta.get("deletionTimestamp") is not None,
        is_in_etcd=True,
        gmt_finished=_finished(status, conditions, current),
    )
    return row


def job_status(conditions: list[Mapping[str, Any]]) -> str:
    """The type of the last condition whose status is "True"; ``Created`` if none."""
    for condition in reversed(conditions):
        kind = text(condition.get("type"))
        if kind and condition.get("status") == "True":
            return kind
    return CREATED


def replica_resources(obj: Mapping[str, Any], kind: JobKind) -> dict[str, Any]:
    """``{"<ReplicaType>": {"replicas": N, "resources": {...}}}`` from the replica specs."""
    specs = mapping(mapping(obj.get("spec")).get(kind.replica_specs_key))
    result: dict[str, Any] = {}
    for replica_type, raw_spec in specs.items():
        spec = mapping(raw_spec)
        replicas = spec.get("replicas")
        if replicas is None:
            replicas = 1
        elif integer(replicas) is None:
            raise InvalidObject(
                f"spec.{kind.replica_specs_key}.{replica_type}.replicas "
                f"is not an integer: {replicas!r}"
            )
        pod_spec = mapping(mapping(spec.get("template")).get("spec"))
        result[replica_type] = {"replicas": replicas, "resources": effective_resources(pod_spec)}
    return result


def _finished(
    status: Mapping[str, Any], conditions: list[Mapping[str, Any]], current: str
) -> datetime.datetime | None:
    """completionTime, else when the terminal condition became true."""
    completion = timestamp(status.get("completionTime"))
    if completion is not None or current not in TERMINAL_STATUSES:
        return completion
    for condition in reversed(conditions):
        if condition.get("type") == current and condition.get("status") == "True":
            return timestamp(condition.get("lastTransitionTime"))
    return None


def _tenancy(raw: object) -> dict[str, str]:
    value = text(raw)
    if not value:
        return {}
    try:
        parsed = json.loads(value)
    except ValueError:
        return {}
    if not isinstance(parsed, dict):
        return {}
    return {key: item for key in ("tenant", "user", "region") if (item := text(parsed.get(key)))}
