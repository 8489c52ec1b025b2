"""The usage facts on both databases (decision 32): a job's first running time kept by
the upsert through the training operator's rewrite, and an archive recorded before the
facts existed brought up to them: pods' requests counted from their stored resources,
running times not before the finish cleared, node names and queues left NULL."""

import datetime
from typing import Any

from jobarchive.config import DbTls, load
from jobarchive.core.accounting import ACCELERATORS
from jobarchive.recording.convert import job_row, pod_row
from jobarchive.storage import database as db
from jobarchive.storage import dialects, introspection, migration
from jobarchive.storage.migration import Migration, Step
from jobarchive.storage.models import Job, Pod
from jobarchive.storage.readpool import ReadPool
from jobarchive.storage.store import Store
from testbed import objects as o
from testbed.objects import Body
from tests.support import rows

KINDS = load({}).kinds
T0 = datetime.datetime(2026, 11, 20, 10, 0, tzinfo=datetime.UTC)
T1, T2, T3 = (T0 + datetime.timedelta(minutes=minutes) for minutes in (5, 60, 90))
GAUDI = "habana.ai/gaudi"
# Three specs, as three jobs' pods: GPUs, an init container's peak, a limit alone.
SPECS: list[Body] = [
    {"containers": [{"name": "m", "resources": {"requests": {"cpu": "4", "nvidia.com/gpu": 2}}}]},
    {
        "initContainers": [{"name": "i", "resources": {"requests": {"memory": "8Gi"}}}],
        "containers": [{"name": "m", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}],
    },
    {"containers": [{"name": "m", "resources": {"limits": {GAUDI: 4, "amd.com/gpu": 1}}}]},
]
PODS = 1200


def stamp(text: str) -> str:
    return text.replace("+00:00", "Z")


def tfjob(*conditions: Body, version: str, completion: str | None = None) -> Body:
    body = o.with_meta(o.example("tfjob-simple.yaml"), uid="u1", resourceVersion=version)
    body["status"] = o.job_status(*conditions, completion=completion)
    return body


async def test_a_kubeflow_job_keeps_its_first_running_time_through_its_finish(
    database: str,
) -> None:
    running = tfjob(o.condition("Running", at=stamp(T1.isoformat())), version="5")
    finish = stamp(T2.isoformat())
    done = tfjob(
        o.condition("Running", "False", at=finish),
        o.condition("Succeeded", at=finish),
        version="6",
        completion=finish,
    )
    for body in (running, done):
        await Store().upsert(Job, [job_row(body, o.job_kind(KINDS, body), None)])
    row = await Job.get(job_id="u1")
    assert (row.status, row.gmt_job_running, row.gmt_finished) == ("Succeeded", T1, T2)


async def test_a_running_time_moves_only_earlier_and_a_null_never_erases_it(
    database: str,
) -> None:
    async def written(version: str, running: datetime.datetime | None) -> datetime.datetime:
        await Store().upsert(Job, [rows.job(version=version, gmt_job_running=running)])
        stored = (await Job.get(job_id="job-1")).gmt_job_running
        assert stored is not None
        return stored

    assert await written("10", T2) == T2
    assert await written("11", T3) == T2
    assert await written("12", T1) == T1
    assert await written("13", None) == T1
    # A stale write keeps every column, this one too.
    assert await written("9", T0) == T1


def pod_body(index: int) -> Body:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"p-{index}",
            "namespace": "team-a",
            "uid": f"pod-{index:05d}",
            "resourceVersion": "1",
            "creationTimestamp": "2026-11-20T10:00:00Z",
        },
        "spec": {**SPECS[index % len(SPECS)], "nodeName": f"node-{index % 7}"},
    }


async def drop(table: str, columns: list[str]) -> None:
    """The table as a version before ``columns`` left it: their indexes, then them."""
    conn = db.connection()
    dialect = dialects.of(conn)
    if dialect is dialects.MYSQL:
        names = await introspection.of(conn).index_names(conn, table)
        dropped = [f"{name} ON {table}" for cols, name in names.items() if set(cols) & set(columns)]
    else:
        found = await conn.execute_query_dict(
            "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ?", [table]
        )
        dropped = [row["name"] for row in found if any(c in (row["sql"] or "") for c in columns)]
    for index in dropped:
        await conn.execute_script(f"DROP INDEX {index}")
    for column in columns:
        await conn.execute_script(
            f"ALTER TABLE {dialect.quote(table)} DROP COLUMN {dialect.quote(column)}"
        )


