"""The ``meta.k8s.io`` Table of archived objects, as kubectl prints it: the columns of
each resource (wide ones at priority 1), a row of cells per object with its metadata,
and the relative times kube-apiserver writes. Pure: the objects and the time are given.
"""

import dataclasses
import datetime
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from jobarchive.core.times import from_rfc3339
from jobarchive.core.visible import visible
from jobarchive.reading.accept import is_json, media_ranges
from jobarchive.reading.gpus import requested_gpus
from jobarchive.reading.kube.discovery import EVENTS, JOBS, PODS, Kind

Object = Mapping[str, Any]
TABLE_VERSIONS = ("v1", "v1beta1")
INCLUDE_OBJECT = ("Metadata", "Object", "None")


@dataclasses.dataclass(frozen=True)
class Column:
    """One column: its name as kubectl shows it (upper-cased), its type, and whether
    only ``-o wide`` shows it (priority 1)."""

    name: str
    description: str
    type: str = "string"
    format: str = ""
    wide: bool = False

    def definition(self) -> dict[str, Any]:
        """The column's ``columnDefinitions`` entry."""
        return {
            "name": self.name,
            "type": self.type,
            "format": self.format,
            "description": self.description,
            "priority": 1 if self.wide else 0,
        }


def human_duration(seconds: float) -> str:
    """A duration as kube-apiserver writes an age (apimachinery's ``HumanDuration``)."""
    whole = int(seconds)
    if whole < -1:
        return "<invalid>"
    if whole < 0:
        return "0s"
    if whole < 120:
        return f"{whole}s"
    minutes, hours, days = whole // 60, whole // 3600, whole // 86400
    if minutes < 10:
        return f"{minutes}m{whole % 60}s" if whole % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{days}d{hours % 24}h" if hours % 24 else f"{days}d"
    if hours < 24 * 365 * 2:
        return f"{days}d"
    years = days // 365
    if hours < 24 * 365 * 8:
        return f"{years}y{days % 365}d" if days % 365 else f"{years}y"
    return f"{years}y"


def _since(stamp: str | None, now: datetime.datetime) -> str | None:
    if stamp is None:
        return None
    return human_duration((now - from_rfc3339(stamp)).total_seconds())


def _text(value: Any) -> Any:
    # A cell is printed on the reader's terminal: nothing stored may act on it (decision 23).
    return visible(value) if isinstance(value, str) else value


def _gpus(count: float) -> str:
    return f"{count:g}"


def _job_cells(job: Object, now: datetime.datetime) -> list[Any]:
    meta, spec, status = job["metadata"], job["spec"], job["status"]
    took = status["durationSeconds"]
    return [
        meta["name"],
        spec["kind"],
        status["phase"],
        # Its class when it failed (decision 42): a list's and a GET's alike.
        status.get("failureClass") or "",
        _since(meta["creationTimestamp"], now),
        None if took is None else human_duration(took),
        spec["cluster"],
        spec["owner"],
        spec["tenant"],
        spec["region"],
        spec["queue"],
        _gpus(requested_gpus(spec["resources"])),
        meta["uid"],
    ]


def _pod_cells(pod: Object, now: datetime.datetime) -> list[Any]:
    meta, spec, status = pod["metadata"], pod["spec"], pod["status"]
    gpus = spec["requested"]["gpus"]
    if gpus is None:
        gpus = requested_gpus({"pod": {"replicas": 1, "resources": spec["resources"]}})
    return [
        meta["name"],
        spec["jobName"],
        spec["replicaType"],
        status["phase"],
        spec["nodeName"] or spec["hostIP"],
        _since(meta["creationTimestamp"], now),
        spec["image"],
        _gpus(gpus),
        spec["cluster"],
        meta["uid"],
    ]


def _event_cells(event: Object, now: datetime.datetime) -> list[Any]:
    subject = event["involvedObject"]
    return [
        _since(event["lastTimestamp"], now),
        event["type"],
        event["reason"],
        f"{str(subject['kind']).lower()}/{subject['name']}",
        event["message"],
        event["count"],
        _since(event["firstTimestamp"], now),
        event["cluster"],
    ]


