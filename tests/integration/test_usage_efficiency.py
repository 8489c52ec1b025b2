"""Usage's efficiency columns (decision 47) on both databases, through the real reading
path, over pods whose figures are computed by hand: a pod across midnight weighs in
each day by its seconds there, a group mixing measured and unknown jobs counts the
unknown ones, a group of one job has the job's own figures; the whole days (the daily
roll-up), the edges and every pod read live answer alike; the CLI, the API, its CSV
and the console show them."""

import asyncio
import datetime
import json
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from jobarchive.core.efficiency import MEASURED, NO_DATA, RATES, PodEfficiency
from jobarchive.core.rows import DEFAULT_CLUSTER
from jobarchive.reading import api, auth, usage
from jobarchive.reading.queries import rollup
from jobarchive.reading.queries.measured import efficiency_json
from jobarchive.storage import database as db
from jobarchive.storage import migration, schema
from jobarchive.storage.models import Job, Pod, UsageDay
from jobarchive.storage.store import Store
from jobarchive.storage.summaries import Summary
from tests.support import rows
from tests.support.small_archive import run


def at(day: int, hour: int, minute: int = 0) -> datetime.datetime:
    return datetime.datetime(2026, 11, day, hour, minute, tzinfo=datetime.UTC)


SINCE, UNTIL = at(20, 0), at(22, 0)
GIB = 2**30


def pod(uid: str, job: str, start: datetime.datetime, end: datetime.datetime, **f: Any) -> Any:
    fields = {"namespace": "team-a", **f}
    return rows.pod(uid, name=uid, job_id=job, gmt_started=start, gmt_finished=end, **fields)


@pytest.fixture
async def archive(database: str) -> None:
    """In team-a: job A (alice), measured, a0 across midnight and a1 on the 21st; job B
    (bob) never summarised; job C (carol), Prometheus had no data. In team-b: job D
    (dave), measured."""
    ended = {"namespace": "team-a", "status": "Succeeded"}
    jobs = [
        rows.job(
            "a", name="a", owner="alice", gmt_created=at(20, 21), **_ran(20, 22, 21, 2), **ended
        ),
        rows.job(
            "b", name="b", owner="bob", gmt_created=at(21, 9), **_ran(21, 10, 21, 12), **ended
        ),
        rows.job(
            "c", name="c", owner="carol", gmt_created=at(20, 9), **_ran(20, 10, 20, 11), **ended
        ),
        rows.job(
            "d",
            name="d",
            owner="dave",
            gmt_created=at(20, 9),
            **_ran(20, 10, 20, 12),
            **{**ended, "namespace": "team-b"},
        ),
    ]
    # a0: 2 GPUs, 4 CPUs, a 4 GiB limit (a 1 GiB request), 22:00 to 02:00, 2 h a day.
    limited = json.dumps({"limits": {"memory": "4Gi"}, "requests": {"memory": "1Gi"}})
    a0 = pod(
        "a0",
        "a",
        at(20, 22),
        at(21, 2),
        gpus=2,
        cpu_millis=4000,
        memory_bytes=GIB,
        resources=limited,
    )
    # a1: 1 GPU, 1 CPU, 3 GiB requested, 00:00 to 01:00 on the 21st.
    a1 = pod("a1", "a", at(21, 0), at(21, 1), gpus=1, cpu_millis=1000, memory_bytes=3 * GIB)
    b0 = pod("b0", "b", at(21, 10), at(21, 12), gpus=4, cpu_millis=1000)
    c0 = pod("c0", "c", at(20, 10), at(20, 11), gpus=1, cpu_millis=1000)
    d0 = pod(
        "d0",
        "d",
        at(20, 10),
        at(20, 12),
        gpus=8,
        cpu_millis=8000,
        memory_bytes=GIB,
        namespace="team-b",
    )
    await Store().upsert(Job, jobs)
    await Store().upsert(Pod, [a0, a1, b0, c0, d0])
    measured = {
        "a0": PodEfficiency(
            MEASURED,
            gpu_activity_mean=0.5,
            unused_gpus=1,
            energy_joules=7200.0,
            cpu_efficiency=0.25,
            memory_peak_bytes=2 * GIB,
            memory_peak_ratio=0.5,
        ),
        "a1": PodEfficiency(
            MEASURED,
            gpu_activity_mean=1.0,
            unused_gpus=0,
            energy_joules=3600.0,
            cpu_efficiency=1.0,
            memory_peak_bytes=0.6 * GIB,
            memory_peak_ratio=0.2,
        ),
        "c0": PodEfficiency(NO_DATA),
        "d0": PodEfficiency(
            MEASURED,
            gpu_activity_mean=0.1,
            unused_gpus=6,
            cpu_efficiency=0.5,
            memory_peak_ratio=0.9,
            memory_peak_bytes=0.9 * GIB,
        ),
    }
    pods = {row["pod_id"]: row for row in (a0, a1, c0, d0)}
    # Written after the pods, as the summarising pass does: their jobs' days rewritten.
    await Store().upsert(
        Summary, [rows.summary(pods[uid], found) for uid, found in measured.items()]
    )


