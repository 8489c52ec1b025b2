"""Usage by Kueue's cluster queue on both databases (decision 44), over rows whose
figures are computed by hand: a quota that changes mid-period, a flavor added the next
day, a job preempted and readmitted, a queue without a recorded quota."""

import csv
import datetime
import io
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from jobarchive.reading import api, auth, usage
from jobarchive.reading.queries import BadQuery, rollup
from jobarchive.storage.kueue import Attempt, Quota
from jobarchive.storage.models import Job, Pod
from jobarchive.storage.store import Store
from tests.support import rows
from tests.support.queue_rows import attempt, quota


def at(day: int, hour: int, minute: int = 0) -> datetime.datetime:
    return datetime.datetime(2026, 11, day, hour, minute, tzinfo=datetime.UTC)


SINCE, UNTIL = at(20, 0), at(22, 0)


@pytest.fixture
async def archive(database: str) -> None:
    # gpu-a: 8 A100s until the 20th at noon, 4 after; 2 H100s from the 21st at 06:00.
    # Quota: the 20th 8 x 12 + 4 x 12 = 144 GPU-h; the 21st 4 x 24 + 2 x 18 = 132.
    await Store().upsert(
        Quota,
        [
            quota("q1", "a100", 8, at(1, 0), at(20, 12)),
            quota("q2", "a100", 4, at(20, 12), None),
            quota("q3", "h100", 2, at(21, 6), None),
        ],
    )
    jobs = [
        rows.job("j1", namespace="team-a", gmt_created=at(20, 9), gmt_job_running=at(20, 10)),
        rows.job("j2", namespace="team-b", gmt_created=at(20, 20), gmt_job_running=at(20, 21, 30)),
        rows.job("j3", namespace="team-a", gmt_created=at(21, 10), gmt_job_running=at(21, 10, 10)),
        # Never admitted by Kueue: in no queue.
        rows.job("j4", namespace="team-a", gmt_created=at(20, 1), gmt_job_running=at(20, 1)),
    ]
    pods = [
        # 6 GPUs 10:00-16:00 on the 20th: 36 GPU-h; beyond the 4 from noon: 2 x 4 = 8.
        rows.pod("p1", job_id="j1", gpus=6, gmt_started=at(20, 10), gmt_finished=at(20, 16)),
        # Preempted: 4 GPUs 21:30-02:00: 10 GPU-h on the 20th, 8 on the 21st.
        rows.pod("p2a", job_id="j2", gpus=4, gmt_started=at(20, 21, 30), gmt_finished=at(21, 2)),
        # Readmitted: 6 GPUs from 04:30 on, running: 19.5 x 6 = 117 GPU-h on the 21st;
        # beyond the 4 until 06:00: 2 x 1.5 = 3.
        rows.pod("p2b", job_id="j2", gpus=6, gmt_started=at(21, 4, 30)),
        rows.pod(
            "p3", job_id="j3", gpus=1, gmt_started=at(21, 10, 10), gmt_finished=at(21, 11, 10)
        ),
        rows.pod("p4", job_id="j4", gpus=8, gmt_started=at(20, 1), gmt_finished=at(20, 3)),
    ]
    attempts = [
        attempt(
            "a1",
            "j1",
            "gpu-a",
            at(20, 9, 30),
            running_at=at(20, 10),
            ended_at=at(20, 16),
            end_reason="Finished",
        ),
        attempt(
            "a2",
            "j2",
            "gpu-a",
            at(20, 21),
            running_at=at(20, 21, 30),
            ended_at=at(21, 2),
            end_reason="Preempted",
        ),
        attempt("a3", "j2", "gpu-a", at(21, 4), running_at=at(21, 4, 30)),
        attempt(
            "a4",
            "j3",
            "gpu-b",
            at(21, 10),
            running_at=at(21, 10, 10),
            ended_at=at(21, 11, 10),
            end_reason="Finished",
        ),
    ]
    await Store().upsert(Job, jobs)
    await Store().upsert(Pod, pods)
    await Store().upsert(Attempt, attempts)


def by(found: list[dict[str, Any]]) -> dict[tuple[Any, ...], dict[str, Any]]:
    return {(row["clusterqueue"], row.get("period")): row for row in found}


