"""``jobarchive migrate`` adopts a database KubeDL created and filled, duplicates and all."""

import datetime
import pathlib
import signal
import subprocess
import time

import pytest

from jobarchive.config import DbTls
from jobarchive.maintenance import classifying
from jobarchive.storage import database as db
from testbed.mariadb import Databases
from tests.support.commands import JOBARCHIVE, jobarchive
from tests.support.legacy import (
    KUBEDL_03_JOB_INFO,
    T0,
    KubeDLJob,
    KubeDLPod,
    create_kubedl_tables,
    insert_kubedl_rows,
    query,
    snapshot,
)

FINISHED = T0 + datetime.timedelta(hours=2)


@pytest.fixture
def kubedl_url(mysql_databases: Databases) -> str:
    """A database with KubeDL's tables and rows: each job written three times, as
    KubeDL's racy lookup-then-insert did beside another writer, and one pod twice."""
    url = mysql_databases.create("kubedl")
    create_kubedl_tables(url)
    later = T0 + datetime.timedelta(minutes=5)
    insert_kubedl_rows(
        url,
        [
            KubeDLJob("uid-a", "mnist", "100", running=T0),
            KubeDLJob("uid-a", "mnist", "120", "Succeeded", finished=FINISHED),
            KubeDLJob("uid-a", "mnist", "110", "Running", running=T0),
            # Tied versions: the later gmt_modified wins.
            KubeDLJob("uid-b", "bert", "200", "Failed", owner="alice", modified=later),
            KubeDLJob("uid-b", "bert", "200", "Running", owner="alice"),
            KubeDLJob("uid-c", "resnet", "300", "Running"),
        ],
        [
            KubeDLPod("pod-a0", "mnist-worker-0", "uid-a", "101"),
            KubeDLPod("pod-a0", "mnist-worker-0", "uid-a", "121", "Succeeded"),
        ],
    )
    return url


# The cluster whose KubeDL wrote the tables (decision 35).
KUBEDLS_CLUSTER = "kubedl-east"


def migrate(url: str, tmp_path: pathlib.Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"JOBARCHIVE_DB_URL": url, "JOBARCHIVE_CLUSTER": KUBEDLS_CLUSTER}
    return jobarchive("migrate", *args, cwd=tmp_path, env=env)


def test_reading_an_unmigrated_database_says_to_migrate_it(
    kubedl_url: str, tmp_path: pathlib.Path
) -> None:
    result = jobarchive("jobs", cwd=tmp_path, env={"JOBARCHIVE_DB_URL": kubedl_url})
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        "Error: job_info.job_id, replica_info.pod_id has no unique key, as in the tables "
        "KubeDL creates: run `jobarchive migrate` once (docs/schema.md: Coming from KubeDL)"
    ]


def test_a_dry_run_counts_what_it_would_do_and_changes_nothing(
    kubedl_url: str, tmp_path: pathlib.Path
) -> None:
    before = snapshot(kubedl_url)
    result = migrate(kubedl_url, tmp_path, "--dry-run")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    added = "job_info: add columns cluster, gmt_finished, api_version, queue, gmt_measured"
    assert f"{added}: 5 (dry run)" in lines
    assert "job_info: merge duplicate rows of 2 uids: 3 (dry run)" in lines
    assert "replica_info: merge duplicate rows of 1 uids: 1 (dry run)" in lines
    assert "job_info: add the unique key on job_id: 1 (dry run)" in lines
    assert "event_info: create the table: 1 (dry run)" in lines
    assert lines[-1].endswith("steps would run; nothing was changed")
    assert snapshot(kubedl_url) == before


def test_migrating_keeps_one_row_per_uid_the_newest_merged_with_the_older(
    kubedl_url: str, tmp_path: pathlib.Path
) -> None:
    result = migrate(kubedl_url, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1].startswith("Migrated in ")
    jobs = query(
        kubedl_url,
        "SELECT job_id, version, status, owner, gmt_job_running, gmt_job_finished, gmt_finished"
        " FROM job_info ORDER BY job_id",
    )
    assert jobs == [
        # The newest version, its missing start taken from an older row.
        ("uid-a", "120", "Succeeded", "", T0, FINISHED, FINISHED),
        ("uid-b", "200", "Failed", "alice", None, None, None),
        ("uid-c", "300", "Running", "", None, None, None),
    ]
    pods = query(kubedl_url, "SELECT pod_id, version, status FROM replica_info")
    assert pods == [("pod-a0", "121", "Succeeded")]


