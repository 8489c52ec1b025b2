"""The schema on the real MariaDB server: columns, keys and indexes as ARCHITECTURE.md specifies."""

import pytest

from jobarchive.config import DbTls
from jobarchive.storage import database as db
from jobarchive.storage import schema

pytestmark = pytest.mark.parametrize("db_url", ["mysql"], indirect=True)


async def columns(table: str) -> dict[str, str]:
    _, rows = await db.connection().execute_query(
        "SELECT COLUMN_NAME, COLUMN_TYPE FROM information_schema.COLUMNS "
        "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = %s",
        [table],
    )
    return {row["COLUMN_NAME"]: row["COLUMN_TYPE"] for row in rows}


async def indexes(table: str) -> dict[str, tuple[bool, tuple[str, ...]]]:
    _, rows = await db.connection().execute_query(
        "SELECT INDEX_NAME, NON_UNIQUE, COLUMN_NAME FROM information_schema.STATISTICS "
        "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = %s ORDER BY INDEX_NAME, SEQ_IN_INDEX",
        [table],
    )
    result: dict[str, tuple[bool, tuple[str, ...]]] = {}
    for row in rows:
        unique, cols = result.get(row["INDEX_NAME"], (not row["NON_UNIQUE"], ()))
        result[row["INDEX_NAME"]] = (unique, (*cols, row["COLUMN_NAME"]))
    return result


SEED_JOB = {
    "id",
    "name",
    "namespace",
    "job_id",
    "version",
    "status",
    "kind",
    "resources",
    "deploy_region",
    "tenant",
    "owner",
    "deleted",
    "is_in_etcd",
    "gmt_created",
    "gmt_modified",
    "gmt_finished",
}
SEED_POD = {
    "id",
    "name",
    "namespace",
    "pod_id",
    "version",
    "status",
    "image",
    "job_id",
    "replica_type",
    "resources",
    "host_ip",
    "pod_ip",
    "deploy_region",
    "deleted",
    "is_in_etcd",
    "remark",
    "gmt_created",
    "gmt_modified",
    "gmt_started",
    "gmt_finished",
}
SEED_EVENT = {
    "name",
    "kind",
    "type",
    "obj_namespace",
    "obj_name",
    "obj_uid",
    "reason",
    "message",
    "count",
    "region",
    "first_timestamp",
    "last_timestamp",
}


async def test_every_seed_column_exists_under_its_seed_name(database: str) -> None:
    assert set(await columns("job_info")) >= SEED_JOB
    assert set(await columns("replica_info")) >= SEED_POD
    assert SEED_EVENT | {"id", "event_id"} <= set(await columns("event_info"))


async def test_columns_are_wide_enough_for_kubernetes(database: str) -> None:
    job, pod, event = (
        await columns("job_info"),
        await columns("replica_info"),
        await columns("event_info"),
    )
    assert job["name"] == pod["name"] == event["obj_name"] == "varchar(253)"
    assert event["name"] == "varchar(512)"
    assert job["resources"] == pod["resources"] == event["message"] == pod["remark"] == "longtext"
    assert event["count"] == "int(11)"
    assert job["gmt_created"] == "datetime(6)"


async def test_uids_are_unique_keys_and_ids_auto_increment(database: str) -> None:
    for table, key in (
        ("job_info", "job_id"),
        ("replica_info", "pod_id"),
        ("event_info", "event_id"),
    ):
        assert (True, (key,)) in (await indexes(table)).values()
        assert (await indexes(table))["PRIMARY"] == (True, ("id",))
    _, rows = await db.connection().execute_query(
        "SELECT TABLE_NAME, EXTRA FROM information_schema.COLUMNS "
        "WHERE TABLE_SCHEMA = DATABASE() AND COLUMN_NAME = 'id'"
    )
    assert {row["EXTRA"] for row in rows} == {"auto_increment"}


async def test_every_filter_and_page_has_its_index(database: str) -> None:
    assert {
        (False, ("namespace", "name")),
        (False, ("status", "gmt_created")),
        (False, ("name", "gmt_created")),
        (False, ("tenant", "gmt_created")),
        (False, ("gmt_created",)),
    } <= set((await indexes("job_info")).values())
    assert (False, ("job_id", "gmt_created")) in (await indexes("replica_info")).values()
    assert {
        (False, ("obj_uid",)),
        (False, ("last_timestamp",)),
        (False, ("job_id", "last_timestamp")),
    } <= set((await indexes("event_info")).values())


async def test_text_is_utf8mb4(database: str) -> None:
    _, rows = await db.connection().execute_query(
        "SELECT DISTINCT CHARACTER_SET_NAME AS cs FROM information_schema.COLUMNS "
        "WHERE TABLE_SCHEMA = DATABASE() AND CHARACTER_SET_NAME IS NOT NULL"
    )
    assert {row["cs"] for row in rows} == {"utf8mb4"}


async def test_creating_the_schema_again_is_harmless(database: str, db_url: str) -> None:
    await db.close_database()
    await db.open_database(db_url, encryption=DbTls())
    assert set(await columns("job_info")) >= SEED_JOB


async def test_an_index_missing_from_an_older_database_is_created_at_start(
    database: str,
) -> None:
    conn = db.connection()
    assert await schema.ensure_indexes(conn) == []
    names = {
        name
        for name, (_, columns) in (await indexes("job_info")).items()
        if columns == ("owner", "gmt_created")
    }
    for name in names:
        await conn.execute_script(f"DROP INDEX {name} ON job_info")
    assert await schema.ensure_indexes(conn) == ["ix_job_info_owner_gmt_created"]
    assert (False, ("owner", "gmt_created")) in (await indexes("job_info")).values()


async def test_a_column_missing_from_an_older_database_is_added_at_start(database: str) -> None:
    conn = db.connection()
    assert await schema.ensure_columns(conn) == []
    await conn.execute_script("ALTER TABLE job_info DROP COLUMN api_version")
    assert await schema.ensure_columns(conn) == ["job_info.api_version"]
    assert (await columns("job_info"))["api_version"] == "varchar(317)"
