"""Every list query reads through an index on MariaDB, asserted on EXPLAIN over enough
rows (20,000 jobs, 40,000 pods and Events) that a full scan would be chosen if no index
served: plans, not timings."""

from collections.abc import AsyncIterator
from typing import Any

import pytest

from jobarchive.reading import queries
from jobarchive.reading.queries import EventQuery, JobQuery
from jobarchive.storage import database as db
from testbed import bulk
from testbed.mariadb import Databases

# The inlined SQL spells times with their offset, which MariaDB reads and warns about.
pytestmark = pytest.mark.filterwarnings("ignore:Truncated incorrect datetime value")
SINCE = queries.parse_time("2026-06-01", "t")
UNTIL = queries.parse_time("2026-07-01", "t")


@pytest.fixture(scope="module")
def plans_url(mysql_databases: Databases) -> str:
    return mysql_databases.create("jobarchive_plans")


@pytest.fixture
async def archive(plans_url: str) -> AsyncIterator[None]:
    await db.open_database(plans_url)
    connection = db.connection()
    _, rows = await connection.execute_query("SELECT COUNT(*) AS n FROM job_info")
    if not rows[0]["n"]:
        await bulk.fill(20_000, 2)
        await connection.execute_script("ANALYZE TABLE job_info, replica_info, event_info")
    yield
    await db.close_database()


async def plan(sql: str) -> list[dict[str, Any]]:
    _, rows = await db.connection().execute_query("EXPLAIN " + sql)
    return list(rows)


async def indexes(table: str) -> set[str]:
    """The names of a table's indexes."""
    _, rows = await db.connection().execute_query(f"SHOW INDEX FROM {table}")
    return {row["Key_name"] for row in rows}


def cursor_at(when: str, row_id: int) -> str:
    return queries.encode_cursor(queries.parse_time(when, "t"), row_id)


JOB_QUERIES = {
    "newest": JobQuery(),
    "namespace": JobQuery(namespace="team-7"),
    "name prefix": JobQuery(name_prefix="bert-1"),
    "name prefix in namespace": JobQuery(namespace="team-7", name_prefix="bert"),
    "kind": JobQuery(kind="MPIJob"),
    "status": JobQuery(status="Failed"),
    "owner": JobQuery(owner="user-42"),
    "region": JobQuery(region="ap-south-1"),
    "tenant": JobQuery(tenant="tenant-3"),
    "created window": JobQuery(created_since=SINCE, created_until=UNTIL),
    "finished window": JobQuery(finished_since=SINCE, finished_until=UNTIL),
    "in cluster": JobQuery(in_cluster=True),
    "status and namespace": JobQuery(status="Running", namespace="team-3"),
    "owner since": JobQuery(owner="user-42", created_since=SINCE),
    "name contains": JobQuery(name_contains="llama"),
}


@pytest.mark.parametrize("name", JOB_QUERIES)
@pytest.mark.parametrize("cursor", [None, ("2026-08-01T00:00:00+00:00", 10_000)])
async def test_every_job_list_query_uses_an_index(
    archive: None, name: str, cursor: tuple[str, int] | None
) -> None:
    after = cursor_at(*cursor) if cursor else None
    [step] = await plan(queries.job_page_sql(JOB_QUERIES[name], 50, after))
    print(name, step["key"], step["type"], step["rows"])
    assert step["key"] in await indexes("job_info"), step
    assert step["type"] != "ALL", step


EVENT_QUERIES = {
    "newest": EventQuery(),
    "warnings": EventQuery(type="Warning"),
    "reason": EventQuery(reason="OOMKilling"),
    "reason since": EventQuery(reason="BackOff", since=SINCE),
    "object by name": EventQuery(namespace="team-7", object_name="bert-17-worker-0"),
    "object by uid": EventQuery(object_uid="00000000-0000-0000-0000-000000000000"),
    "window": EventQuery(since=SINCE, until=UNTIL),
}


@pytest.mark.parametrize("name", EVENT_QUERIES)
async def test_every_event_list_query_uses_an_index(archive: None, name: str) -> None:
    [step] = await plan(queries.event_page_sql(EVENT_QUERIES[name], 50))
    print(name, step["key"], step["type"], step["rows"])
    assert step["key"] in await indexes("event_info"), step
    assert step["type"] != "ALL", step
