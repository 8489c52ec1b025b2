"""Usage from a workload the real operator recorded on the emulated API, its figures
computed here by hand (decision 33): pods of 1, 2, 4 and 8 GPUs, a pod that never
started, a restarted container, a failed job across midnight, a running job counted to
the window's end, a Kueue-queued job with a known wait. The roll-up, the command line
and the API give the same numbers."""

import asyncio
import json
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from jobarchive.reading import api, auth
from jobarchive.reading.queries import job_usage, parse_time, rollup
from jobarchive.storage.failed import FailedJob
from jobarchive.storage.models import Job, UsageDay
from testbed.cluster import Cluster
from testbed.operator import OperatorProcess
from tests.support.small_archive import run
from tests.support.usage_workload import OOM, SINCE, UNTIL, record
from tests.support.waiting import eventually

pytestmark = pytest.mark.e2e


def shown(rows: list[dict[str, Any]], *keys: str) -> dict[tuple[Any, ...], dict[str, Any]]:
    return {tuple(row[key] for key in keys): row for row in rows}


async def test_usage_of_a_recorded_workload_is_what_the_hand_computes(
    cluster: Cluster, operator: OperatorProcess, archive: str
) -> None:
    await record(cluster)
    since, until = parse_time(SINCE, "since"), parse_time(UNTIL, "until")

    async def classified() -> FailedJob | None:
        failed = await Job.filter(name="usage-b").values_list("job_id", flat=True)
        return await FailedJob.filter(job_id__in=failed).first()

    # The failed job's class, once the operator's classifying pass filed it.
    assert (await eventually(classified, within=60)).failure_class == "OOMKilled"
    by_namespace = shown(await rollup("namespace", since=since, until=until), "namespace")
    a, b = by_namespace[("team-a",)], by_namespace[("team-b",)]
    assert (a["jobs"], a["succeeded"], a["failed"]) == (2, 1, 1)
    assert (a["gpu_hours"], a["failed_gpu_hours"], a["cpu_hours"]) == (14.0, 4.0, 4.0)
    assert (a["queue_wait_p50_s"], a["queue_wait_p95_s"]) == (0, 600)
    assert a["top_failure_reasons"] == [{"reason": "OOMKilled", "gpu_hours": 4.0, "jobs": 1}]
    assert (b["jobs"], b["succeeded"], b["failed"], b["gpu_hours"]) == (1, 0, 0, 96.0)

    per_day = await rollup("namespace", "day", since=since, until=until)
    days = shown(per_day, "namespace", "period")
    assert (
        days[("team-a", "2026-11-20")]["gpu_hours"],
        days[("team-a", "2026-11-21")]["gpu_hours"],
    ) == (12.0, 2.0)
    assert (days[("team-a", "2026-11-20")]["jobs"], days[("team-a", "2026-11-21")]["jobs"]) == (
        2,
        1,
    )
    assert days[("team-a", "2026-11-21")]["failed"] == 1
    assert days[("team-b", "2026-11-21")]["gpu_hours"] == 96.0
    queues = shown(await rollup("queue", since=since, until=until), "queue")
    assert (
        queues[("research",)]["queue_wait_p50_s"] == 600
        and queues[("research",)]["gpu_hours"] == 10.0
    )

    facts = {job.name: job async for batch in job_usage(since, until) for job in batch}
    assert (facts["usage-a"].queue_wait_s, facts["usage-a"].gang_wait_s) == (600, None)
    assert (facts["usage-a"].run_s, facts["usage-a"].replicas) == (7200, 3)
    assert dict(facts["usage-a"].gpu_hours_by_type) == {"master": 2.0, "worker": 8.0}
    assert (facts["usage-b"].reason, facts["usage-b"].gpu_hours) == (OOM, 4.0)
    assert facts["usage-c"].queue is None and facts["usage-c"].gpu_hours == 96.0

    flags = ["--every", "day", "--since", SINCE, "--until", UNTIL, "-o", "json"]
    printed = await asyncio.to_thread(run, archive, "usage", *flags)
    assert printed.returncode == 0, printed.stderr
    assert json.loads(printed.stdout) == {"items": per_day}
    async with TestClient(TestServer(api.Api(auth.NoAuth()).app())) as client:
        answer = await client.get(f"{api.PREFIX}/usage?every=day&since={SINCE}&until={UNTIL}")
        assert await answer.json() == {"items": per_day}


async def test_the_operator_keeps_the_daily_roll_up_as_its_pods_finish(
    cluster: Cluster, operator: OperatorProcess, archive: str
) -> None:
    await record(cluster)
    since, until = parse_time(SINCE, "since"), parse_time(UNTIL, "until")
    # The finished pods' days, written by the operator's writer beside the pods; the
    # running job's pod has none (it is read live).
    kept = await UsageDay.all().values("job_id", "day", "gpu_seconds", "reason")
    jobs = dict(await Job.all().values_list("job_id", "name"))
    assert {jobs[row["job_id"]] for row in kept} == {"usage-a", "usage-b"}
    assert {row["reason"] for row in kept if jobs[row["job_id"]] == "usage-b"} == {OOM}
    assert sum(row["gpu_seconds"] for row in kept) == (10.0 + 4.0) * 3600
    for every in (None, "day"):
        for by in ("namespace", "queue", "node", "cluster"):
            table = await rollup(by, every, since=since, until=until)
            assert table == await rollup(by, every, since=since, until=until, from_pods=True)
    edge = parse_time("2026-11-20T23:00:00Z", "since")
    assert await rollup(since=edge, until=until) == await rollup(
        since=edge, until=until, from_pods=True
    )