def test_migrating_adds_the_unique_keys_and_widens_kubedls_narrow_columns(
    kubedl_url: str, tmp_path: pathlib.Path
) -> None:
    assert migrate(kubedl_url, tmp_path).returncode == 0
    unique = query(
        kubedl_url,
        "SELECT TABLE_NAME, COLUMN_NAME FROM information_schema.STATISTICS "
        "WHERE TABLE_SCHEMA = DATABASE() AND NON_UNIQUE = 0 AND INDEX_NAME <> 'PRIMARY' "
        "ORDER BY TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX",
    )
    # The log tails', the usage roll-ups', Kueue's attempts', waits' and queues' quotas',
    # the failure classes' and efficiency's tables are the archive's own: migrate creates
    # them whole.
    assert unique == [
        ("container_log_tail", "pod_id"),
        ("container_log_tail", "container"),
        ("container_log_tail", "restart_count"),
        ("event_info", "event_id"),
        ("job_attempt", "attempt_id"),
        ("job_failure", "job_id"),
        ("job_info", "job_id"),
        ("job_wait", "wait_id"),
        ("pod_efficiency", "pod_id"),
        ("pod_failure", "pod_id"),
        ("queue_job", "job_id"),
        ("queue_quota", "quota_id"),
        ("replica_info", "pod_id"),
        ("usage_day", "job_id"),
        ("usage_day", "day"),
    ]
    widths = dict(
        query(
            kubedl_url,
            "SELECT CONCAT(TABLE_NAME, '.', COLUMN_NAME), COLUMN_TYPE FROM "
            "information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE()",
        )
    )
    assert widths["job_info.name"] == "varchar(253)"
    assert widths["job_info.status"] == "varchar(320)"
    assert widths["job_info.version"] == "varchar(255)"
    assert widths["replica_info.image"] == "longtext"
    assert widths["replica_info.resources"] == "longtext"
    nullable = dict(
        query(
            kubedl_url,
            "SELECT COLUMN_NAME, IS_NULLABLE FROM information_schema.COLUMNS "
            "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'job_info'",
        )
    )
    assert (nullable["owner"], nullable["job_id"], nullable["gmt_job_finished"]) == (
        "NO",
        "NO",
        "YES",
    )


def test_a_second_run_finds_nothing_to_do(kubedl_url: str, tmp_path: pathlib.Path) -> None:
    assert migrate(kubedl_url, tmp_path).returncode == 0
    before = snapshot(kubedl_url)
    again = migrate(kubedl_url, tmp_path)
    assert again.stdout.splitlines() == ["Nothing to migrate: the database has jobarchive's schema"]
    assert snapshot(kubedl_url) == before


def test_kubedl_0_3s_table_gets_both_finish_columns(
    mysql_databases: Databases, tmp_path: pathlib.Path
) -> None:
    url = mysql_databases.create("kubedl03")
    create_kubedl_tables(url, KUBEDL_03_JOB_INFO)
    with_finish = (
        "INSERT INTO job_info (name, namespace, job_id, version, status, kind, resources, "
        "tenant, owner, deleted, is_in_etcd, gmt_created, gmt_modified, gmt_finished) VALUES "
        "('old', 'kubedl', 'uid-old', '7', 'Succeeded', 'TFJob', '{}', '', '', 0, 0, %s, %s, %s)"
    )
    query(url, with_finish, T0, T0, FINISHED)
    first = migrate(url, tmp_path)
    assert (
        "job_info: add columns cluster, gmt_job_finished, gmt_job_running, api_version, "
        "remark, queue, gmt_measured: 7" in (first.stdout.splitlines())
    )
    assert query(url, "SELECT gmt_finished, gmt_job_finished FROM job_info") == [
        (FINISHED, FINISHED)
    ]


