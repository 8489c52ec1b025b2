"""Usage rolled up on both databases over rows whose figures are computed by hand: a
pod's time cut at the window's and the days' edges, a pod that never started, a failed
job's GPU-hours under its failure class (Unclassified until it has one), by failure
class, a running job counted to the window's end."""

import asyncio
import datetime
import json
import pathlib
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from jobarchive.core.rows import DEFAULT_CLUSTER
from jobarchive.reading import api, auth, usage
from jobarchive.reading.queries import BadQuery, rollup
from jobarchive.reading.queries.facts import job_usage
from jobarchive.storage import database as db
from jobarchive.storage.models import Job, Pod
from jobarchive.storage.store import Store
from tests.support import rows
from tests.support.failures import classify, failure
from tests.support.small_archive import run


def at(day: int, hour: int, minute: int = 0) -> datetime.datetime:
    return datetime.datetime(2026, 11, day, hour, minute, tzinfo=datetime.UTC)


SINCE, UNTIL = at(20, 0), at(22, 0)
OOM = "OOMKilled (exit code 137): the container used more memory than its limit"


@pytest.fixture
async def archive(database: str) -> None:
    jobs = [
        # A: two workers, 2 GPUs for 2 h and 1 GPU for 1 h: 5 GPU-hours, 9 CPU-hours.
        rows.job(
            "a",
            name="a",
            namespace="team-a",
            owner="alice",
            queue="research",
            status="Succeeded",
            gmt_created=at(20, 10),
            gmt_job_running=at(20, 10, 5),
            gmt_finished=at(20, 12, 5),
        ),
        # B: across midnight, 4 GPUs from 22:10 to 02:00, failed; its second pod never ran.
        rows.job(
            "b",
            name="b",
            namespace="team-a",
            owner="bob",
            queue="research",
            status="Failed",
            gmt_created=at(20, 22),
            gmt_job_running=at(20, 22, 10),
            gmt_finished=at(21, 2),
        ),
        # C: running since 09:00 on 8 GPUs: counted to the window's end.
        rows.job(
            "c",
            name="c",
            namespace="team-b",
            owner="carol",
            gmt_created=at(21, 9),
            gmt_job_running=at(21, 9),
        ),
    ]
    pods = [
        rows.pod(
            "a0",
            job_id="a",
            namespace="team-a",
            gpus=2,
            cpu_millis=4000,
            gmt_started=at(20, 10, 5),
            gmt_finished=at(20, 12, 5),
            status="Succeeded",
        ),
        rows.pod(
            "a1",
            job_id="a",
            namespace="team-a",
            gpus=1,
            cpu_millis=1000,
            replica_type="ps",
            gmt_started=at(20, 11, 5),
            gmt_finished=at(20, 12, 5),
            status="Succeeded",
        ),
        rows.pod(
            "b0",
            job_id="b",
            namespace="team-a",
            gpus=4,
            gmt_started=at(20, 22, 10),
            gmt_finished=at(21, 2),
            status="Failed",
            remark=OOM,
        ),
        rows.pod("b1", job_id="b", namespace="team-a", gpus=4, status="Pending"),
        rows.pod("c0", job_id="c", namespace="team-b", gpus=8, gmt_started=at(21, 9)),
    ]
    await Store().upsert(Job, jobs)
    await Store().upsert(Pod, pods)


def by(rows_: list[dict[str, Any]], key: str) -> dict[Any, dict[str, Any]]:
    return {tuple(row[k] for k in key.split(",")): row for row in rows_}


