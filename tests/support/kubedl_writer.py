"""KubeDL's writer, statement for statement: pkg/storage/backends/objects/mysql/mysql.go
(SaveJob, updateJob, StopJob, DeleteJob, SavePod, updatePod, StopPod) and the
converters it calls (pkg/storage/dmo/converters/{job,pod}.go), at kubedl-io/kubedl
b93a2b4, with gorm v1.9.12's SQL.

The lookups and INSERTs are gorm's text verbatim; an UPDATE is assembled as gorm
assembles it, because its SET list depends on which fields are blank: only the
non-blank fields of the update struct, plus ``gmt_modified`` from the BeforeUpdate
hook, sorted by column name; its WHERE from the non-blank fields of the condition
struct, in struct order. Stored rows are read through ``kubedl.scan``, so a row
KubeDL could not read fails here as it would fail KubeDL.
"""

import datetime
import json
from collections.abc import Mapping
from typing import Any

from testbed.objects import Body
from tests.support import kubedl
from tests.support.kubedl import DMO_JOB, DMO_POD, GO_ZERO_TIME, Dmo

# SaveJob: b.db.Where(&dmo.Job{JobID, Namespace, Name[, DeployRegion]}).First(&dmoJob).
SAVE_JOB_LOOKUP = (
    "SELECT * FROM `job_info` WHERE (`job_info`.`name` = ?) AND (`job_info`.`namespace` = ?) "
    "AND (`job_info`.`job_id` = ?) ORDER BY `job_info`.`id` ASC LIMIT 1"
)
SAVE_JOB_LOOKUP_IN_REGION = (
    "SELECT * FROM `job_info` WHERE (`job_info`.`name` = ?) AND (`job_info`.`namespace` = ?) "
    "AND (`job_info`.`job_id` = ?) AND (`job_info`.`deploy_region` = ?) "
    "ORDER BY `job_info`.`id` ASC LIMIT 1"
)
# createNewJob: b.db.Create(newJob), every field but the blank auto-increment id.
INSERT_JOB = (
    "INSERT INTO `job_info` (`name`,`namespace`,`job_id`,`version`,`status`,`kind`,"
    "`resources`,`deploy_region`,`tenant`,`owner`,`deleted`,`is_in_etcd`,`remark`,"
    "`gmt_created`,`gmt_modified`,`gmt_job_running`,`gmt_job_finished`) "
    "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
)
# GetJob("", "", jobID, "", region), as StopJob and DeleteJob run it for the
# controllers' delete flow, whose namespace, name and kind are empty.
GET_JOB_BY_ID = (
    "SELECT * FROM `job_info` WHERE (`job_info`.`job_id` = ?) ORDER BY `job_info`.`id` ASC LIMIT 1"
)
GET_JOB_BY_ID_IN_REGION = (
    "SELECT * FROM `job_info` WHERE (`job_info`.`job_id` = ?) "
    "AND (`job_info`.`deploy_region` = ?) ORDER BY `job_info`.`id` ASC LIMIT 1"
)
# SavePod: b.db.Where(&dmo.Pod{PodID, Namespace, Name[, DeployRegion]}).First(&dmoPod).
SAVE_POD_LOOKUP = (
    "SELECT * FROM `replica_info` WHERE (`replica_info`.`name` = ?) "
    "AND (`replica_info`.`namespace` = ?) AND (`replica_info`.`pod_id` = ?) "
    "ORDER BY `replica_info`.`id` ASC LIMIT 1"
)
SAVE_POD_LOOKUP_IN_REGION = (
    "SELECT * FROM `replica_info` WHERE (`replica_info`.`name` = ?) "
    "AND (`replica_info`.`namespace` = ?) AND (`replica_info`.`pod_id` = ?) "
    "AND (`replica_info`.`deploy_region` = ?) ORDER BY `replica_info`.`id` ASC LIMIT 1"
)
# createNewPod: b.db.Create(dmoPod).
INSERT_POD = (
    "INSERT INTO `replica_info` (`name`,`namespace`,`pod_id`,`version`,`status`,`image`,"
    "`job_id`,`replica_type`,`resources`,`host_ip`,`pod_ip`,`deploy_region`,`deleted`,"
    "`is_in_etcd`,`remark`,`gmt_created`,`gmt_modified`,`gmt_started`,`gmt_finished`) "
    "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
)
# StopPod: b.db.Where(&dmo.Pod{PodID, Namespace, Name}).First(&oldPod); never a region.
STOP_POD_LOOKUP = SAVE_POD_LOOKUP

