"""KubeDL's writer beside jobarchive on one MariaDB database: KubeDL's statements,
replayed as gorm emits them (tests.support.kubedl_writer), over rows jobarchive
recorded first, and jobarchive's real write path over rows KubeDL inserted first.
Neither may fail on the other's rows, and a uid never gets a second row.

The objects are a KubeDL TFJob (training.kubedl.io) and the pods KubeDL's
controller makes for it: the kinds whose rows KubeDL's persist controllers write.
"""

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pymysql
import pytest

from jobarchive.config import DbTls
from jobarchive.storage import database as db
from testbed.mariadb import Databases
from testbed.objects import Body
from tests.support import kubedl
from tests.support.kubedl_estate import (
    Archive,
    at,
    kubedl_job,
    kubedl_pod,
    pod_succeeded,
    succeeded,
)
from tests.support.kubedl_writer import INSERT_JOB, INSERT_POD, KubeDLBackend

REGION = "cn-hangzhou"
TENANCY = {"tenant": "search", "user": "alice", "region": REGION}
CREATED = "2026-11-21T08:00:00Z"
STARTED = "2026-11-21T08:00:40Z"
FINISHED = "2026-11-21T09:10:00Z"
# The default container KubeDL's TFJob controller passes to SavePod.
TENSORFLOW = "tensorflow"
# What gorm emits for updateJob when a job succeeds: every non-blank field of the new
# row, sorted, and the optimistic WHERE on the version it read.
JOB_SUCCEEDED_UPDATE = (
    "UPDATE `job_info` SET `deleted` = ?, `deploy_region` = ?, `gmt_created` = ?, "
    "`gmt_job_finished` = ?, `gmt_job_running` = ?, `gmt_modified` = ?, `is_in_etcd` = ?, "
    "`namespace` = ?, `status` = ?, `version` = ? WHERE (`job_info`.`name` = ?) "
    "AND (`job_info`.`job_id` = ?) AND (`job_info`.`version` = ?) "
    "AND (`job_info`.`deploy_region` = ?)"
)


@pytest.fixture
async def compat_url(mysql_databases: Databases) -> AsyncIterator[str]:
    """A fresh database, opened for jobarchive as the operator opens it."""
    db_url = mysql_databases.create("kubedl_writer")
    await db.open_database(db_url, encryption=DbTls())
    yield db_url
    await db.close_database()


@pytest.fixture
def conn(compat_url: str) -> Iterator[Any]:
    """KubeDL's connection to the same database."""
    connection = kubedl.connect(compat_url)
    yield connection
    connection.close()


@pytest.fixture
def job() -> Body:
    """A running KubeDL TFJob with KubeDL's tenancy annotation."""
    return kubedl_job("TFJob", "mnist", CREATED, (("Running", STARTED),), tenancy=TENANCY)


@pytest.fixture
def pods(job: Body) -> list[Body]:
    """Its PS and two workers, running."""
    return [kubedl_pod(job, "PS", 0, "Running", STARTED)] + [
        kubedl_pod(job, "Worker", i, "Running", STARTED) for i in range(2)
    ]


def rows_of(conn: Any, body: Body) -> list[dict[str, Any]]:
    """Every row of a job or pod uid, as KubeDL's connection reads it."""
    table, key = ("replica_info", "pod_id") if body["kind"] == "Pod" else ("job_info", "job_id")
    return kubedl.select(
        conn, f"SELECT * FROM `{table}` WHERE `{key}` = ?", body["metadata"]["uid"]
    )


def the_row(conn: Any, body: Body) -> dict[str, Any]:
    """The one row of a uid; fails on none or a second one."""
    rows = rows_of(conn, body)
    assert len(rows) == 1, f"{len(rows)} rows for {body['kind']} {body['metadata']['name']}"
    return rows[0]