async def test_a_window_rolled_up_by_namespace(archive: None) -> None:
    found = by(await rollup("namespace", since=SINCE, until=UNTIL), "namespace")
    a, b = found[("team-a",)], found[("team-b",)]
    assert (a["jobs"], a["succeeded"], a["failed"]) == (2, 1, 1)
    assert (a["gpu_hours"], a["failed_gpu_hours"], a["cpu_hours"]) == (20.333, 15.333, 9.0)
    assert (a["queue_wait_p50_s"], a["queue_wait_p95_s"]) == (300, 600)
    # Not classified yet: under Unclassified, not under its pod's raw reason.
    assert a["top_failure_reasons"] == [{"reason": "Unclassified", "gpu_hours": 15.333, "jobs": 1}]
    assert (b["jobs"], b["gpu_hours"], b["queue_wait_p50_s"]) == (1, 120.0, 0)
    await classify(failure("b", "OOMKilled", "team-a"))
    # Whole days (the daily roll-up joined to the classes) and edges read live alike.
    for since, until in ((SINCE, UNTIL), (at(20, 12), at(21, 12))):
        for from_pods in (False, True):
            rolled = await rollup("namespace", since=since, until=until, from_pods=from_pods)
            (a,) = [row for row in rolled if row["namespace"] == "team-a"]
            assert a["top_failure_reasons"] == [
                {"reason": "OOMKilled", "gpu_hours": 15.333, "jobs": 1}
            ], (since, from_pods)


async def test_by_failure_class_failed_jobs_alone_each_under_its_class(
    archive: None, db_url: str
) -> None:
    # E: failed in team-b, 1 GPU from 10:00 to 14:00 (4 GPU-hours), classified NCCLError.
    ended: dict[str, Any] = {"namespace": "team-b", "status": "Failed", "gmt_finished": at(20, 14)}
    job = rows.job("e", name="e", gmt_created=at(20, 9), gmt_job_running=at(20, 10), **ended)
    await Store().upsert(Job, [job])
    await Store().upsert(Pod, [rows.pod("e0", job_id="e", gpus=1, gmt_started=at(20, 10), **ended)])
    await classify(failure("e", "NCCLError", "team-b"))
    found = by(await rollup("failure", since=SINCE, until=UNTIL), "failure")
    assert sorted(found) == [("NCCLError",), ("Unclassified",)]
    nccl, unclassified = found[("NCCLError",)], found[("Unclassified",)]
    assert (nccl["jobs"], nccl["succeeded"], nccl["failed"]) == (1, 0, 1)
    assert (nccl["gpu_hours"], nccl["failed_gpu_hours"], nccl["queue_wait_p50_s"]) == (
        4.0,
        4.0,
        3600,
    )
    assert (unclassified["jobs"], unclassified["failed_gpu_hours"]) == (1, 15.333)
    assert "top_failure_reasons" not in nccl
    assert usage.columns("failure", None)[-8:-6] == ("queue_wait_p95_s", "gpu_activity_mean")
    await classify(failure("b", "OOMKilled", "team-a"))
    daily = by(await rollup("failure", "day", since=SINCE, until=UNTIL), "failure,period")
    assert sorted(daily) == [
        ("NCCLError", "2026-11-20"),
        ("OOMKilled", "2026-11-20"),
        ("OOMKilled", "2026-11-21"),
    ]
    # B across midnight: 4 GPUs from 22:10 (7.333 h) and to 02:00 (8 h).
    assert daily[("OOMKilled", "2026-11-20")]["failed_gpu_hours"] == 7.333
    assert (
        daily[("OOMKilled", "2026-11-21")]["failed"],
        daily[("OOMKilled", "2026-11-21")]["failed_gpu_hours"],
    ) == (1, 8.0)
    assert await rollup("failure", "day", since=SINCE, until=UNTIL) == await rollup(
        "failure", "day", since=SINCE, until=UNTIL, from_pods=True
    )
    # One namespace's classes alone.
    assert [
        row["failure"]
        for row in await rollup("failure", namespace="team-b", since=SINCE, until=UNTIL)
    ] == ["NCCLError"]
    expected = await rollup("failure", since=SINCE, until=UNTIL)
    flags = ["--since=2026-11-20", "--until=2026-11-22"]
    ran = await asyncio.to_thread(run, db_url, "usage", "--by", "failure", *flags, "-o", "json")
    assert json.loads(ran.stdout) == {"items": expected}, ran.stderr
    table = await asyncio.to_thread(run, db_url, "usage", "--by", "failure", *flags)
    assert "OOMKilled" in table.stdout and "NCCLError" in table.stdout
    assert max(len(line) for line in table.stdout.splitlines()) <= 80
    async with TestClient(TestServer(api.Api(auth.NoAuth()).app())) as client:
        query = "by=failure&since=2026-11-20&until=2026-11-22"
        answer = await client.get(f"{api.PREFIX}/usage?{query}")
        assert await answer.json() == {"items": expected}
        csv = await client.get(f"{api.PREFIX}/usage?{query}", headers={"Accept": "text/csv"})
        lines = (await csv.text()).splitlines()
        assert lines[0] == ",".join(f'"{name}"' for name in usage.columns("failure", None))
        # No pod summarised: the efficiency unknown, its one job counted so.
        assert '"OOMKilled",1,0,1,15.333,15.333,0.0,600.0,600.0,,,,,,,1' in lines


