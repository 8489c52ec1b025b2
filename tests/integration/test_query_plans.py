"""Every list query reads through an index on MariaDB, asserted on EXPLAIN over enough
rows (20,000 jobs, 40,000 pods and Events) that a full scan would be chosen if no index
served: plans, not timings."""

from collections.abc import AsyncIterator
from typing import Any

import pytest

from jobarchive.config import DbTls
from jobarchive.core.efficiency import MEASURED, PodEfficiency
from jobarchive.reading import queries
from jobarchive.reading.queries import EventQuery, Identity, JobQuery, PodQuery
from jobarchive.storage import database as db
from jobarchive.storage.models import Pod
from jobarchive.storage.readpool import ReadPool
from jobarchive.storage.store import Store
from jobarchive.storage.summaries import Summary
from testbed import bulk
from testbed.mariadb import Databases
from tests.support import rows

SINCE = queries.parse_time("2026-06-01", "t")
UNTIL = queries.parse_time("2026-07-01", "t")


@pytest.fixture(scope="module")
def plans_url(mysql_databases: Databases) -> str:
    return mysql_databases.create("jobarchive_plans")


@pytest.fixture
async def archive(plans_url: str) -> AsyncIterator[None]:
    await db.open_database(plans_url, encryption=DbTls(), read_pool=ReadPool(plans_url))
    connection = db.connection()
    _, rows = await connection.execute_query("SELECT COUNT(*) AS n FROM job_info")
    if not rows[0]["n"]:
        await bulk.fill(20_000, 2)
        await connection.execute_script("ANALYZE TABLE job_info, replica_info, event_info")
    yield
    await db.close_database()


async def plan(sql: str) -> list[dict[str, Any]]:
    # Inlined, a time keeps its UTC offset, which MariaDB cannot compare as a DATETIME;
    # the driver sends it as a plain UTC value.
    _, rows = await db.connection().execute_query("EXPLAIN " + sql.replace("+00:00'", "'"))
    return list(rows)


async def leading_columns(table: str) -> dict[str, str]:
    """Each index of a table by name, with the column it is ordered by first."""
    _, rows = await db.connection().execute_query(f"SHOW INDEX FROM {table}")
    return {row["Key_name"]: row["Column_name"] for row in rows if row["Seq_in_index"] == 1}


def cursor_at(when: str, row_id: int) -> str:
    return queries.encode_cursor("jobs", queries.parse_time(when, "t"), row_id)


# Each query, and the column its filter is read by: the index the plan must use. Filters
# no index serves (name_contains, region) are only taken within a namespace.
JOB_QUERIES = {
    "newest": (JobQuery(), "gmt_created"),
    "namespace": (JobQuery(namespace="team-7"), "namespace"),
    "name prefix": (JobQuery(name_prefix="bert-1"), "name"),
    "name prefix in namespace": (JobQuery(namespace="team-7", name_prefix="bert"), "namespace"),
    "kind": (JobQuery(kind="MPIJob"), "kind"),
    "status": (JobQuery(status="Failed"), "status"),
    "owner": (JobQuery(owner="user-42"), "owner"),
    "region in namespace": (JobQuery(namespace="team-7", region="ap-south-1"), "namespace"),
    "tenant": (JobQuery(tenant="tenant-3"), "tenant"),
    "queue": (JobQuery(queue="queue-3"), "queue"),
    "queue in namespace": (JobQuery(namespace="team-7", queue="queue-3"), "namespace"),
    "created window": (JobQuery(created_since=SINCE, created_until=UNTIL), "gmt_created"),
    "finished window": (JobQuery(finished_since=SINCE, finished_until=UNTIL), "gmt_finished"),
    # Read along the time index, most recent first, until a page is full: most jobs are
    # in the cluster or gone in runs, so the page fills early.
    "in cluster": (JobQuery(in_cluster=True), "gmt_created"),
    "status and namespace": (JobQuery(status="Running", namespace="team-3"), "namespace"),
    # The fill is one cluster's: another's rows are few, read off the cluster's index.
    "cluster": (JobQuery(cluster="west"), "cluster"),
    "name prefix and cluster": (JobQuery(name_prefix="bert-1", cluster="west"), "name"),
    # A caller's scope (decision 36) sifts what the other filters' index reads.
    "scope in namespace": (JobQuery(namespace="team-7", cluster=("default", "west")), "namespace"),
    "owner since": (JobQuery(owner="user-42", created_since=SINCE), "owner"),
    "name contains in namespace": (
        JobQuery(namespace="team-7", name_contains="llama"),
        "namespace",
    ),
}