async def test_kubedl_updates_a_job_jobarchive_recorded_first_in_place(
    conn: Any, job: Body
) -> None:
    async with Archive() as archive:
        await archive.job(job)
    kubedl_backend = KubeDLBackend(conn)
    kubedl_backend.save_job(job)
    kubedl_backend.save_job(succeeded(job, FINISHED))
    # The first save found the row as KubeDL would have written it: nothing to change.
    assert kubedl_backend.statements() == ["SELECT", "SELECT", "UPDATE"]
    assert kubedl_backend.log[-1] == (JOB_SUCCEEDED_UPDATE, 1)
    row = the_row(conn, job)
    assert (row["status"], row["gmt_job_finished"]) == ("Succeeded", at(FINISHED))


async def test_jobarchive_records_a_job_after_kubedl_updated_its_row(conn: Any, job: Body) -> None:
    done = succeeded(job, FINISHED)
    async with Archive() as archive:
        await archive.job(job)
        KubeDLBackend(conn).save_job(done)
        await archive.job(done)
    assert the_row(conn, job)["status"] == "Succeeded"


async def test_kubedl_updates_pods_jobarchive_recorded_first_in_place(
    conn: Any, job: Body, pods: list[Body]
) -> None:
    async with Archive() as archive:
        await archive.job(job)
        for pod in pods:
            await archive.pod(pod)
    kubedl_backend = KubeDLBackend(conn)
    for pod in pods:
        kubedl_backend.save_pod(pod_succeeded(pod, FINISHED), TENSORFLOW)
    assert [affected for sql, affected in kubedl_backend.log if sql.startswith("UPDATE")] == [1] * 3
    assert [the_row(conn, pod)["status"] for pod in pods] == ["Succeeded"] * 3


async def test_kubedls_delete_flow_stops_and_deletes_a_job_jobarchive_recorded(
    conn: Any, job: Body
) -> None:
    async with Archive() as archive:
        await archive.job(job)
        kubedl_backend = KubeDLBackend(conn)
        kubedl_backend.stop_job(job["metadata"]["uid"])
        kubedl_backend.delete_job(job["metadata"]["uid"])
        await archive.deleted(job)
    assert kubedl_backend.statements() == ["SELECT", "UPDATE", "SELECT", "UPDATE"]
    row = the_row(conn, job)
    assert (row["status"], row["is_in_etcd"], row["deleted"]) == ("Stopped", 0, 1)


async def test_kubedls_delete_flow_finds_nothing_to_change_on_a_job_jobarchive_saw_deleted(
    conn: Any, job: Body
) -> None:
    async with Archive() as archive:
        await archive.job(job)
        await archive.deleted(job)
    kubedl_backend = KubeDLBackend(conn)
    kubedl_backend.stop_job(job["metadata"]["uid"])
    kubedl_backend.delete_job(job["metadata"]["uid"])
    assert kubedl_backend.statements() == ["SELECT", "SELECT"]
    row = the_row(conn, job)
    assert (row["status"], row["is_in_etcd"], row["deleted"]) == ("Stopped", 0, 1)


async def test_kubedl_stops_a_pod_jobarchive_recorded(
    conn: Any, job: Body, pods: list[Body]
) -> None:
    async with Archive() as archive:
        await archive.job(job)
        await archive.pod(pods[0])
    meta = pods[0]["metadata"]
    kubedl_backend = KubeDLBackend(conn)
    kubedl_backend.stop_pod(meta["namespace"], meta["name"], meta["uid"])
    assert kubedl_backend.log[-1][1] == 1
    row = the_row(conn, pods[0])
    assert (row["status"], row["is_in_etcd"]) == ("Stopped", 0)


async def test_jobarchive_records_over_a_job_and_pods_kubedl_inserted_first(
    conn: Any, job: Body, pods: list[Body]
) -> None:
    kubedl_backend = KubeDLBackend(conn)
    kubedl_backend.save_job(job)
    for pod in pods:
        kubedl_backend.save_pod(pod, TENSORFLOW)
    assert kubedl_backend.statements() == ["SELECT", "INSERT"] * 4
    async with Archive() as archive:
        await archive.job(job)
        for pod in pods:
            await archive.pod(pod)
    assert the_row(conn, job)["status"] == "Running"
    assert [the_row(conn, pod)["status"] for pod in pods] == ["Running"] * 3