async def test_a_job_across_midnight_counts_in_both_days(archive: None) -> None:
    found = by(await rollup("queue", "day", since=SINCE, until=UNTIL), "queue,period")
    first, second = found[("research", "2026-11-20")], found[("research", "2026-11-21")]
    assert (first["jobs"], first["succeeded"], first["failed"]) == (2, 1, 0)
    assert (first["gpu_hours"], first["failed_gpu_hours"]) == (12.333, 7.333)
    assert (second["jobs"], second["failed"], second["gpu_hours"]) == (1, 1, 8.0)
    assert second["queue_wait_p50_s"] is None
    assert found[(None, "2026-11-21")]["gpu_hours"] == 120.0


async def test_by_node_a_pod_s_time_goes_to_its_node_and_a_job_counts_on_each(
    archive: None, db_url: str
) -> None:
    conn = db.connection()
    for pod, node in (("a0", "n1"), ("a1", "n2"), ("b0", "n1"), ("c0", "n2")):
        await conn.execute_script(
            f"UPDATE replica_info SET node_name = '{node}' WHERE pod_id = '{pod}'"
        )
    found = by(await rollup("node", since=SINCE, until=UNTIL), "node")
    # b1 never ran nor was scheduled: b counts on n1 only, no row of none.
    assert sorted(found, key=str) == [("n1",), ("n2",)]
    n1, n2 = found[("n1",)], found[("n2",)]
    assert (n1["jobs"], n1["succeeded"], n1["failed"]) == (2, 1, 1)
    assert (n1["gpu_hours"], n1["failed_gpu_hours"], n1["cpu_hours"]) == (19.333, 15.333, 8.0)
    assert (n1["queue_wait_p50_s"], n1["queue_wait_p95_s"]) == (300, 600)
    assert (n2["jobs"], n2["succeeded"], n2["gpu_hours"], n2["cpu_hours"]) == (2, 1, 121.0, 1.0)
    assert (n2["queue_wait_p50_s"], n2["queue_wait_p95_s"]) == (0, 300)
    window = "since=2026-11-20&until=2026-11-22"
    async with TestClient(TestServer(api.Api(auth.NoAuth()).site())) as client:
        answer = await client.get(f"{api.PREFIX}/usage?by=node&{window}")
        assert (await answer.json())["items"] == await rollup("node", since=SINCE, until=UNTIL)
        page = await client.get(f"/usage?by=node&{window}")
        assert page.status == 200 and "GPU-hours per day, by node" in await page.text()
    flags = ["--since=2026-11-20", "--until=2026-11-22", "-o", "json"]
    ran = await asyncio.to_thread(run, db_url, "usage", "--by", "node", *flags)
    assert json.loads(ran.stdout)["items"] == await rollup("node", since=SINCE, until=UNTIL)
    await conn.execute_script("UPDATE replica_info SET node_name = NULL")
    (none,) = await rollup("node", since=SINCE, until=UNTIL)
    assert (none["node"], none["jobs"], none["gpu_hours"]) == (None, 3, 140.333)


