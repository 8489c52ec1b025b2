"""Databases as KubeDL makes and fills them, for the tests of ``jobarchive migrate``.

The statements are those KubeDL's MySQL backend runs (kubedl-io/kubedl,
``pkg/storage/backends/objects/mysql/mysql.go``): ``CreateTable`` of its DMO types
as gorm v1.9.12 emits it (no unique key, every column nullable, narrow varchars),
and the INSERT of ``Create`` with all its columns. KubeDL before v0.4 had
``gmt_finished`` where it now has ``gmt_job_finished``, and no ``remark`` or
``gmt_job_running``.
"""

import dataclasses
import datetime
from typing import Any
from urllib.parse import urlsplit

import pymysql

from testbed.mariadb import connect

KUBEDL_JOB_INFO = (
    "CREATE TABLE `job_info` (`id` bigint unsigned AUTO_INCREMENT NOT NULL,"
    "`name` varchar(128),`namespace` varchar(128),`job_id` varchar(64),`version` varchar(32),"
    "`status` varchar(32),`kind` varchar(32),`resources` text,`deploy_region` varchar(64),"
    "`tenant` varchar(255),`owner` varchar(255),`deleted` tinyint(4),`is_in_etcd` tinyint(4),"
    "`remark` text,`gmt_created` datetime,`gmt_modified` datetime,`gmt_job_running` datetime,"
    "`gmt_job_finished` datetime , PRIMARY KEY (`id`))"
)
KUBEDL_03_JOB_INFO = (
    "CREATE TABLE `job_info` (`id` bigint unsigned AUTO_INCREMENT NOT NULL,"
    "`name` varchar(128),`namespace` varchar(128),`job_id` varchar(64),`version` varchar(32),"
    "`status` varchar(32),`kind` varchar(32),`resources` text,`deploy_region` varchar(64),"
    "`tenant` varchar(255),`owner` varchar(255),`deleted` tinyint(4),`is_in_etcd` tinyint(4),"
    "`gmt_created` datetime,`gmt_modified` datetime,`gmt_finished` datetime , PRIMARY KEY (`id`))"
)
KUBEDL_REPLICA_INFO = (
    "CREATE TABLE `replica_info` (`id` bigint unsigned AUTO_INCREMENT NOT NULL,"
    "`name` varchar(128),`namespace` varchar(128),`pod_id` varchar(64),`version` varchar(32),"
    "`status` varchar(32),`image` varchar(255),`job_id` varchar(64),`replica_type` varchar(32),"
    "`resources` varchar(1024),`host_ip` varchar(64),`pod_ip` varchar(64),"
    "`deploy_region` varchar(64),`deleted` tinyint(4),`is_in_etcd` tinyint(4),`remark` text,"
    "`gmt_created` datetime,`gmt_modified` datetime,`gmt_started` datetime,"
    "`gmt_finished` datetime , PRIMARY KEY (`id`))"
)
JOB_COLUMNS = (
    "name, namespace, job_id, version, status, kind, resources, deploy_region, tenant, owner, "
    "deleted, is_in_etcd, remark, gmt_created, gmt_modified, gmt_job_running, gmt_job_finished"
)
POD_COLUMNS = (
    "name, namespace, pod_id, version, status, image, job_id, replica_type, resources, "
    "host_ip, pod_ip, deploy_region, deleted, is_in_etcd, remark, gmt_created, gmt_modified, "
    "gmt_started, gmt_finished"
)
T0 = datetime.datetime(2026, 6, 1, 8, 0, 0)


@dataclasses.dataclass
class KubeDLJob:
    """One row as KubeDL's converter writes a TFJob (job.go, ConvertJobToDMOJob)."""

    uid: str
    name: str
    version: str
    status: str = "Running"
    namespace: str = "kubedl"
    owner: str = ""
    running: datetime.datetime | None = None
    finished: datetime.datetime | None = None
    modified: datetime.datetime = T0

    def values(self) -> tuple[Any, ...]:
        resources = '{"Worker":{"resources":{"requests":{"cpu":"1","memory":"1Gi"}},"replicas":2}}'
        return (
            self.name, self.namespace, self.uid, self.version, self.status, "TFJob", resources,
            None, "", self.owner, 0, 1, None, T0, self.modified, self.running, self.finished,
        )  # fmt: skip


@dataclasses.dataclass
class KubeDLPod:
    """One row as KubeDL's converter writes a pod (pod.go, ConvertPodToDMOPod)."""

    uid: str
    name: str
    job_uid: str
    version: str
    status: str = "Running"
    resources: str = '{"requests":{"cpu":"1"}}'

    def values(self) -> tuple[Any, ...]:
        return (
            self.name, "kubedl", self.uid, self.version, self.status, "tf-mnist:1.0",
            self.job_uid, "worker", self.resources, "10.0.0.1", "172.16.0.9",
            None, 0, 1, None, T0, T0, T0, None,
        )  # fmt: skip


def kubedl_connection(db_url: str) -> "pymysql.connections.Connection[Any]":
    """An autocommit connection to the database of a ``mysql://.../name`` URL."""
    server, _, name = db_url.rpartition("/")
    assert urlsplit(server).scheme == "mysql"
    return connect(server, database=name)


def create_kubedl_tables(db_url: str, job_table: str = KUBEDL_JOB_INFO) -> None:
    """The tables as KubeDL's ``init()`` creates them in an empty database."""
    with kubedl_connection(db_url) as conn, conn.cursor() as cursor:
        cursor.execute(KUBEDL_REPLICA_INFO)
        cursor.execute(job_table)


def insert_kubedl_rows(db_url: str, jobs: list[KubeDLJob], pods: list[KubeDLPod]) -> None:
    """Rows as KubeDL's ``Create`` inserts them: every column, duplicates included."""
    with kubedl_connection(db_url) as conn, conn.cursor() as cursor:
        if jobs:
            marks = ", ".join(["%s"] * 17)
            cursor.executemany(
                f"INSERT INTO `job_info` ({JOB_COLUMNS}) VALUES ({marks})",
                [job.values() for job in jobs],
            )
        if pods:
            marks = ", ".join(["%s"] * 19)
            cursor.executemany(
                f"INSERT INTO `replica_info` ({POD_COLUMNS}) VALUES ({marks})",
                [pod.values() for pod in pods],
            )


def query(db_url: str, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    """The rows of one statement."""
    with kubedl_connection(db_url) as conn, conn.cursor() as cursor:
        cursor.execute(sql, params or None)
        return list(cursor.fetchall())


def snapshot(db_url: str) -> list[Any]:
    """Every table's definition and rows, to tell whether anything changed."""
    tables = [row[0] for row in query(db_url, "SHOW TABLES")]
    found: list[Any] = []
    for table in sorted(tables):
        found.append(query(db_url, f"SHOW CREATE TABLE `{table}`"))
        found.append(query(db_url, f"SELECT * FROM `{table}` ORDER BY id"))
    return found