def _ran(d0: int, h0: int, d1: int, h1: int) -> dict[str, Any]:
    return {"gmt_job_running": at(d0, h0), "gmt_finished": at(d1, h1)}


def by(found: list[dict[str, Any]], key: str) -> dict[Any, dict[str, Any]]:
    return {tuple(row[k] for k in key.split(",")): row for row in found}


def efficiency(row: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(row[name] for name in usage.EFFICIENCY)


# team-a over both days, by hand. GPU activity by GPU-seconds: a0 2 GPUs x 4 h at 0.5,
# a1 1 x 1 h at 1.0: (8 x 0.5 + 1) / 9. Idle: 8 x 0.5 GPU-hours. Never used: a0's
# one GPU x 4 h. CPU by CPU-seconds requested: (16 x 0.25 + 1 x 1.0) / 17. Memory by
# the limit's byte-hours (a0's limit, 4 GiB, not its request): (16 x 0.5 + 3 x 0.2)
# / 19. Energy: 10,800 J. Jobs: A measured, B and C unknown.
TEAM_A = (0.5556, 4.0, 4.0, 0.2941, 0.4526, 0.003, 2)
# The 20th: a0's first 2 h alone; C unknown, B not yet created.
DAY_20 = (0.5, 2.0, 2.0, 0.25, 0.5, 0.001, 1)
# The 21st: a0's last 2 h and a1: (4 x 0.5 + 1) / 5; CPU (8 x 0.25 + 1) / 9; memory
# (8 x 0.5 + 3 x 0.2) / 11; energy 3,600 + 3,600 J; B unknown.
DAY_21 = (0.6, 2.0, 2.0, 0.3333, 0.4182, 0.002, 1)


async def test_a_group_weighs_each_pod_by_its_share_of_each_period(archive: None) -> None:
    for from_pods in (False, True):
        found = by(
            await rollup("namespace", since=SINCE, until=UNTIL, from_pods=from_pods), "namespace"
        )
        assert efficiency(found[("team-a",)]) == TEAM_A, from_pods
        # D: no energy known, so none, never zero; a group of one measured job.
        assert efficiency(found[("team-b",)]) == (0.1, 14.4, 12.0, 0.5, 0.9, None, 0)
        daily = by(
            await rollup("namespace", "day", since=SINCE, until=UNTIL, from_pods=from_pods),
            "namespace,period",
        )
        assert efficiency(daily[("team-a", "2026-11-20")]) == DAY_20, from_pods
        assert efficiency(daily[("team-a", "2026-11-21")]) == DAY_21, from_pods


async def test_the_edges_read_live_weigh_as_the_whole_days(archive: None) -> None:
    # No whole day inside: both parts of a0 and a1 read live, with their summaries.
    inside = by(await rollup("namespace", since=at(20, 12), until=at(21, 12)), "namespace")
    assert efficiency(inside[("team-a",)])[:6] == TEAM_A[:6]
    # The 21st's part alone, cut at the window's start inside a0's run.
    late = by(await rollup("namespace", since=at(21, 0), until=at(21, 12)), "namespace")
    assert efficiency(late[("team-a",)]) == DAY_21


async def test_a_group_of_one_job_has_the_jobs_own_figures(archive: None) -> None:
    owners = by(await rollup("owner", since=SINCE, until=UNTIL), "owner")
    job = await efficiency_json("a")
    assert job is not None
    shown = {name: owners[("alice",)][name] for name in usage.EFFICIENCY[:-1]}
    assert shown == {name: round(job[name], 3 if name.endswith("hours") else 4) for name in shown}
    assert owners[("alice",)][usage.UNKNOWN_JOBS] == 0
    # Unknown is never zero: no figure, the job counted.
    assert efficiency(owners[("bob",)]) == (None,) * 6 + (1,)
    assert efficiency(owners[("carol",)]) == (None,) * 6 + (1,)


async def test_a_summary_written_later_rewrites_its_jobs_days(archive: None) -> None:
    before = await UsageDay.filter(job_id="b").values("measured_gpu_s")
    assert before == [{"measured_gpu_s": None}]
    b0 = pod("b0", "b", at(21, 10), at(21, 12), gpus=4, cpu_millis=1000)
    await Store().upsert(
        Summary, [rows.summary(b0, PodEfficiency(MEASURED, gpu_activity_mean=0.0))]
    )
    after = await UsageDay.filter(job_id="b").values("measured_gpu_s")
    assert after == [{"measured_gpu_s": 4 * 7200.0}]
    found = by(await rollup("owner", since=SINCE, until=UNTIL), "owner")
    assert efficiency(found[("bob",)])[:2] == (0.0, 8.0)
    assert found[("bob",)][usage.UNKNOWN_JOBS] == 0


async def test_a_namespace_or_a_cluster_reads_its_own_figures_alone(archive: None) -> None:
    # E: team-a's job in cluster west, 1 GPU for an hour, always busy.
    west = Store(cluster="west")
    e = rows.job(
        "e",
        name="e",
        namespace="team-a",
        owner="alice",
        status="Succeeded",
        gmt_created=at(20, 9),
        **_ran(20, 10, 20, 11),
    )
    e0 = pod("e0", "e", at(20, 10), at(20, 11), gpus=1)
    await west.upsert(Job, [e])
    await west.upsert(Pod, [e0])
    await west.upsert(Summary, [rows.summary(e0, PodEfficiency(MEASURED, gpu_activity_mean=1.0))])
    for from_pods in (False, True):
        mine = await rollup(
            "owner", namespace="team-b", since=SINCE, until=UNTIL, from_pods=from_pods
        )
        assert [(row["owner"], row["gpu_activity_mean"]) for row in mine] == [("dave", 0.1)]
        home = by(
            await rollup(
                "owner", since=SINCE, until=UNTIL, cluster=(DEFAULT_CLUSTER,), from_pods=from_pods
            ),
            "owner",
        )
        # Alice's figures are job A's alone: E's busy hour is west's.
        assert efficiency(home[("alice",)]) == (*TEAM_A[:6], 0)
        there = by(
            await rollup("owner", since=SINCE, until=UNTIL, cluster="west", from_pods=from_pods),
            "owner",
        )
        assert list(there) == [("alice",)]
        assert efficiency(there[("alice",)]) == (1.0, 0.0, None, None, None, None, 0)


async def test_the_cli_api_csv_and_console_show_the_columns(archive: None, db_url: str) -> None:
    expected = await rollup("namespace", since=SINCE, until=UNTIL)
    flags = ["--since=2026-11-20", "--until=2026-11-22"]
    ran = await asyncio.to_thread(run, db_url, "usage", *flags, "-o", "json")
    assert json.loads(ran.stdout) == {"items": expected}, ran.stderr
    table = await asyncio.to_thread(run, db_url, "usage", *flags, COLUMNS="80")
    assert max(len(line) for line in table.stdout.splitlines()) <= 80
    assert "gpu activity" not in table.stdout
    wide = await asyncio.to_thread(run, db_url, "usage", *flags, "-o", "wide")
    assert "gpu activity" in wide.stdout and "0.5556" in wide.stdout
    csv = await asyncio.to_thread(run, db_url, "usage", *flags, "-o", "csv")
    assert csv.stdout.splitlines()[0].endswith('"energy_kwh","efficiency_unknown_jobs"')
    assert csv.stdout.splitlines()[1].endswith("0.5556,4.0,4.0,0.2941,0.4526,0.003,2")
    async with TestClient(TestServer(api.Api(auth.NoAuth()).site())) as client:
        query = "since=2026-11-20&until=2026-11-22"
        answer = await client.get(f"{api.PREFIX}/usage?{query}")
        assert await answer.json() == {"items": expected}
        csv_answer = await client.get(f"{api.PREFIX}/usage?{query}", headers={"Accept": "text/csv"})
        assert (await csv_answer.text()).splitlines() == csv.stdout.splitlines()
        page = await client.get(f"/usage?{query}")
        text = await page.text()
        assert page.status == 200, text
        assert "GPU activity" in text and "56%" in text and "2 unknown" in text


async def test_days_from_before_the_weights_are_rewritten_at_start(archive: None) -> None:
    conn = db.connection()
    for column in RATES:
        await conn.execute_script(f"ALTER TABLE usage_day DROP COLUMN {column}")
    added = await schema.ensure_schema(conn)
    assert {f"usage_day.{column}" for column in RATES} <= set(added)
    steps = await migration.upgrade(conn, added)
    # A, C and D have summaries: their days rewritten, in one batch.
    assert [(step.what, step.count) for step in steps] == [("rewrite the summarised jobs' days", 3)]
    found = by(await rollup("namespace", since=SINCE, until=UNTIL), "namespace")
    assert efficiency(found[("team-a",)]) == TEAM_A
    assert await migration.upgrade(conn, []) == []


async def test_jobs_measured_before_their_mark_are_marked_at_start(archive: None) -> None:
    before = by(await rollup("namespace", since=SINCE, until=UNTIL), "namespace")
    conn = db.connection()
    await conn.execute_script("ALTER TABLE job_info DROP COLUMN gmt_measured")
    added = await schema.ensure_schema(conn)
    assert "job_info.gmt_measured" in added
    steps = await migration.upgrade(conn, added)
    marked = await Job.filter(gmt_measured__isnull=False).values_list("job_id", flat=True)
    measured = await Summary.filter(outcome=MEASURED).values_list("job_id", flat=True)
    assert sorted(marked) == sorted(set(measured)) and marked
    assert ("mark the jobs a pod of which was measured", len(marked)) in [
        (step.what, step.count) for step in steps
    ]
    after = by(await rollup("namespace", since=SINCE, until=UNTIL), "namespace")
    assert [row[usage.UNKNOWN_JOBS] for row in after.values()] == [
        row[usage.UNKNOWN_JOBS] for row in before.values()
    ]