async def test_by_cluster_each_job_counts_in_the_cluster_it_came_from(archive: None) -> None:
    (one,) = await rollup("cluster", since=SINCE, until=UNTIL)
    assert (one["cluster"], one["jobs"], one["gpu_hours"]) == (DEFAULT_CLUSTER, 3, 140.333)
    await db.connection().execute_script("UPDATE job_info SET cluster = 'east' WHERE job_id = 'c'")
    found = by(await rollup("cluster", since=SINCE, until=UNTIL), "cluster")
    assert (found[("east",)]["jobs"], found[("east",)]["gpu_hours"]) == (1, 120.0)
    here = found[(DEFAULT_CLUSTER,)]
    assert (here["jobs"], here["gpu_hours"], here["failed_gpu_hours"]) == (2, 20.333, 15.333)
    assert await rollup("cluster", since=SINCE, until=UNTIL) == await rollup(
        "cluster", since=SINCE, until=UNTIL, from_pods=True
    )


async def test_a_window_after_now_holds_nothing_and_one_across_now_runs_to_now(
    archive: None,
) -> None:
    # C runs on 8 GPUs: a later window has none of its life, so no row at all.
    now = datetime.datetime.now(datetime.UTC)
    hour = datetime.timedelta(hours=1)
    for every in (None, "day"):
        assert await rollup("namespace", every, since=now + hour, until=now + 30 * hour) == []
    (across,) = await rollup("namespace", since=now - hour, until=now + hour)
    assert (across["namespace"], across["jobs"]) == ("team-b", 1)
    assert across["gpu_hours"] == pytest.approx(8.0, abs=0.01)
    # A pod whose start a clock ahead of this one stamped in ten minutes: no time yet.
    ahead = now + datetime.timedelta(minutes=10)
    await Store().upsert(Job, [rows.job("d", name="d", namespace="team-d", gmt_created=now - hour)])
    await Store().upsert(Pod, [rows.pod("d0", job_id="d", gpus=8, gmt_started=ahead)])
    by_namespace = await rollup("namespace", since=now - hour, until=now + hour)
    [team_d] = [row for row in by_namespace if row["namespace"] == "team-d"]
    assert (team_d["jobs"], team_d["gpu_hours"], team_d["cpu_hours"]) == (1, 0.0, 0.0)


async def test_one_namespace_only(archive: None) -> None:
    found = await rollup("owner", namespace="team-b", since=SINCE, until=UNTIL)
    assert [(row["owner"], row["gpu_hours"]) for row in found] == [("carol", 120.0)]


async def test_per_job_facts(archive: None) -> None:
    found = {job.job_uid: job async for batch in job_usage(SINCE, UNTIL, batch=2) for job in batch}
    assert sorted(found) == ["a", "b", "c"]
    a, b = found["a"], found["b"]
    assert (a.gpu_hours, a.cpu_hours, a.queue_wait_s, a.gang_wait_s) == (5.0, 9.0, 300, 3900)
    assert dict(a.gpu_hours_by_type) == {"worker": 4.0, "ps": 1.0}
    assert (a.run_s, a.replicas, a.started) == (7200, 2, at(20, 10, 5))
    assert (b.status, b.reason, b.gpu_hours, b.gang_wait_s) == (
        "Failed",
        "OOMKilled (exit code 137)",
        15.333,
        None,
    )
    day = {job.job_uid: job async for batch in job_usage(at(21, 0), UNTIL) for job in batch}
    assert (day["b"].gpu_hours, day["b"].all_gpu_hours) == (8.0, 15.333)


async def test_an_upgraded_job_waits_by_its_pods_first_start_in_both(database: str) -> None:
    # Recorded before gmt_job_running was kept (decision 32): NULL, its pods started.
    await Store().upsert(
        Job,
        [
            rows.job(
                "old",
                namespace="team-a",
                status="Succeeded",
                gmt_created=at(20, 10),
                gmt_finished=at(20, 12),
            )
        ],
    )
    await Store().upsert(
        Pod,
        [
            rows.pod(
                f"old{n}",
                job_id="old",
                namespace="team-a",
                gpus=1,
                gmt_started=at(20, 10, start),
                gmt_finished=at(20, 12),
                status="Succeeded",
            )
            for n, start in enumerate((7, 3))
        ],
    )
    (facts,) = [job async for batch in job_usage(SINCE, UNTIL) for job in batch]
    (rolled,) = await rollup("namespace", since=SINCE, until=UNTIL)
    assert facts.queue_wait_s == 180
    assert rolled["queue_wait_p50_s"] == rolled["queue_wait_p95_s"] == facts.queue_wait_s


