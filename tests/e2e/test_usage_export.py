"""The export of the workload ``test_usage`` records through the real operator, its
figures computed there by hand: each job's row holds the numbers the per-job facts,
the roll-up, the CLI and the API give (decision 34)."""

import asyncio

import pytest

from jobarchive.reading.queries import job_usage, parse_time, rollup
from jobarchive.storage.failed import FailedJob
from jobarchive.storage.models import Job
from testbed.cluster import Cluster
from testbed.operator import OperatorProcess
from tests.support.exports import read_export
from tests.support.small_archive import run
from tests.support.usage_workload import OOM, SINCE, UNTIL, record
from tests.support.waiting import eventually

pytestmark = pytest.mark.e2e


async def test_the_export_of_a_recorded_workload_holds_the_numbers_computed_by_hand(
    cluster: Cluster, operator: OperatorProcess, archive: str, tmp_path
) -> None:
    await record(cluster)

    async def classified() -> FailedJob | None:
        failed = await Job.filter(name="usage-b").values_list("job_id", flat=True)
        return await FailedJob.filter(job_id__in=failed).first()

    await eventually(classified, within=60)
    window = ("--since", "2026-11-20", "--until", "2026-11-22")
    folder = tmp_path / "export"
    done = await asyncio.to_thread(run, archive, "export", *window, "--to", str(folder))
    assert done.returncode == 0, done.stderr
    rows = {row["name"]: row for row in read_export(folder).values()}
    a, b, c = rows["usage-a"], rows["usage-b"], rows["usage-c"]
    assert [str(row["date"]) for row in (a, b, c)] == ["2026-11-20", "2026-11-20", "2026-11-21"]
    # A: 1 GPU and 4 GPUs for 2 h, a third pod never started; 600 s queued.
    assert (a["gpu_hours"], a["cpu_hours"], a["queue_wait_s"], a["gang_wait_s"]) == (
        10.0,
        4.0,
        600,
        None,
    )
    assert (a["queue"], a["status"], a["replicas"], a["run_s"]) == (
        "research",
        "Succeeded",
        3,
        7200,
    )
    assert a["gpu_hours_by_type"] == '{"master": 2.0, "worker": 8.0}'
    # B: 2 GPUs across midnight, its whole life in its creation day's row.
    assert (b["gpu_hours"], b["status"], b["reason"]) == (4.0, "Failed", OOM)
    # Its class as the operator's classifying pass filed it; none for the others, and
    # no Kueue figures: no Workload admitted any of them.
    assert [row["failure_class"] for row in (a, b, c)] == [None, "OOMKilled", None]
    assert {row["attempts"] for row in (a, b, c)} == {None}
    # C: running on 8 GPUs since 12:00 on the 21st, counted to the export's time.
    assert (c["status"], c["finished"]) == ("Running", None)
    started = parse_time("2026-11-21T12:00:00Z", "t")
    assert c["gpu_hours"] == round(8 * (c["exported_at"] - started).total_seconds() / 3600, 3)

    since, until = parse_time(SINCE, "since"), parse_time(UNTIL, "until")
    facts = {job.name: job async for batch in job_usage(since, until) for job in batch}
    for name in ("usage-a", "usage-b"):
        assert (rows[name]["gpu_hours"], rows[name]["cpu_hours"]) == (
            facts[name].all_gpu_hours,
            facts[name].all_cpu_hours,
        )
    [team_a] = [
        row
        for row in await rollup("namespace", since=since, until=until)
        if row["namespace"] == "team-a"
    ]
    assert team_a["gpu_hours"] == a["gpu_hours"] + b["gpu_hours"] == 14.0
    assert team_a["failed_gpu_hours"] == b["gpu_hours"]