async def test_both_writers_taking_turns_over_a_jobs_life_keep_one_row_per_uid(
    conn: Any, job: Body, pods: list[Body]
) -> None:
    kubedl_backend = KubeDLBackend(conn)
    done = succeeded(job, FINISHED)
    finished = [pod_succeeded(pod, FINISHED) for pod in pods]
    async with Archive() as archive:
        kubedl_backend.save_job(job)
        await archive.job(job)
        for pod, pod_done in zip(pods, finished, strict=True):
            await archive.pod(pod)
            kubedl_backend.save_pod(pod, TENSORFLOW)
            kubedl_backend.save_pod(pod_done, TENSORFLOW)
            await archive.pod(pod_done)
        await archive.job(done)
        kubedl_backend.save_job(done)
        await archive.deleted(done)
        kubedl_backend.stop_job(job["metadata"]["uid"])
        kubedl_backend.delete_job(job["metadata"]["uid"])
    row = the_row(conn, job)
    assert (row["status"], row["deleted"], row["is_in_etcd"]) == ("Succeeded", 1, 0)
    assert [the_row(conn, pod)["status"] for pod in pods] == ["Succeeded"] * 3


async def test_with_the_same_region_on_both_sides_kubedl_finds_jobarchives_pods(
    conn: Any, job: Body, pods: list[Body]
) -> None:
    async with Archive(region=REGION) as archive:
        await archive.job(job)
        await archive.pod(pods[0])
    kubedl_backend = KubeDLBackend(conn, region=REGION)
    kubedl_backend.save_pod(pod_succeeded(pods[0], FINISHED), TENSORFLOW)
    assert kubedl_backend.statements() == ["SELECT", "UPDATE"]
    assert the_row(conn, pods[0])["status"] == "Succeeded"


async def test_with_region_on_kubedls_side_only_save_pod_misses_jobarchives_row_and_fails(
    conn: Any, job: Body, pods: list[Body]
) -> None:
    async with Archive() as archive:
        await archive.job(job)
        await archive.pod(pods[0])
    kubedl_backend = KubeDLBackend(conn, region=REGION)
    with pytest.raises(pymysql.err.IntegrityError) as refused:
        kubedl_backend.save_pod(pod_succeeded(pods[0], FINISHED), TENSORFLOW)
    # The lookup asks for deploy_region = REGION, jobarchive's row has NULL there: KubeDL
    # inserts, and the unique key on pod_id refuses the second row.
    assert refused.value.args[0] == 1062
    assert kubedl_backend.log == [(kubedl_backend.log[0][0], 0), (INSERT_POD, -1)]
    assert the_row(conn, pods[0])["status"] == "Running"


async def test_with_region_on_kubedls_side_only_save_job_fails_for_a_job_without_that_region(
    conn: Any,
) -> None:
    # Without a tenancy region, jobarchive's row has NULL deploy_region, as KubeDL's would.
    job = kubedl_job("PyTorchJob", "bert", CREATED, (("Running", STARTED),))
    async with Archive() as archive:
        await archive.job(job)
    kubedl_backend = KubeDLBackend(conn, region=REGION)
    with pytest.raises(pymysql.err.IntegrityError) as refused:
        kubedl_backend.save_job(succeeded(job, FINISHED))
    assert refused.value.args[0] == 1062
    assert kubedl_backend.log[-1] == (INSERT_JOB, -1)
    assert the_row(conn, job)["status"] == "Running"


async def test_with_region_on_jobarchives_side_only_kubedl_still_updates_its_rows(
    conn: Any, job: Body, pods: list[Body]
) -> None:
    async with Archive(region=REGION) as archive:
        await archive.job(job)
        await archive.pod(pods[0])
    kubedl_backend = KubeDLBackend(conn)
    kubedl_backend.save_job(succeeded(job, FINISHED))
    kubedl_backend.save_pod(pod_succeeded(pods[0], FINISHED), TENSORFLOW)
    assert kubedl_backend.statements() == ["SELECT", "UPDATE"] * 2
    assert [affected for _, affected in kubedl_backend.log] == [1] * 4
