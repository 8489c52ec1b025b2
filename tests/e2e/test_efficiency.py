"""Efficiency end to end (decision 45): the real operator records a job's pods on the
emulated cluster and, once each ended, asks the test bed's real Prometheus, which
scrapes dcgm-exporter's and cAdvisor's families every second, for its figures; values
chosen so that each figure is computed here by hand. Faults: Prometheus stopped before
a pod ends and started later; the operator killed with pods still to summarise (the
others, and the fleet, in ``test_efficiency_faults.py``)."""

import asyncio
import json
import pathlib

import pytest

from jobarchive.storage.models import Pod as PodRow
from jobarchive.storage.models import UsageDay
from jobarchive.storage.summaries import Summary
from testbed.cluster import PODS, Cluster
from testbed.mass_failure import PYTORCHJOBS, job_named
from tests.support.commands import jobarchive
from tests.support.gpu_pods import (
    Worker,
    logged,
    now,
    prometheus_env,
    run_worker,
    status,
    summary_of,
)
from tests.support.metrics_bed import MetricsBed
from tests.support.operators import OperatorFactory
from tests.support.waiting import eventually

pytestmark = pytest.mark.e2e


async def test_a_job_that_left_half_its_gpus_idle_is_summarised_by_hand_figures(
    cluster: Cluster,
    start_operator: OperatorFactory,
    archive: str,
    cluster_metrics: MetricsBed,
    tmp_path: pathlib.Path,
) -> None:
    await start_operator(**prometheus_env(cluster_metrics.prometheus.url))
    await cluster.wait_watching([PODS, PYTORCHJOBS])
    job = await job_named(cluster, "half-idle")
    worker = Worker(cluster_metrics, job, 0)
    run = await run_worker(cluster, cluster_metrics, worker)
    row = await summary_of(worker.name)
    assert (row.outcome, row.source, row.gpus_seen) == ("measured", "engine_active", 4)
    assert row.gpu_activity_mean == pytest.approx(0.4)  # (0.8 + 0.8 + 0 + 0) / 4
    assert row.gpu_activity_peak == pytest.approx(0.8)
    assert row.unused_gpus == 2
    assert row.gpu_memory_peak == pytest.approx(32_000 / 80_000)
    assert row.energy_joules == pytest.approx(2 * 5_000 + 2 * 1_000)
    assert row.cpu_seconds == pytest.approx(6)  # the pause and pod-level series left out
    assert row.cpu_efficiency == pytest.approx(6 / (2 * run))
    assert row.memory_peak_ratio == pytest.approx(0.25)  # 2 GiB of the 8 GiB limit
    assert len(json.loads(row.per_gpu)) == 4
    env = {"JOBARCHIVE_DB_URL": archive}
    shown = jobarchive("eff", "ml/half-idle", cwd=tmp_path, env={**env, "COLUMNS": "80"})
    assert shown.returncode == 0, shown.stderr
    assert "  4 GPUs requested, 2 never used: request 2" in shown.stdout.splitlines()
    detail = json.loads(
        jobarchive("job", "ml/half-idle", "-o", "json", cwd=tmp_path, env=env).stdout
    )
    assert detail["efficiency"]["idle_gpu_hours"] == pytest.approx(round(4 * run / 3600 * 0.6, 4))
    # Usage weighs the same pod the same way (decision 47); the writer rewrote its job's
    # days with the summary's weights when the operator wrote it.
    rolled = jobarchive("usage", "-n", "ml", "-o", "json", cwd=tmp_path, env=env)
    [ml] = json.loads(rolled.stdout)["items"]
    assert ml["gpu_activity_mean"] == pytest.approx(0.4)
    assert ml["unused_gpu_hours"] == round(2 * run / 3600, 3)
    assert ml["cpu_efficiency"] == round(6 / (2 * run), 4)
    assert ml["efficiency_unknown_jobs"] == 0
    days = await UsageDay.filter(job_id=row.job_id).values("measured_gpu_s", "active_gpu_s")
    assert sum(day["measured_gpu_s"] for day in days) == pytest.approx(4 * run)
    assert sum(day["active_gpu_s"] for day in days) == pytest.approx(4 * run * 0.4)


async def test_a_pod_that_ended_while_prometheus_was_away_is_summarised_on_its_return(
    cluster: Cluster, start_operator: OperatorFactory, archive: str, cluster_metrics: MetricsBed
) -> None:
    operator = await start_operator(**prometheus_env(cluster_metrics.prometheus.url))
    await cluster.wait_watching([PODS, PYTORCHJOBS])
    job = await job_named(cluster, "away")
    worker = Worker(cluster_metrics, job, 0)
    start = now()
    worker.serve([0.5, 0.5, 0.5, 0.5], cpu=100, energy=1_000_000)
    await cluster.create(PODS, {**worker.body, "status": status(start, None)})
    for _ in range(4):
        await asyncio.to_thread(cluster_metrics.scraped)
    end = now()
    await asyncio.to_thread(cluster_metrics.prometheus.stop)
    await cluster.patch(PODS, "ml", worker.name, {"status": status(start, end)})
    await eventually(lambda: logged(operator, "Prometheus cannot answer"), within=60)
    assert await Summary.filter(pod_name=worker.name).count() == 0
    await asyncio.to_thread(cluster_metrics.prometheus.start)
    row = await summary_of(worker.name)
    assert row.outcome == "measured"
    assert row.gpu_activity_mean == pytest.approx(0.5)
    await eventually(lambda: logged(operator, "Prometheus answers again"), within=60)


async def test_pods_left_to_summarise_by_a_killed_operator_are_summarised_by_the_next(
    cluster: Cluster, start_operator: OperatorFactory, archive: str, cluster_metrics: MetricsBed
) -> None:
    # A delay long enough that the first operator dies before it asks.
    first = await start_operator(
        **{**prometheus_env(cluster_metrics.prometheus.url), "JOBARCHIVE_PROMETHEUS_DELAY": "3600"}
    )
    await cluster.wait_watching([PODS, PYTORCHJOBS])
    job = await job_named(cluster, "killed")
    worker = Worker(cluster_metrics, job, 0)
    await run_worker(cluster, cluster_metrics, worker)
    await eventually(lambda: _recorded_finished(worker.name), within=60)
    await first.kill()
    await start_operator(**prometheus_env(cluster_metrics.prometheus.url))
    row = await summary_of(worker.name)
    assert (row.outcome, row.unused_gpus) == ("measured", 2)


async def _recorded_finished(name: str) -> bool | None:
    return await PodRow.filter(name=name, gmt_finished__isnull=False).exists() or None