@pytest.mark.parametrize(
    ("asked", "said"),
    [
        ({"group_by": "node_name"}, "not one of"),
        ({"group_by": "pod"}, "not one of"),
        ({"every": "hour"}, "not one of"),
        ({"since": UNTIL, "until": SINCE}, "before"),
        ({"every": "day", "since": at(1, 0).replace(year=2000)}, "periods"),
        ({"namespace": "x" * 300}, "longer"),
    ],
)
async def test_bad_input_is_refused(database: str, asked: dict[str, Any], said: str) -> None:
    with pytest.raises(BadQuery, match=said):
        await rollup(**{"until": UNTIL, **asked})


async def owners_running(owners: int, days: int) -> tuple[datetime.datetime, datetime.datetime]:
    """A job of each of ``owners`` owners running through a window of ``days`` days
    ending at the 22nd; the window."""
    until = at(22, 0)
    since = until - datetime.timedelta(days=days)
    jobs = [
        rows.job(f"j{n}", name=f"j{n}", owner=f"o{n}", gmt_created=since) for n in range(owners)
    ]
    await Store().upsert(Job, jobs)
    return since, until


async def test_an_answer_past_its_row_bound_is_a_400_before_its_rows_are_built(
    database: str,
) -> None:
    # 25 owners (a tenant's labels) with a job running all along: 25 x 500 days of rows.
    since, until = await owners_running(25, days=500)
    with pytest.raises(BadQuery, match="25 of owner over 500 periods would be 12,500 rows"):
        await rollup("owner", "day", since=since, until=until)
    weeks = usage.periods(since, until, "week")
    assert len(await rollup("owner", "week", since=since, until=until)) == 25 * len(weeks)
    async with TestClient(TestServer(api.Api(auth.NoAuth()).app())) as client:
        window = f"since={since.date()}&until={until.date()}"
        answer = await client.get(f"{api.PREFIX}/usage?by=owner&every=day&{window}")
        assert answer.status == 400
        assert "more than 10,000; name a namespace" in (await answer.json())["error"]["message"]


async def test_the_cli_and_the_api_give_the_same_numbers(archive: None, db_url: str) -> None:
    window = {"since": "2026-11-20", "until": "2026-11-22T00:00:00Z"}
    expected = await rollup("queue", "day", since=SINCE, until=UNTIL)
    flags = [f"--{name}={value}" for name, value in window.items()]
    ran = await asyncio.to_thread(
        run, db_url, "usage", "--by", "queue", "--every", "day", *flags, "-o", "json"
    )
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout) == {"items": expected}
    query = "&".join(f"{name}={value}" for name, value in window.items())
    async with TestClient(TestServer(api.Api(auth.NoAuth()).app())) as client:
        answer = await client.get(f"{api.PREFIX}/usage?by=queue&every=day&{query}")
        assert answer.status == 200 and await answer.json() == {"items": expected}
        csv = await client.get(
            f"{api.PREFIX}/usage?by=queue&every=day&{query}", headers={"Accept": "text/csv"}
        )
        assert csv.headers["Content-Type"].startswith("text/csv")
        lines = (await csv.text()).splitlines()
        assert lines[0] == ",".join(f'"{name}"' for name in usage.columns("queue", "day"))
        assert '"research","2026-11-20",2,1,0,12.333,7.333,9.0,300.0,600.0,' in lines[1]
        bad = await client.get(f"{api.PREFIX}/usage?by=pod")
        assert bad.status == 400 and "not one of" in (await bad.json())["error"]["message"]
    table = await asyncio.to_thread(run, db_url, "usage", *flags)
    title = "usage by namespace, 2026-11-20 00:00:00 to 2026-11-22 00:00:00 UTC"
    assert title in table.stdout and "team-a" in table.stdout
    # The waits as durations: team-a's p50 300 s and p95 600 s.
    [header] = [line for line in table.stdout.splitlines() if line.startswith("namespace")]
    [team_a] = [line for line in table.stdout.splitlines() if line.startswith("team-a")]
    named = dict(zip((name.strip() for name in header.split("┃")), team_a.split("│"), strict=True))
    assert [named["wait p50"].strip(), named["wait p95"].strip()] == ["5m", "10m"]
    as_csv = await asyncio.to_thread(run, db_url, "usage", "--by", "owner", *flags, "-o", "csv")
    header = ",".join(f'"{name}"' for name in usage.columns("owner", None))
    assert as_csv.stdout.splitlines()[0] == header