TENANCY = "kubedl.io/tenancy"
TENSORBOARD = "kubedl.io/tensorboard-config"
# utils.JobStopped and utils.PodStopped.
STOPPED = "Stopped"


class RecordNotFound(Exception):
    """gorm.ErrRecordNotFound: First found no row; KubeDL returns it to its caller."""


class KubeDLError(Exception):
    """An error KubeDL's backend returns (and its controller requeues on)."""


def go_now() -> datetime.datetime:
    """time.Now() in KubeDL's Local zone, UTC in its images."""
    return datetime.datetime.now(datetime.UTC).replace(tzinfo=None)


def k8s_time(value: object) -> datetime.datetime | None:
    """A metav1.Time as KubeDL holds it (UTC, naive here); None when absent."""
    if not isinstance(value, str) or not value:
        return None
    return datetime.datetime.fromisoformat(value.replace("Z", "+00:00")).replace(tzinfo=None)


def parse_int64(version: str) -> int:
    """strconv.ParseInt(version, 10, 64); KubeDLError as updateJob returns it."""
    value = kubedl.go_parse_int64(version)
    if value is None:
        raise KubeDLError(f'strconv.ParseInt: parsing "{version}": invalid syntax')
    return value


def _resources(pod_spec: Mapping[str, Any]) -> dict[str, Any]:
    """The main container's requests and limits, in corev1.ResourceRequirements' JSON
    field order. KubeDL sums the containers and maxes the init containers; the sums
    change nothing that these tests read, the column's shape is what matters."""
    containers = pod_spec.get("containers") or [{}]
    resources = containers[0].get("resources") or {}
    return {
        key: dict(sorted(resources[key].items()))
        for key in ("limits", "requests")
        if key in resources
    }


def _json(value: Any) -> str:
    """json.Marshal's compact form. Go sorts map keys but keeps struct fields in
    declaration order, so the callers sort the maps and keep the structs' order."""
    return json.dumps(value, separators=(",", ":"))


def dmo_job(job: Body, region: str) -> dict[str, Any]:
    """converters.ConvertJobToDMOJob of a KubeDL job: the dmo.Job columns but id and
    gmt_modified (which the hook stamps)."""
    meta = job["metadata"]
    status = job.get("status") or {}
    specs_key = next(key for key in job["spec"] if key.endswith("ReplicaSpecs"))
    specs = job["spec"][specs_key]
    deploy_region = region or None
    tenant, owner = "", ""
    annotations = meta.get("annotations") or {}
    if TENANCY in annotations:
        try:
            tenancy = json.loads(annotations[TENANCY])
        except ValueError:
            tenancy = None
        if isinstance(tenancy, dict):
            tenant, owner = tenancy.get("tenant") or "", tenancy.get("user") or ""
            if deploy_region is None and tenancy.get("region"):
                deploy_region = tenancy["region"]
    conditions = status.get("conditions") or []
    running = next((c for c in conditions if c.get("type") == "Running"), None)
    return {
        "name": meta["name"],
        "namespace": meta["namespace"],
        "job_id": meta["uid"],
        "version": meta["resourceVersion"],
        "status": conditions[-1]["type"] if conditions else "Created",
        "kind": job["kind"],
        "resources": _json(
            {
                rtype: {
                    "resources": _resources(spec["template"]["spec"]),
                    "replicas": spec.get("replicas", 0),
                }
                for rtype, spec in sorted(specs.items())
            }
        ),
        "deploy_region": deploy_region,
        "tenant": tenant,
        "owner": owner,
        "deleted": 0,
        "is_in_etcd": 1,
        "remark": "EnableTensorBoard" if TENSORBOARD in annotations else None,
        "gmt_created": k8s_time(meta.get("creationTimestamp")) or GO_ZERO_TIME,
        "gmt_job_running": (
            k8s_time(running.get("lastTransitionTime")) or GO_ZERO_TIME if running else None
        ),
        "gmt_job_finished": k8s_time(status.get("completionTime")),
    }