def test_a_migration_killed_midway_finishes_on_the_next_run(
    mysql_databases: Databases, tmp_path: pathlib.Path
) -> None:
    url = mysql_databases.create("kubedl_big")
    create_kubedl_tables(url)
    uids = 6000
    insert_kubedl_rows(
        url,
        [KubeDLJob(f"uid-{n}", f"job-{n}", version) for n in range(uids) for version in "12"],
        [],
    )
    process = subprocess.Popen(
        [str(JOBARCHIVE), "migrate"],
        cwd=tmp_path,
        env={
            "JOBARCHIVE_DB_URL": url,
            "JOBARCHIVE_CLUSTER": KUBEDLS_CLUSTER,
            "PATH": "/usr/bin:/bin",
        },
        stdout=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    # Killed once some duplicates are merged and others not yet.
    while query(url, "SELECT COUNT(*) FROM job_info")[0][0] == 2 * uids:
        assert process.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait()
    left = query(url, "SELECT COUNT(*) FROM job_info")[0][0]
    assert uids < left < 2 * uids
    assert migrate(url, tmp_path).returncode == 0
    assert query(url, "SELECT COUNT(*), COUNT(DISTINCT job_id), MIN(version) FROM job_info") == [
        (uids, uids, "2")
    ]
    assert migrate(url, tmp_path).stdout.startswith("Nothing to migrate")


async def test_the_operators_start_brings_an_earlier_jobarchives_rows_up_to_kubedls_readers(
    mysql_databases: Databases,
) -> None:
    url = mysql_databases.create("jobarchive_old")
    await db.open_database(url, encryption=DbTls())
    await db.close_database()
    # As the release before KubeDL's columns left it: owners nullable and NULL, and
    # only the seed's finish column.
    query(
        url,
        "ALTER TABLE job_info MODIFY owner VARCHAR(255) NULL, MODIFY tenant VARCHAR(255) "
        "NULL, DROP COLUMN gmt_job_finished, DROP COLUMN gmt_job_running",
    )
    old = (
        "INSERT INTO job_info (name, namespace, job_id, version, status, kind, resources, "
        "tenant, owner, deleted, is_in_etcd, gmt_created, gmt_modified, gmt_finished) VALUES "
        "('old', 'ml', 'uid-old', '7', 'Succeeded', 'TFJob', '{}', NULL, NULL, 0, 0, %s, %s, %s)"
    )
    query(url, old, T0, T0, FINISHED)

    await db.open_database(url, encryption=DbTls())
    await db.close_database()
    assert query(url, "SELECT owner, tenant, gmt_finished, gmt_job_finished FROM job_info") == [
        ("", "", FINISHED, FINISHED)
    ]
    nullable = query(
        url,
        "SELECT COLUMN_NAME, IS_NULLABLE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA "
        "= DATABASE() AND TABLE_NAME = 'job_info' AND COLUMN_NAME IN ('owner', 'tenant')",
    )
    assert sorted(nullable) == [("owner", "NO"), ("tenant", "NO")]


async def test_the_start_gives_events_from_before_their_job_column_their_job(
    mysql_databases: Databases,
) -> None:
    url = mysql_databases.create("jobarchive_events")
    await db.open_database(url, encryption=DbTls())
    await db.close_database()
    job = (
        "INSERT INTO job_info (name, namespace, job_id, version, status, kind, resources, "
        "tenant, owner, deleted, is_in_etcd, gmt_created, gmt_modified) VALUES "
        "('old', 'ml', 'uid-job', '7', 'Running', 'TFJob', '{}', '', '', 0, 1, %s, %s)"
    )
    pod = (
        "INSERT INTO replica_info (name, namespace, pod_id, version, status, image, job_id, "
        "replica_type, resources, deleted, is_in_etcd, gmt_created, gmt_modified) VALUES "
        "('old-worker-0', 'ml', 'uid-pod', '8', 'Running', 'i', 'uid-job', 'worker', '{}', "
        "0, 1, %s, %s)"
    )
    event = (
        "INSERT INTO event_info (event_id, version, name, kind, type, obj_namespace, obj_name, "
        "obj_uid, reason, message, count, gmt_created, gmt_modified, job_id) VALUES "
        "(%s, '9', %s, 'Pod', 'Normal', 'ml', 'x', %s, 'Scheduled', 'm', 1, %s, %s, NULL)"
    )
    query(url, job, T0, T0)
    query(url, pod, T0, T0)
    for uid, subject in (("e-pod", "uid-pod"), ("e-job", "uid-job"), ("e-gone", "uid-unknown")):
        query(url, event, uid, uid, subject, T0, T0)

    await db.open_database(url, encryption=DbTls())
    await db.close_database()
    assert query(url, "SELECT event_id, job_id FROM event_info ORDER BY event_id") == [
        ("e-gone", None),
        ("e-job", "uid-job"),
        ("e-pod", "uid-job"),
    ]


def test_migrating_counts_pods_requests_with_the_accelerators_the_settings_name(
    mysql_databases: Databases, tmp_path: pathlib.Path
) -> None:
    url = mysql_databases.create("kubedl_gpus")
    create_kubedl_tables(url)
    requests = '{"limits":{"habana.ai/gaudi":"8","nvidia.com/gpu":"1"},"requests":{"cpu":"2"}}'
    insert_kubedl_rows(
        url,
        [KubeDLJob("uid-a", "mnist", "1")],
        [KubeDLPod("pod-a", "mnist-worker-0", "uid-a", "2", resources=requests)],
    )
    result = jobarchive(
        "migrate",
        cwd=tmp_path,
        env={
            "JOBARCHIVE_DB_URL": url,
            "JOBARCHIVE_ACCELERATORS": "habana.ai/gaudi",
            "JOBARCHIVE_CLUSTER": KUBEDLS_CLUSTER,
        },
    )
    assert result.returncode == 0, result.stderr
    counted = "replica_info: count gpus, cpu_millis, memory_bytes from resources: 1"
    assert counted in result.stdout.splitlines()
    assert query(url, "SELECT gpus, cpu_millis, memory_bytes, node_name FROM replica_info") == [
        (9, 2000, 0, None)
    ]


def test_migrating_gives_kubedls_rows_the_cluster_named_and_needs_one(
    kubedl_url: str, tmp_path: pathlib.Path
) -> None:
    unnamed = jobarchive("migrate", cwd=tmp_path, env={"JOBARCHIVE_DB_URL": kubedl_url})
    assert unnamed.returncode == 1
    lines = unnamed.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "Error: which cluster the rows come from is not known: cannot read the kube-system "
        "namespace's uid: no Kubernetes cluster"
    )
    assert lines[0].endswith(", or pass --cluster")
    refused = migrate(kubedl_url, tmp_path, "--cluster", "not a name")
    assert refused.returncode == 2
    assert "Invalid value for '--cluster': 'not a name' is not a cluster name" in refused.stderr
    result = migrate(kubedl_url, tmp_path, "--cluster", "kubedl-west")
    assert result.returncode == 0, result.stderr
    for table in ("job_info", "replica_info"):
        assert query(kubedl_url, f"SELECT DISTINCT cluster FROM {table}") == [("kubedl-west",)]
    # Its default is NULL again: KubeDL's writer, inserting beside, names no cluster.
    default = query(
        kubedl_url,
        "SELECT COLUMN_DEFAULT FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE()"
        " AND TABLE_NAME = 'job_info' AND COLUMN_NAME = 'cluster'",
    )
    assert default == [("NULL",)]


def test_migrating_classifies_the_failed_jobs_recorded_before_the_taxonomy(
    kubedl_url: str, tmp_path: pathlib.Path
) -> None:
    dry = migrate(kubedl_url, tmp_path, "--dry-run").stdout.splitlines()
    step = f"job_failure: {classifying.CLASSIFIED}: 1"
    assert f"{step} (dry run)" in dry
    result = migrate(kubedl_url, tmp_path)
    assert result.returncode == 0, result.stderr
    assert step in result.stdout.splitlines()
    # KubeDL kept no pod of it, no Event, no tail: nothing tells why.
    assert query(kubedl_url, "SELECT job_id, failure_class, pod_id, cluster FROM job_failure") == [
        ("uid-b", "Unknown", "", KUBEDLS_CLUSTER)
    ]