@pytest.mark.parametrize("name", JOB_QUERIES)
@pytest.mark.parametrize("cursor", [None, ("2026-08-01T00:00:00+00:00", 10_000)])
async def test_every_job_list_query_uses_an_index(
    archive: None, name: str, cursor: tuple[str, int] | None
) -> None:
    after = cursor_at(*cursor) if cursor else None
    query, column = JOB_QUERIES[name]
    [step] = await plan(await queries.job_page_sql(query, 50, after))
    print(name, step["key"], step["type"], step["rows"])
    assert (await leading_columns("job_info")).get(step["key"]) == column, step
    assert step["type"] != "ALL", step


def unique_miss(step: dict[str, Any]) -> bool:
    """A uid no row has: MariaDB reads its unique index while planning and finds none."""
    return step["key"] is None and "Impossible WHERE" in str(step["Extra"])


IDENTIFIED_QUERIES = {
    "exact name": (JobQuery(), Identity(name="bert-17"), ("name",)),
    "exact name in namespace": (
        JobQuery(namespace="team-7"),
        Identity(name="bert-17"),
        "namespace",
    ),
    "exact name and status": (JobQuery(status="Failed"), Identity(name="bert-17"), ("name",)),
    "uid": (JobQuery(), Identity(uid="00000000-0000-0000-0000-000000000000"), ("job_id",)),
}


@pytest.mark.parametrize("name", IDENTIFIED_QUERIES)
async def test_the_aggregated_apis_name_and_uid_selectors_use_an_index(
    archive: None, name: str
) -> None:
    query, identity, columns = IDENTIFIED_QUERIES[name]
    [step] = await plan(await queries.job_page_sql(query, 50, None, identity))
    print(name, step["key"], step["type"], step["rows"])
    if unique_miss(step):
        return
    assert (await leading_columns("job_info")).get(step["key"]) in columns, step
    assert step["type"] != "ALL", step


POD_QUERIES = {
    "newest": (PodQuery(), "gmt_created"),
    "namespace": (PodQuery(namespace="team-7"), "namespace"),
    "job": (PodQuery(job_uid="00000000-0000-0000-0000-000000000000"), "job_id"),
    "name in namespace": (PodQuery(namespace="team-7", exact_name="bert-17-worker-0"), "namespace"),
    "uid": (PodQuery(uid="00000000-0000-0000-0000-000000000000"), "pod_id"),
    "failed in namespace": (PodQuery(namespace="team-7", status="Failed"), "namespace"),
}


@pytest.mark.parametrize("name", POD_QUERIES)
@pytest.mark.parametrize("cursor", [None, ("2026-08-01T00:00:00+00:00", 10_000)])
async def test_every_pod_list_query_uses_an_index(
    archive: None, name: str, cursor: tuple[str, int] | None
) -> None:
    query, column = POD_QUERIES[name]
    after = None
    if cursor:
        after = queries.encode_cursor(
            "archived-pods", queries.parse_time(cursor[0], "t"), cursor[1]
        )
    [step] = await plan(queries.pod_page_sql(query, 50, after))
    print(name, step["key"], step["type"], step["rows"])
    if unique_miss(step) and column == "pod_id":
        return
    assert (await leading_columns("replica_info")).get(step["key"]) == column, step
    assert step["type"] != "ALL", step


EVENT_QUERIES = {
    "newest": (EventQuery(), "last_timestamp"),
    "warnings in namespace": (EventQuery(namespace="team-7", type="Warning"), "obj_namespace"),
    "warnings since": (EventQuery(type="Warning", since=SINCE), "last_timestamp"),
    "reason": (EventQuery(reason="OOMKilling"), "reason"),
    "reason since": (EventQuery(reason="BackOff", since=SINCE), "reason"),
    "object by name": (
        EventQuery(namespace="team-7", object_name="bert-17-worker-0"),
        "obj_namespace",
    ),
    "object by uid": (EventQuery(object_uid="00000000-0000-0000-0000-000000000000"), "obj_uid"),
    "window": (EventQuery(since=SINCE, until=UNTIL), "last_timestamp"),
}


@pytest.mark.parametrize("name", EVENT_QUERIES)
async def test_every_event_list_query_uses_an_index(archive: None, name: str) -> None:
    query, column = EVENT_QUERIES[name]
    [step] = await plan(await queries.event_page_sql(query, 50))
    print(name, step["key"], step["type"], step["rows"])
    assert (await leading_columns("event_info")).get(step["key"]) == column, step
    assert step["type"] != "ALL", step


@pytest.mark.parametrize(
    "query",
    [
        JobQuery(name_contains="llama"),
        JobQuery(region="ap-south-1"),
        EventQuery(type="Warning"),
        EventQuery(object_kind="Pod"),
        EventQuery(object_name="bert-17-worker-0"),
        EventQuery(cluster="west"),
    ],
    ids=repr,
)
async def test_a_filter_no_index_serves_is_refused_without_a_namespace_or_a_window(
    query: JobQuery | EventQuery,
) -> None:
    with pytest.raises(queries.BadQuery, match="name a namespace or a"):
        await page_sql(query)