def dmo_pod(pod: Body, default_container: str, region: str) -> dict[str, Any]:
    """converters.ConvertPodToDMOPod: the dmo.Pod columns but id and gmt_modified."""
    meta = pod["metadata"]
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    owner = next((ref for ref in meta.get("ownerReferences") or [] if ref.get("controller")), None)
    if owner is None:
        raise KubeDLError("object has no dependent owner")
    labels = meta.get("labels") or {}
    if "replica-type" not in labels:
        raise KubeDLError("object has no replica type label [replica-type]")
    created = k8s_time(meta.get("creationTimestamp")) or GO_ZERO_TIME
    row: dict[str, Any] = {
        "name": meta["name"],
        "namespace": meta["namespace"],
        "pod_id": meta["uid"],
        "version": meta["resourceVersion"],
        "status": "",
        "image": "",
        "job_id": owner["uid"],
        "replica_type": labels["replica-type"],
        "resources": _json(_resources(spec)),
        "host_ip": status.get("hostIP") or None,
        "pod_ip": status.get("podIP") or None,
        "deploy_region": region or None,
        "deleted": 0,
        "is_in_etcd": 1,
        "remark": None,
        "gmt_created": created,
        "gmt_started": None,
        "gmt_finished": None,
    }
    containers = spec.get("containers") or []
    if not containers:
        return row
    main = next((c for c in containers[1:] if c["name"] == default_container), containers[0])
    row["image"] = main.get("image", "")
    row["status"] = "Unknown"
    statuses = status.get("containerStatuses") or []
    if not statuses:
        return row
    main_status = next((s for s in statuses[1:] if s.get("name") == default_container), statuses[0])
    state = main_status.get("state") or {}
    row["status"] = status.get("phase", "")
    if row["status"] == "Running":
        row["gmt_started"] = k8s_time((state.get("running") or {}).get("startedAt")) or created
    elif row["status"] in ("Succeeded", "Failed"):
        terminated = state.get("terminated")
        if terminated is not None:
            row["gmt_started"] = k8s_time(terminated.get("startedAt"))
            row["gmt_finished"] = k8s_time(terminated.get("finishedAt"))
            if row["status"] == "Failed":
                row["remark"] = (
                    f"Reason: {terminated.get('reason', '')}\n"
                    f"ExitCode: {terminated.get('exitCode', 0)}\n"
                    f"Message: {terminated.get('message', '')}"
                )
        row["gmt_started"] = row["gmt_started"] or created
        row["gmt_finished"] = row["gmt_finished"] or go_now()
    return row


def gorm_update(
    dmo: Dmo, where: Mapping[str, Any], values: Mapping[str, Any]
) -> tuple[str, list[Any]]:
    """``b.db.Model(&T{}).Where(&T{where}).Updates(&T{values})``: the SET list of the
    non-blank values and gmt_modified, sorted by column; the WHERE of the non-blank
    conditions in struct order."""
    sets = {column: value for column, value in values.items() if not dmo.blank(column, value)}
    sets["gmt_modified"] = go_now()
    conditions = [
        field.column
        for field in dmo.fields
        if field.column in where and not dmo.blank(field.column, where[field.column])
    ]
    sql = (
        f"UPDATE `{dmo.table}` SET "
        + ", ".join(f"`{column}` = ?" for column in sorted(sets))
        + " WHERE "
        + " AND ".join(f"(`{dmo.table}`.`{column}` = ?)" for column in conditions)
    )
    return sql, [sets[column] for column in sorted(sets)] + [where[c] for c in conditions]


def _set_both(old: Any, new: Any) -> bool:
    return old is not None and new is not None and old == new


