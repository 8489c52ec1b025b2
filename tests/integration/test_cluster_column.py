"""The ``cluster`` column (decision 35) on both databases: an archive from before gets
its rows' cluster at start, every write names the store's cluster, and one cluster's
write never overwrites another cluster's row of the same uid."""

import datetime
import logging

import pytest

from jobarchive.config import DbTls
from jobarchive.core.rows import JobRow
from jobarchive.logtails import inserts as tails
from jobarchive.maintenance import retention
from jobarchive.storage import database as db
from jobarchive.storage import introspection, schema
from jobarchive.storage.models import Job
from jobarchive.storage.store import Store
from tests.support import rows
from tests.support.rows import failure, write_tails

CREATED = datetime.datetime(2026, 11, 30, 8, 0, tzinfo=datetime.UTC)
TABLES = ("job_info", "replica_info", "event_info", "container_log_tail")


def job(uid: str, version: str, status: str = "Running", name: str = "train-1") -> JobRow:
    return rows.job(
        uid,
        version,
        status=status,
        name=name,
        namespace="team-a",
        kind="PyTorchJob",
        gmt_created=CREATED,
    )


async def columns(table: str) -> set[str]:
    return await introspection.of(db.connection()).columns(db.connection(), table)


async def cluster_indexes(database: str, table: str) -> list[str]:
    if database == "mysql":
        names = await introspection.of(db.connection()).index_names(db.connection(), table)
        return [name for key, name in names.items() if "cluster" in key]
    rows = await db.connection().execute_query_dict(
        "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ? "
        "AND sql LIKE '%cluster%'",
        [table],
    )
    return [str(row["name"]) for row in rows]


async def clusters(table: str) -> list[str | None]:
    rows = await db.connection().execute_query_dict(f"SELECT cluster FROM {table} ORDER BY id")
    return [row["cluster"] for row in rows]


async def test_every_write_names_the_stores_cluster(database: str) -> None:
    await Store(cluster="east").upsert(Job, [job("uid-1", "1")])
    await Store(cluster="west").upsert(Job, [job("uid-2", "1")])
    assert await clusters("job_info") == ["east", "west"]


async def test_a_write_of_another_clusters_uid_keeps_the_stored_row(
    database: str, caplog: pytest.LogCaptureFixture
) -> None:
    east, west = Store(cluster="east"), Store(cluster="west")
    assert await east.upsert(Job, [job("uid-1", "5", "Running")]) == 0
    # A cloned etcd: the same uid, a newer version, in another cluster; a stale row of
    # west's own beside it is kept too, and not said.
    assert await west.upsert(Job, [job("uid-w", "5")]) == 0
    with caplog.at_level(logging.WARNING, logger="jobarchive.storage.store"):
        kept = await west.upsert(
            Job, [job("uid-1", "9", "Failed", name="other"), job("uid-w", "4")]
        )
    assert kept == 2
    assert [record.getMessage() for record in caplog.records] == [
        "Not written: job_info uid-1 is cluster east's, not this cluster's (west): two "
        "clusters share the uid"
    ]
    stored = await Job.get(job_id="uid-1")
    assert (stored.cluster, stored.status, stored.name, stored.version) == (
        "east",
        "Running",
        "train-1",
        "5",
    )
    assert await east.upsert(Job, [job("uid-1", "6", "Succeeded")]) == 0
    assert (await Job.get(job_id="uid-1")).status == "Succeeded"


async def test_a_row_without_a_cluster_is_taken_by_the_first_that_writes_it(
    database: str,
) -> None:
    await Store(cluster="east").upsert(Job, [job("uid-1", "1")])
    # As KubeDL's writer leaves it: a row that names no cluster.
    await db.connection().execute_script("UPDATE job_info SET cluster = NULL")
    assert await Store(cluster="west").upsert(Job, [job("uid-1", "2", "Failed")]) == 0
    assert await clusters("job_info") == ["west"]