async def pods_by_uid() -> dict[str, dict[str, Any]]:
    found = await Pod.all().values("pod_id", "gpus", "cpu_millis", "memory_bytes", "node_name")
    return {row["pod_id"]: row for row in found}


async def test_an_archive_from_before_the_usage_facts_is_brought_up_at_start(
    database: str, db_url: str
) -> None:
    accelerators = ACCELERATORS | {GAUDI}
    recorded = [pod_row(pod_body(i), "job-1", None, None, accelerators) for i in range(PODS)]
    unreadable = rows.pod("pod-cut", resources='{"requ', gpus=None)
    await Store().upsert(Pod, [*recorded, unreadable])
    await Store().upsert(
        Job,
        [
            # Recorded by the rule before: the Running condition's time at the finish.
            rows.job("job-1", status="Succeeded", gmt_job_running=T2, gmt_finished=T2),
            rows.job("job-2", status="Succeeded", gmt_job_running=T1, gmt_finished=T2),
            rows.job("job-3", queue="research"),
        ],
    )
    await drop("replica_info", ["gpus", "cpu_millis", "memory_bytes", "node_name"])
    await drop("job_info", ["queue"])
    await db.close_database()
    await db.open_database(
        db_url, encryption=DbTls(), read_pool=ReadPool(db_url), accelerators=accelerators
    )
    stored = await pods_by_uid()
    assert stored.pop("pod-cut")["gpus"] is None
    for row in recorded:
        counted = stored[row["pod_id"]]
        assert (counted["gpus"], counted["cpu_millis"], counted["memory_bytes"]) == (
            row["gpus"],
            row["cpu_millis"],
            row["memory_bytes"],
        )
        # Not in the resources: unknown for pods recorded before it was kept.
        assert counted["node_name"] is None
    assert {(r["gpus"], r["cpu_millis"], r["memory_bytes"]) for r in stored.values()} == {
        (2, 4000, 0),
        (0, 500, 8 * 2**30),
        (5, 0, 0),
    }
    jobs = {job.job_id: job for job in await Job.all()}
    assert [jobs[uid].gmt_job_running for uid in ("job-1", "job-2")] == [None, T1]
    assert {job.queue for job in jobs.values()} == {None}


async def test_migrate_counts_the_pods_whose_requests_are_unknown(database: str) -> None:
    recorded = [pod_row(pod_body(i), "job-1", None, None) for i in range(3)]
    await Store().upsert(Pod, recorded)
    # As KubeDL's writer leaves its rows: the columns it does not know NULL.
    await Pod.filter(pod_id="pod-00001").update(gpus=None, cpu_millis=None, memory_bytes=None)
    lines: list[str] = []
    await Migration(db.connection()).run(False, lambda step: lines.append(step.describe(False)))
    assert "replica_info: count gpus, cpu_millis, memory_bytes from resources: 1" in lines
    stored = await pods_by_uid()
    assert stored["pod-00001"]["memory_bytes"] == 8 * 2**30
    again: list[str] = []
    await Migration(db.connection()).run(True, lambda step: again.append(step.describe(True)))
    assert not [line for line in again if "gpus" in line]


async def test_a_start_stopped_while_counting_goes_on_at_the_next(
    database: str, db_url: str
) -> None:
    await Store().upsert(Pod, [pod_row(pod_body(i), "job-1", None, None) for i in range(PODS)])
    conn = db.connection()
    ids = sorted(row["id"] for row in await Pod.all().values("id"))
    # What a stop midway leaves: the newest counted, the oldest not yet.
    await Pod.filter(id__lte=ids[PODS // 3]).update(gpus=None, cpu_millis=None)
    assert await migration.upgrade(conn, []) == [
        Step("replica_info", "count gpus, cpu_millis, memory_bytes from resources", 401)
    ]
    assert not await Pod.filter(gpus__isnull=True).exists()
    assert await migration.upgrade(conn, []) == []
    # An oldest row that cannot be counted is not work left: the start stays cheap.
    await Pod.filter(id=ids[0]).update(gpus=None, resources="[")
    assert await migration.upgrade(conn, []) == []