async def page_sql(query: JobQuery | EventQuery) -> str:
    if isinstance(query, JobQuery):
        return await queries.job_page_sql(query)
    return await queries.event_page_sql(query)


async def test_the_namespaces_a_landing_offers_are_read_off_an_index(archive: None) -> None:
    [step] = await plan(queries.job_namespaces_sql(100))
    print(step)
    assert (await leading_columns("job_info")).get(step["key"]) == "namespace", step
    assert "for group-by" in (step["Extra"] or ""), step  # one index entry per namespace
    names, more = await queries.job_namespaces(100)
    assert names == sorted(names) and len(names) == len(set(names)) and not more


async def test_a_clusters_namespaces_a_landing_offers_are_read_off_an_index(archive: None) -> None:
    [step] = await plan(queries.job_namespaces_sql(20, "default"))
    print(step)
    _, rows = await db.connection().execute_query("SHOW INDEX FROM job_info")
    columns = [row["Column_name"] for row in rows if row["Key_name"] == step["key"]]
    assert columns == ["cluster", "namespace"], step
    assert "for group-by" in (step["Extra"] or ""), step  # one index entry per namespace
    every = await queries.job_namespaces(20)
    assert await queries.job_namespaces(20, ("default",)) == every
    assert await queries.job_namespaces(20, ("elsewhere",)) == ([], False)


async def test_the_clusters_a_scope_reviews_are_read_off_an_index(archive: None) -> None:
    [step] = await plan(queries.job_clusters_sql(100))
    print(step)
    assert (await leading_columns("job_info")).get(step["key"]) == "cluster", step
    assert "for group-by" in (step["Extra"] or ""), step  # one index entry per cluster
    assert await queries.job_clusters(100) == (["default"], False)


@pytest.mark.parametrize("after", [None, ("2026-06-10", 5000)], ids=["first", "next"])
async def test_the_exports_batches_are_read_off_the_creation_index(
    archive: None, after: tuple[str, int] | None
) -> None:
    from jobarchive.reading.queries.created import created_page

    keyset = (queries.parse_time(after[0], "t"), after[1]) if after else None
    [step] = await plan(created_page(SINCE, UNTIL, keyset, 1000).sql(params_inline=True))
    assert (await leading_columns("job_info")).get(step["key"]) == "gmt_created", step
    assert step["type"] == "range" and "filesort" not in str(step["Extra"]), step


async def test_a_roll_up_s_running_pods_are_read_off_one_index_alone(archive: None) -> None:
    from jobarchive.reading import usage
    from jobarchive.reading.queries import rollups
    from jobarchive.reading.queries.windows import Window

    window = Window("namespace", SINCE, UNTIL, None, None)
    cut = usage.periods(SINCE, UNTIL, None)
    sql = rollups.pod_hours_sql(window, cut, SINCE, UNTIL, rollups.RUNNING, pods_first=True)
    _, steps = await db.connection().execute_query("EXPLAIN " + sql, window.params)
    [pods] = [step for step in steps if step["table"] == "p"]
    assert (await leading_columns("replica_info")).get(pods["key"]) == "gmt_finished", pods
    # Covering: no pod's row is read, only the index (decision 33).
    assert "Using index" in (pods["Extra"] or "").split("; "), pods


async def test_a_roll_up_reads_a_finished_pod_s_summary_by_its_unique_index(
    archive: None,
) -> None:
    from jobarchive.reading import usage
    from jobarchive.reading.queries import rollups
    from jobarchive.reading.queries.windows import Window

    if not await Summary.exists():
        pods = await Pod.all().order_by("id").limit(4000).values()
        found = PodEfficiency(MEASURED, gpu_activity_mean=0.5)
        await Store().upsert(Summary, [rows.summary(pod, found) for pod in pods])  # type: ignore[arg-type]
        await db.connection().execute_script("ANALYZE TABLE pod_efficiency")
    window = Window("namespace", SINCE, UNTIL, None, None)
    cut = usage.periods(SINCE, UNTIL, None)
    sql = rollups.pod_hours_sql(window, cut, SINCE, UNTIL, "p.gmt_finished IS NOT NULL")
    _, steps = await db.connection().execute_query("EXPLAIN " + sql, window.params)
    [summaries] = [step for step in steps if step["table"] == "e"]
    assert (await leading_columns("pod_efficiency")).get(summaries["key"]) == "pod_id", summaries
    assert summaries["type"] == "eq_ref", summaries


async def test_a_roll_up_reads_a_failed_jobs_class_by_its_unique_index(archive: None) -> None:
    from jobarchive.reading.queries.windows import class_sql

    steps = await plan(f"SELECT {class_sql('d')} AS class FROM usage_day d")
    [failures] = [step for step in steps if step["table"] == "f"]
    assert (await leading_columns("job_failure")).get(failures["key"]) == "job_id", failures
    assert failures["type"] in ("eq_ref", "unique_subquery", "const", "ref"), failures