async def test_the_cli_says_a_window_without_jobs_holds_no_usage(
    archive: None, db_url: str
) -> None:
    window = ("--since", "2025-01-01", "--until", "2025-02-01")
    ran = await asyncio.to_thread(run, db_url, "usage", *window)
    assert ran.returncode == 0, ran.stderr
    said = "No job lived from 2025-01-01 00:00:00 to 2025-02-01 00:00:00 UTC: no usage by namespace"
    assert ran.stdout.splitlines() == [said]


@pytest.mark.parametrize(
    "args",
    [
        ["--by", "node_name"],
        ["--by", "pod"],
        ["--every", "hour"],
        ["--since", "2026-11-22", "--until", "2026-11-20"],
        ["--since", "yesterday"],
    ],
)
def test_the_cli_refuses_bad_input_in_one_line(args: list[str], tmp_path: pathlib.Path) -> None:
    ran = run(f"sqlite://{tmp_path / 'none.sqlite3'}", "usage", *args)
    assert ran.returncode == 2, ran.stderr
    [line] = ran.stderr.splitlines()
    assert line.startswith("Error: --"), line


async def test_the_console_draws_the_usage_page(archive: None) -> None:
    async with TestClient(TestServer(api.Api(auth.NoAuth()).site())) as client:
        page = await client.get("/usage?by=queue&since=2026-11-20&until=2026-11-22")
        text = await page.text()
        assert page.status == 200, text
        assert page.headers["Content-Security-Policy"].startswith("default-src 'none'")
        assert "GPU-hours per day, by queue" in text and "140.3 GPU-hours in all" in text
        assert "2026-11-21: research 8 GPU-h" in text and 'class="segment series-0"' in text
        assert "p50 5m, p95 10m" in text
        # The failure classes ranked by their GPU-hours; no preemption in this archive.
        assert "Failure classes by failed jobs' GPU-hours" in text
        assert "Unclassified: 15.3 GPU-h, 1 job" in text
        assert 'Grouped <a href="usage?by=clusterqueue&amp;since=' in text
        assert "http://" not in text and "https://" not in text
        bad = await client.get("/usage?by=pod")
        assert bad.status == 400 and "not one of" in await bad.text()


async def test_the_console_charts_weeks_where_days_would_pass_the_row_bound(
    database: str,
) -> None:
    # 400 owners with a job running through 30 days: 12,400 rows by day, 2,000 by week.
    since, until = await owners_running(400, days=30)
    async with TestClient(TestServer(api.Api(auth.NoAuth()).site())) as client:
        page = await client.get(f"/usage?by=owner&since={since.date()}&until={until.date()}")
        text = await page.text()
        assert page.status == 200, text
        assert "GPU-hours per week, by owner" in text and "UTC weeks;" in text
        # Near the calendar's end the chart's periods are the answer's, cut as it is.
        late = await client.get("/usage?since=9999-11-01&until=9999-12-31T12:00:00Z")
        assert late.status == 200, await late.text()
        both = await client.get(
            f"{api.PREFIX}/usage?since={since.date()}&until={until.date()}&by=kind",
            headers=[("Accept", "application/json;q=0.5"), ("Accept", "text/csv")],
        )
        assert both.headers["Content-Type"].startswith("text/csv")