async def test_an_archive_from_before_gets_its_rows_cluster_at_start(
    database: str, db_url: str
) -> None:
    await Store(cluster="ignored").upsert(Job, [job("uid-1", "1"), job("uid-2", "1")])
    conn = db.connection()
    for table in TABLES:
        # An archive from before has no index on the column either (SQLite refuses to
        # drop a column an index holds).
        for name in await cluster_indexes(database, table):
            drop = f"DROP INDEX {name}" + (f" ON {table}" if database == "mysql" else "")
            await conn.execute_script(drop)
        await conn.execute_script(f"ALTER TABLE {table} DROP COLUMN cluster")
    await db.close_database()
    await db.open_database(db_url, encryption=DbTls(), cluster="east")
    assert await clusters("job_info") == ["east", "east"]
    for table in TABLES:
        assert "cluster" in await columns(table)
    if database == "mysql":
        # The value it was added with is not its default: a row inserted without a
        # cluster (KubeDL's writer) names none.
        await db.connection().execute_script(
            "INSERT INTO job_info (name, namespace, job_id, version, status, kind, resources, "
            "tenant, owner, deleted, is_in_etcd, gmt_created, gmt_modified) VALUES ('n', 'ns', "
            "'uid-3', '1', 'Running', 'TFJob', '{}', '', '', 0, 1, NOW(), NOW())"
        )
        assert await clusters("job_info") == ["east", "east", None]
    await db.close_database()
    await db.open_database(db_url, encryption=DbTls(), cluster="west")
    # Only the start that adds the column fills it.
    assert (await clusters("job_info"))[:2] == ["east", "east"]


async def test_retention_of_one_cluster_leaves_anothers_rows(database: str) -> None:
    long_ago = CREATED - datetime.timedelta(days=400)
    for cluster, uid in (("east", "east-old"), ("west", "west-old")):
        row = job(uid, "1", "Succeeded")
        row["is_in_etcd"], row["gmt_finished"] = False, long_ago
        await Store(cluster=cluster).upsert(Job, [row])
    before = retention.cutoff(30)
    assert (await retention.prune(before, cluster="east")).jobs == 1
    assert [row.job_id for row in await Job.all()] == ["west-old"]
    # `jobarchive prune` without --cluster: every cluster's gone rows.
    assert (await retention.prune(before)).jobs == 1
    assert await Job.all().count() == 0


async def test_a_log_tail_names_the_stores_cluster_and_is_written_once(database: str) -> None:
    failed = failure("pod-1")
    await write_tails([tails.row(failed, "uid-1", None, "n")], Store(cluster="east"))
    # Another cluster's tail of the same pod uid and container: the first is kept.
    await write_tails([tails.row(failed, "uid-9", None, "n")], Store(cluster="west"))
    assert await clusters("container_log_tail") == ["east"]


async def test_a_cluster_named_as_another_but_for_case_is_refused_at_start(
    database: str, db_url: str
) -> None:
    await Store(cluster="east").upsert(Job, [job("uid-1", "1")])
    await db.close_database()
    for name in ("East", "EAST"):
        if database == "sqlite":
            # SQLite compares bytes: its filters keep the two apart.
            await db.open_database(db_url, encryption=DbTls(), cluster=name)
        else:
            said = f"cluster 'east', which the database does not tell apart from this one, {name!r}"
            with pytest.raises(schema.ClusterClash, match=said):
                await db.open_database(db_url, encryption=DbTls(), cluster=name)
        await db.close_database()
    for name in ("east", "west"):
        await db.open_database(db_url, encryption=DbTls(), cluster=name)
        await db.close_database()


async def test_a_cluster_recording_already_is_warned_of_a_clash_not_stopped(
    database: str, db_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    # Both began recording before either could see the other (or before this version).
    await Store(cluster="east").upsert(Job, [job("uid-1", "1")])
    await Store(cluster="East").upsert(Job, [job("uid-2", "1")])
    await db.close_database()
    for name, other in (("east", "East"), ("East", "east")):
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="jobarchive.storage.schema"):
            await db.open_database(db_url, encryption=DbTls(), cluster=name)
        await db.close_database()
        said = [record.getMessage() for record in caplog.records]
        if database == "sqlite":
            assert said == []
        else:
            assert said == [
                f"the archive holds jobs of the cluster {other!r}, which the database does "
                f"not tell apart from this one, {name!r} (it compares text without regard "
                "to case); reads cannot tell their rows apart"
            ]