NAME = Column("Name", "The object's name.", format="name")
AGE = Column("Age", "Since the object was created.")
CLUSTER = Column("Cluster", "The cluster it was recorded in.", wide=True)
COLUMNS: dict[str, tuple[tuple[Column, ...], Callable[[Object, datetime.datetime], list[Any]]]] = {
    JOBS.plural: (
        (
            NAME,
            Column("Kind", "The job's kind (TFJob, PyTorchJob, ...)."),
            Column("Status", "The job's status as last recorded."),
            Column("Failure", "Why it failed: its failure class, once classified."),
            AGE,
            Column("Duration", "From creation to the finish, or until now."),
            CLUSTER,
            Column("Owner", "The tenancy's user.", wide=True),
            Column("Tenant", "The tenancy's tenant.", wide=True),
            Column("Region", "The region it ran in.", wide=True),
            Column("Queue", "The queue it was submitted to (Kueue's, Volcano's).", wide=True),
            Column("GPUs", "GPUs its replicas request.", wide=True),
            Column("UID", "The job's uid: what names one incarnation.", wide=True),
        ),
        _job_cells,
    ),
    PODS.plural: (
        (
            NAME,
            Column("Job", "The pod's job."),
            Column("Replica", "The pod's replica type."),
            Column("Status", "The pod's phase as last recorded."),
            Column("Node", "The node's name (its IP for pods recorded before names were)."),
            AGE,
            Column("Image", "The main container's image.", wide=True),
            Column("GPUs", "GPUs the pod requests, every accelerator counted.", wide=True),
            CLUSTER,
            Column("UID", "The pod's uid.", wide=True),
        ),
        _pod_cells,
    ),
    EVENTS.plural: (
        (
            Column("Last Seen", "Since it last occurred."),
            Column("Type", "Normal or Warning."),
            Column("Reason", "Why it occurred."),
            Column("Object", "What it is about."),
            Column("Message", "What it says."),
            Column("Count", "How often it occurred.", type="integer", wide=True),
            Column("First Seen", "Since it first occurred.", wide=True),
            CLUSTER,
        ),
        _event_cells,
    ),
}


def wanted_format(accept: str) -> str | None:
    """What the Accept header's first range this server can answer asks: a Table
    version (``v1``, ``v1beta1``), ``json``, or None when it takes neither."""
    for media, params in media_ranges(accept or "*/*"):
        if not is_json(media):
            continue
        if not params:
            return "json"
        table = params.get("as") == "Table" and params.get("g") == "meta.k8s.io"
        if table and params.get("v") in TABLE_VERSIONS and len(params) == 3:
            return params["v"]
    return None


def table(
    kind: Kind,
    objects: Sequence[Object],
    next_cursor: str | None,
    version: str,
    include: str,
    now: datetime.datetime,
) -> dict[str, Any]:
    """The Table of ``objects`` (``include``: what each row carries of its object, one
    of ``INCLUDE_OBJECT``), with the continue of the next page."""
    columns, cells = COLUMNS[kind.plural]
    api_version = f"meta.k8s.io/{version}"
    rows = []
    for obj in objects:
        row: dict[str, Any] = {"cells": [_text(cell) for cell in cells(obj, now)]}
        if include == "Object":
            row["object"] = obj
        elif include == "Metadata":
            row["object"] = {
                "apiVersion": api_version,
                "kind": "PartialObjectMetadata",
                "metadata": obj["metadata"],
            }
        rows.append(row)
    metadata: dict[str, Any] = {"resourceVersion": ""}
    if next_cursor is not None:
        metadata["continue"] = next_cursor
    return {
        "apiVersion": api_version,
        "kind": "Table",
        "metadata": metadata,
        "columnDefinitions": [column.definition() for column in columns],
        "rows": rows,
    }