async def test_utilization_across_a_quota_change_mid_period(archive: None) -> None:
    found = by(await rollup("clusterqueue", "day", since=SINCE, until=UNTIL))
    first, second = found[("gpu-a", "2026-11-20")], found[("gpu-a", "2026-11-21")]
    assert list(first) == list(usage.columns("clusterqueue", "day"))
    assert (first["allocated_gpu_hours"], first["quota_gpu_hours"]) == (46.0, 144.0)
    assert (first["utilization"], first["borrowed_gpu_hours"]) == (0.3194, 8.0)
    assert first["preempted_gpu_hours"] == 10.0
    assert (second["allocated_gpu_hours"], second["quota_gpu_hours"]) == (125.0, 132.0)
    assert (second["utilization"], second["borrowed_gpu_hours"]) == (0.947, 3.0)
    assert second["preempted_gpu_hours"] == 8.0
    # j1 and j2 were first reserved on the 20th: their waits count there.
    assert (first["queue_wait_p50_s"], first["queue_wait_p95_s"]) == (3600, 5400)
    assert (first["quota_wait_p50_s"], first["quota_wait_p95_s"]) == (1800, 3600)
    assert (first["start_wait_p50_s"], first["start_wait_p95_s"]) == (1800, 3600)
    assert second["queue_wait_p50_s"] is None
    other = found[("gpu-b", "2026-11-21")]
    assert (other["allocated_gpu_hours"], other["quota_gpu_hours"]) == (1.0, None)
    assert (other["utilization"], other["borrowed_gpu_hours"]) == (None, None)
    assert (other["queue_wait_p50_s"], other["quota_wait_p50_s"], other["start_wait_p50_s"]) == (
        600,
        0,
        600,
    )
    assert set(found) == {("gpu-a", "2026-11-20"), ("gpu-a", "2026-11-21"), ("gpu-b", "2026-11-21")}


async def test_the_whole_window_integrates_both_quotas(archive: None) -> None:
    [a, b] = await rollup("clusterqueue", since=SINCE, until=UNTIL)
    assert (a["clusterqueue"], a["allocated_gpu_hours"], a["quota_gpu_hours"]) == (
        "gpu-a",
        171.0,
        276.0,
    )
    assert (a["utilization"], a["borrowed_gpu_hours"], a["preempted_gpu_hours"]) == (
        0.6196,
        11.0,
        18.0,
    )
    assert b["clusterqueue"] == "gpu-b"


async def test_another_cluster_s_queue_is_not_read(archive: None) -> None:
    assert await rollup("clusterqueue", since=SINCE, until=UNTIL, cluster="east") == []


async def test_a_namespace_is_refused_the_quota_being_the_cluster_s(archive: None) -> None:
    with pytest.raises(BadQuery, match="namespace"):
        await rollup("clusterqueue", namespace="team-a", since=SINCE, until=UNTIL)


async def test_the_csv_has_the_queue_s_columns(archive: None) -> None:
    found = await rollup("clusterqueue", "day", since=SINCE, until=UNTIL)
    text = usage.asked_csv(found, {"group_by": "clusterqueue", "every": "day"})
    header, first, *_ = csv.reader(io.StringIO(text))
    assert header == list(usage.columns("clusterqueue", "day"))
    assert first[:8] == ["gpu-a", "2026-11-20", "46.0", "144.0", "0.3194", "8.0", "10.0", "3600.0"]


async def test_the_api_and_the_console_answer_the_same_rows(archive: None) -> None:
    window = "since=2026-11-20T00:00:00Z&until=2026-11-22T00:00:00Z"
    async with TestClient(TestServer(api.Api(auth.NoAuth()).site())) as client:
        answer = await client.get(f"{api.PREFIX}/usage?by=clusterqueue&{window}")
        assert answer.status == 200
        items = (await answer.json())["items"]
        csv_answer = await client.get(
            f"{api.PREFIX}/usage?by=clusterqueue&{window}", headers={"Accept": "text/csv"}
        )
        csv_text = await csv_answer.text()
        page = await client.get(f"/usage?by=clusterqueue&{window}")
        html = await page.text()
        refused = await client.get(f"{api.PREFIX}/usage?by=clusterqueue&namespace=team-a&{window}")
        said = await refused.text()
    assert items == await rollup("clusterqueue", since=SINCE, until=UNTIL)
    [header, *_] = csv.reader(io.StringIO(csv_text))
    assert header == list(usage.columns("clusterqueue", None))
    assert page.status == 200, html
    row = next(r for r in html.split('<tr class="usage-row">')[1:] if "gpu-a" in r)
    cells = [cell.split("</td>")[0] for cell in row.split('<td class="number">')[1:6]]
    assert cells == ["171", "276", "0.62", "11", "18"]
    # The GPU-hours preemptions cost each queue, charted: gpu-a's alone had one.
    chart = html.split('id="preempted"')[1].split("</svg>")[0]
    assert "<title>gpu-a: 18 GPU-h</title>" in chart and "gpu-b" not in chart
    assert refused.status == 400 and "namespace" in said