class KubeDLBackend:
    """KubeDL's MySQL object backend writing through ``conn``, with its REGION.

    ``log`` holds each statement run with the rows it affected or returned, so a test
    can say which statement did what.
    """

    def __init__(self, conn: Any, region: str = "") -> None:
        self.conn = conn
        self.region = region
        self.log: list[tuple[str, int]] = []

    def _select(self, sql: str, *params: Any) -> list[dict[str, Any]]:
        rows = kubedl.select(self.conn, sql, *params)
        self.log.append((sql, len(rows)))
        return rows

    def _write(self, sql: str, *params: Any) -> None:
        try:
            affected = kubedl.execute(self.conn, sql, *params)
        except Exception:
            # Logged as failed (-1), so a test can say which statement was refused.
            self.log.append((sql, -1))
            raise
        self.log.append((sql, affected))

    def _create(self, dmo: Dmo, sql: str, row: Mapping[str, Any]) -> None:
        stamped = {**row, "gmt_modified": go_now()}
        self._write(sql, *(stamped[field.column] for field in dmo.fields[1:]))

    def statements(self) -> list[str]:
        """The first word of each statement run, in order: SELECT, INSERT, UPDATE."""
        return [sql.split(" ", 1)[0] for sql, _ in self.log]

    # Jobs.

    def save_job(self, job: Body) -> None:
        """SaveJob: look the job up by name, namespace and uid (and REGION); insert it,
        or update the row found."""
        meta = job["metadata"]
        key = (meta["name"], meta["namespace"], meta["uid"])
        if self.region:
            rows = self._select(SAVE_JOB_LOOKUP_IN_REGION, *key, self.region)
        else:
            rows = self._select(SAVE_JOB_LOOKUP, *key)
        new = dmo_job(job, self.region)
        if not rows:
            self._create(DMO_JOB, INSERT_JOB, new)
            return
        self._update_job(kubedl.scan(DMO_JOB, rows[0]), new)

    def _get_job_by_id(self, job_id: str) -> dict[str, Any]:
        if self.region:
            rows = self._select(GET_JOB_BY_ID_IN_REGION, job_id, self.region)
        else:
            rows = self._select(GET_JOB_BY_ID, job_id)
        if not rows:
            raise RecordNotFound(f"record not found: job_info.job_id = {job_id}")
        return kubedl.scan(DMO_JOB, rows[0])

    def stop_job(self, job_id: str) -> None:
        """StopJob as the delete flow calls it: is_in_etcd 0, and a job that was
        Running, Created or Restarting becomes Stopped, finished now."""
        job = self._get_job_by_id(job_id)
        new = {
            "job_id": job["job_id"],
            "version": job["version"],
            "status": job["status"],
            "deploy_region": job["deploy_region"],
            "deleted": job["deleted"],
            "is_in_etcd": 0,
            "gmt_job_finished": job["gmt_job_finished"],
        }
        if job["status"] in ("Running", "Created", "Restarting"):
            new["status"] = STOPPED
            new["gmt_job_finished"] = go_now()
        self._update_job(job, new)

    def delete_job(self, job_id: str) -> None:
        """DeleteJob as the delete flow calls it: refused while the row says the job
        is in etcd, else deleted 1."""
        job = self._get_job_by_id(job_id)
        if job["is_in_etcd"] == 1:
            raise KubeDLError("job is still in etcd, must stop it first")
        new = {
            column: job[column]
            for column in (
                "namespace",
                "job_id",
                "version",
                "status",
                "deploy_region",
                "is_in_etcd",
                "gmt_job_finished",
            )
        }
        new["deleted"] = 1
        self._update_job(job, new)

    def _update_job(self, old: Mapping[str, Any], new: dict[str, Any]) -> None:
        """updateJob: skip an older version or an equal row; else the optimistic UPDATE
        by name, uid and the version read."""
        old_version, new_version = parse_int64(old["version"]), parse_int64(new["version"])
        if old_version > new_version:
            return
        if (
            old_version == new_version
            and old["status"] == new.get("status", "")
            and _set_both(old["is_in_etcd"], new.get("is_in_etcd"))
            and _set_both(old["deleted"], new.get("deleted"))
        ):
            return
        running = old["gmt_job_running"]
        if running not in (None, GO_ZERO_TIME) and new.get("gmt_job_running") is None:
            new["gmt_job_running"] = running
        columns = (
            "status",
            "namespace",
            "deploy_region",
            "version",
            "deleted",
            "is_in_etcd",
            "gmt_created",
            "gmt_job_running",
            "gmt_job_finished",
        )
        values = {column: new.get(column, DMO_BLANK[column]) for column in columns}
        where = {column: old[column] for column in ("name", "job_id", "version", "deploy_region")}
        self._write(*_flatten(gorm_update(DMO_JOB, where, values)))

    # Pods.

    def save_pod(self, pod: Body, default_container: str) -> None:
        """SavePod: look the pod up by name, namespace and uid (and REGION); insert it,
        or update the row found."""
        meta = pod["metadata"]
        key = (meta["name"], meta["namespace"], meta["uid"])
        if self.region:
            rows = self._select(SAVE_POD_LOOKUP_IN_REGION, *key, self.region)
        else:
            rows = self._select(SAVE_POD_LOOKUP, *key)
        new = dmo_pod(pod, default_container, self.region)
        if not rows:
            self._create(DMO_POD, INSERT_POD, new)
            return
        self._update_pod(kubedl.scan(DMO_POD, rows[0]), new)

    def stop_pod(self, namespace: str, name: str, pod_id: str) -> None:
        """StopPod(ns, name, podID) as the backend defines it (its controller passes
        name and namespace swapped, so there it finds nothing): is_in_etcd 0, and a
        Pending, Running or Unknown pod becomes Stopped, finished now."""
        rows = self._select(STOP_POD_LOOKUP, name, namespace, pod_id)
        if not rows:
            raise RecordNotFound(f"record not found: replica_info.pod_id = {pod_id}")
        old = kubedl.scan(DMO_POD, rows[0])
        if old["status"] in (STOPPED, "Failed", "Succeeded"):
            return
        new = {
            column: old[column]
            for column in (
                "version",
                "status",
                "host_ip",
                "pod_ip",
                "deleted",
                "remark",
                "gmt_started",
                "gmt_finished",
            )
        }
        new["is_in_etcd"] = 0
        if old["status"] in ("Pending", "Running", "Unknown"):
            new["status"] = STOPPED
            new["gmt_finished"] = go_now()
            if new["gmt_started"] in (None, GO_ZERO_TIME):
                new["gmt_started"] = old["gmt_created"]
        self._update_pod(old, new)

    def _update_pod(self, old: Mapping[str, Any], new: dict[str, Any]) -> None:
        """updatePod: skip an older version or an equal row; start and finish times
        stay as first written; else the optimistic UPDATE by uid and version read."""
        old_version, new_version = parse_int64(old["version"]), parse_int64(new["version"])
        if old_version > new_version:
            return
        for column in ("gmt_started", "gmt_finished"):
            if old[column] not in (None, GO_ZERO_TIME):
                new[column] = old[column]
        if (
            old_version == new_version
            and old["status"] == new.get("status", "")
            and all(
                _set_both(old[column], new.get(column))
                for column in ("gmt_started", "gmt_finished", "is_in_etcd", "deleted")
            )
        ):
            return
        columns = (
            "version",
            "status",
            "image",
            "host_ip",
            "pod_ip",
            "deleted",
            "is_in_etcd",
            "remark",
            "gmt_created",
            "gmt_started",
            "gmt_finished",
        )
        values = {column: new.get(column, POD_BLANK[column]) for column in columns}
        where = {column: old[column] for column in ("pod_id", "version", "deploy_region")}
        self._write(*_flatten(gorm_update(DMO_POD, where, values)))


def _blank_values(dmo: Dmo) -> dict[str, Any]:
    """A struct literal's unset fields: nil pointers, "" / 0, the zero time."""
    zero = {"uint64": 0, "string": "", "int": 0, "time.Time": GO_ZERO_TIME}
    return {f.column: None if f.pointer else zero[f.go_type] for f in dmo.fields}


DMO_BLANK = _blank_values(DMO_JOB)
POD_BLANK = _blank_values(DMO_POD)


def _flatten(statement: tuple[str, list[Any]]) -> tuple[Any, ...]:
    sql, params = statement
    return (sql, *params)
