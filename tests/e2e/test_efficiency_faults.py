"""Efficiency end to end when Prometheus fails or lacks data (decision 45; issue 39's
faults), the real operator recording on the emulated cluster and asking the test bed's
real Prometheus: through the test bed's proxy (``testbed.prometheus_proxy``) where the
fault is not one Prometheus makes on demand (a 500 for a while, a query held past the
client's timeout), or where the proxy hands the real Prometheus another query so that it
answers with its own error or a result of another type; series that vanish mid-run;
and a fleet of two clusters, each operator asking its own Prometheus, one archive.

Every wait is on a condition: a scrape stored, a query's fate at the proxy, a row, a
log line."""

import asyncio
import json
import pathlib
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from jobarchive.reading import api, auth
from jobarchive.reading.queries.measured import efficiency_json
from jobarchive.storage.models import Job, Pod
from jobarchive.storage.summaries import Summary
from testbed import objects as o
from testbed.cluster import PODS, Cluster, Reviews
from testbed.mass_failure import PYTORCHJOBS, job_named
from testbed.prometheus_proxy import PrometheusProxy
from tests.support import fleet
from tests.support.gpu_pods import (
    Worker,
    finish,
    logged,
    now,
    prometheus_env,
    run_worker,
    status,
    summary_of,
)
from tests.support.metrics_bed import MetricsBed, metrics_bed
from tests.support.operators import OperatorFactory
from tests.support.waiting import eventually

pytestmark = pytest.mark.e2e
WATCHED = [PODS, PYTORCHJOBS]
# What a Prometheus whose storage fails answers.
INTERNAL = json.dumps({"status": "error", "errorType": "internal", "error": "read: I/O error"})
# The figures of run_worker's HALF_IDLE pod.
HALF_IDLE_MEAN = 0.4


@pytest.fixture
async def proxy(cluster_metrics: MetricsBed) -> AsyncIterator[PrometheusProxy]:
    """The proxy of the run's Prometheus, forwarding every query until told otherwise."""
    async with PrometheusProxy(cluster_metrics.prometheus.url).serving() as served:
        yield served


async def seen(proxy: PrometheusProxy, fate: str, times: int) -> bool | None:
    return proxy.count(fate) >= times or None


async def abandoned(proxy: PrometheusProxy) -> bool | None:
    """Whether a client gave up on a held query (closed its connection)."""
    return proxy.abandoned >= 1 or None


async def summary_in(namespace: str, name: str) -> Summary:
    """The summary of the pod of that name in that namespace, once written."""
    return await eventually(
        lambda: Summary.filter(namespace=namespace, pod_name=name).first(), within=120
    )


async def job_in(cluster: Cluster, name: str, namespace: str) -> dict[str, Any]:
    body = o.with_meta(o.example("pytorch-simple.yaml"), name=name, namespace=namespace)
    return await cluster.create(PYTORCHJOBS, body)


async def recorded(names: list[str], pods: list[str]) -> bool | None:
    jobs = await Job.filter(name__in=names).count()
    return (jobs == len(names) and await Pod.filter(name__in=pods).count() == len(pods)) or None


async def test_a_prometheus_answering_500_delays_summaries_never_recording(
    cluster: Cluster,
    start_operator: OperatorFactory,
    archive: str,
    cluster_metrics: MetricsBed,
    proxy: PrometheusProxy,
) -> None:
    proxy.fail(500, INTERNAL)
    operator = await start_operator(**prometheus_env(proxy.url))
    await cluster.wait_watching(WATCHED)
    worker = Worker(cluster_metrics, await job_named(cluster, "five-hundred"), 0)
    await run_worker(cluster, cluster_metrics, worker)
    # Asked, answered 500, asked again after the backoff.
    await eventually(lambda: seen(proxy, "failed", 2), within=60)
    await eventually(lambda: logged(operator, "Prometheus cannot answer, summaries wait:"))
    assert f"Prometheus at {proxy.url} answered HTTP 500 (internal): read: I/O error" in (
        operator.log()
    )
    # Meanwhile the recorder records: three jobs of two pods each, every row written.
    names = [f"during-{index}" for index in range(3)]
    pods = []
    for name in names:
        job = await job_named(cluster, name)
        for index in range(2):
            pod = await cluster.create(
                PODS, o.kubeflow_pod(job, "pytorchReplicaSpecs", "Worker", index)
            )
            pods.append(pod["metadata"]["name"])
    await eventually(lambda: recorded([*names, "five-hundred"], [*pods, worker.name]), within=60)
    assert proxy.failing is not None
    assert await Summary.filter(pod_name=worker.name).count() == 0
    proxy.heal()
    row = await summary_of(worker.name)
    assert (row.outcome, row.unused_gpus) == ("measured", 2)
    assert row.gpu_activity_mean == pytest.approx(HALF_IDLE_MEAN)
    await eventually(lambda: logged(operator, "Prometheus answers again after"))
    assert await recorded([*names, "five-hundred"], [*pods, worker.name])


async def test_a_query_held_past_the_timeout_is_asked_again_and_summarised(
    cluster: Cluster,
    start_operator: OperatorFactory,
    archive: str,
    cluster_metrics: MetricsBed,
    proxy: PrometheusProxy,
) -> None:
    proxy.hold()
    env = {**prometheus_env(proxy.url), "JOBARCHIVE_PROMETHEUS_TIMEOUT": "1"}
    operator = await start_operator(**env)
    await cluster.wait_watching(WATCHED)
    worker = Worker(cluster_metrics, await job_named(cluster, "held"), 0)
    await run_worker(cluster, cluster_metrics, worker)
    # The client gave up at its timeout and, after the backoff, asked again.
    await eventually(lambda: seen(proxy, "held", 2), within=60)
    await eventually(lambda: abandoned(proxy))
    await eventually(lambda: logged(operator, "did not answer: TimeoutError"))
    assert await Summary.filter(pod_name=worker.name).count() == 0
    proxy.heal()
    row = await summary_of(worker.name)
    assert (row.outcome, row.unused_gpus) == ("measured", 2)
    assert row.gpu_activity_mean == pytest.approx(HALF_IDLE_MEAN)
    await eventually(lambda: logged(operator, "Prometheus answers again after"))


# Per namespace, the query the real Prometheus is handed instead of the operator's, and
# what it answers: its own error, or a result of another type.
REFUSALS = {
    "e-parse": (
        "sum(",
        'answered HTTP 400 (bad_data): invalid parameter "query": 1:5: parse error',
    ),
    "e-execution": (
        "up * on() up",
        "answered HTTP 422 (execution): found duplicate series for the match group {}",
    ),
    "e-scalar": ("1", "answered a scalar, not an instant vector"),
}


async def test_a_promql_error_or_a_scalar_refuses_its_pod_alone_in_a_line(
    cluster: Cluster,
    start_operator: OperatorFactory,
    archive: str,
    cluster_metrics: MetricsBed,
    proxy: PrometheusProxy,
) -> None:
    for namespace, (promql, _) in REFUSALS.items():
        proxy.rewrite(f'namespace="{namespace}"', promql)
    operator = await start_operator(**prometheus_env(proxy.url))
    await cluster.wait_watching(WATCHED)
    # Each pod in a namespace of its own: no two share a query.
    workers = [
        Worker(cluster_metrics, await job_in(cluster, "train", namespace), 0)
        for namespace in [*REFUSALS, "e-sound"]
    ]
    await asyncio.gather(*(run_worker(cluster, cluster_metrics, w) for w in workers))
    rows = {w.namespace: await summary_in(w.namespace, w.name) for w in workers}
    assert rows["e-sound"].outcome == "measured"
    assert rows["e-sound"].gpu_activity_mean == pytest.approx(HALF_IDLE_MEAN)
    for namespace, (_, said) in REFUSALS.items():
        row = rows[namespace]
        assert row.outcome == "refused"
        assert row.note is not None and said in row.note, row.note
        # Unknown, not zero.
        figures = (row.gpu_activity_mean, row.unused_gpus, row.energy_joules, row.cpu_efficiency)
        assert figures == (None, None, None, None)
        line = f"Not summarised, Prometheus refused the query of {namespace}/train-worker-0: "
        assert line + f"Prometheus at {proxy.url} {said}" in operator.log()
        job = await efficiency_json(str(row.job_id))
        assert job is not None
        assert (job["unknown"], job["gpu_activity_mean"], job["idle_gpu_hours"]) == (1, None, None)
        assert job["advice"] == ["1 of 1 pods have no data in Prometheus"]
    assert proxy.count("rewritten") == len(REFUSALS)
    assert operator.running and "Traceback" not in operator.log()


async def test_series_that_vanish_mid_run_give_the_figures_prometheus_has(
    cluster: Cluster, start_operator: OperatorFactory, archive: str, cluster_metrics: MetricsBed
) -> None:
    await start_operator(**prometheus_env(cluster_metrics.prometheus.url))
    await cluster.wait_watching(WATCHED)
    worker = Worker(cluster_metrics, await job_named(cluster, "vanishing"), 0)
    active = [0.8, 0.8, 0.4, 0.0]
    worker.serve(active, cpu=100, energy=1_000_000)
    await asyncio.to_thread(cluster_metrics.scraped)
    start = now()
    await cluster.create(PODS, {**worker.body, "status": status(start, None)})
    # Each step stored by one scrape within the run at least.
    await asyncio.to_thread(cluster_metrics.scraped)
    worker.serve(active, cpu=100, energy=1_005_000)
    await asyncio.to_thread(cluster_metrics.scraped)
    # Halfway: dcgm-exporter serves none of the pod's GPUs' series any more (Prometheus
    # marks them stale); its container's CPU counter goes on rising.
    worker.vanish()
    await asyncio.to_thread(cluster_metrics.scraped)
    container = worker.cadvisor.container_labels("pytorch")
    cluster_metrics.cadvisor.set("container_cpu_usage_seconds_total", container, 106)
    await asyncio.to_thread(cluster_metrics.scraped)
    run = await finish(cluster, cluster_metrics, worker, start)
    row = await summary_of(worker.name)
    assert (row.outcome, row.gpus_seen, row.unused_gpus) == ("measured", 4, 1)
    # Each GPU's mean over the samples Prometheus has (the first half), not over the run.
    assert row.gpu_activity_mean == pytest.approx((0.8 + 0.8 + 0.4 + 0.0) / 4)
    assert row.gpu_activity_peak == pytest.approx(0.8)
    assert row.gpu_memory_peak == pytest.approx(32_000 / 80_000)
    # Three busy GPUs' 5 kJ and the idle one's 1 kJ, all drawn before they vanished.
    assert row.energy_joules == pytest.approx(3 * 5_000 + 1_000)
    assert row.cpu_seconds == pytest.approx(6)
    assert row.cpu_efficiency == pytest.approx(6 / (2 * run))
    job = await efficiency_json(str(row.job_id))
    assert job is not None
    assert job["idle_gpu_hours"] == pytest.approx(round(4 * run / 3600 * 0.5, 4))


@pytest.fixture
def west_metrics() -> Iterator[MetricsBed]:
    """The west cluster's own Prometheus and exporters."""
    with metrics_bed() as bed:
        yield bed


@pytest.fixture
async def reader(
    cluster: Cluster, archive: str, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[TestClient[web.Request, web.Application]]:
    """The JSON API, home in east, its callers reviewed by east's API server: ann reads
    namespace ml of east only; wes reads ml and may get cluster west."""
    reviews = Reviews(cluster)
    for token, name in (("ann-token", "ann"), ("wes-token", "wes")):
        reviews.user(token, name)
        reviews.grant(f"user:{name}", "ml")
    reviews.grant_clusters("user:wes", "west")
    fleet.own_kubeconfig(monkeypatch, tmp_path / "reader-kubeconfig", cluster.url)
    site = api.Api(await auth.access("kubernetes"), home="east").site()
    async with TestClient(TestServer(site)) as client:
        yield client


async def read(client: TestClient[web.Request, web.Application], path: str, token: str) -> Any:
    reply = await client.get(api.PREFIX + path, headers={"Authorization": f"Bearer {token}"})
    return reply.status, await reply.json(content_type=None)


async def test_each_cluster_is_summarised_from_its_own_prometheus_and_read_by_its_grants(
    cluster: Cluster,
    west: Cluster,
    start_operator: OperatorFactory,
    start_west: OperatorFactory,
    cluster_metrics: MetricsBed,
    west_metrics: MetricsBed,
    reader: TestClient[web.Request, web.Application],
) -> None:
    await start_operator(
        **prometheus_env(cluster_metrics.prometheus.url), JOBARCHIVE_CLUSTER="east"
    )
    await start_west(**prometheus_env(west_metrics.prometheus.url), JOBARCHIVE_CLUSTER="west")
    await cluster.wait_watching(WATCHED)
    await west.wait_watching(WATCHED)
    # One namespace and pod name in both: each Prometheus holds the name, at its own figure.
    east_worker = Worker(cluster_metrics, await job_named(cluster, "twin"), 0)
    west_worker = Worker(west_metrics, await job_named(west, "twin"), 0)
    await asyncio.gather(
        run_worker(cluster, cluster_metrics, east_worker),
        run_worker(west, west_metrics, west_worker, active=[0.2, 0.2, 0.2, 0.2]),
    )

    async def both() -> list[Summary] | None:
        found = await Summary.filter(pod_name=east_worker.name).all()
        return found if len(found) == 2 else None

    rows = {row.cluster: row for row in await eventually(both, within=120)}
    assert {name: row.outcome for name, row in rows.items()} == {
        "east": "measured",
        "west": "measured",
    }
    assert rows["east"].gpu_activity_mean == pytest.approx(HALF_IDLE_MEAN)
    assert rows["west"].gpu_activity_mean == pytest.approx(0.2)
    assert (rows["east"].unused_gpus, rows["west"].unused_gpus) == (2, 0)
    east_uid, west_uid = str(rows["east"].job_id), str(rows["west"].job_id)

    code, mine = await read(reader, f"/jobs/{east_uid}", "ann-token")
    assert code == 200 and mine["cluster"] == "east"
    assert mine["efficiency"]["gpu_activity_mean"] == HALF_IDLE_MEAN
    code, hidden = await read(reader, f"/jobs/{west_uid}", "ann-token")
    assert code == 404, hidden
    code, named = await read(reader, "/jobs/ml/twin", "ann-token")
    assert [job["job_id"] for job in named["items"]] == [east_uid]
    code, _ = await read(reader, "/jobs?namespace=ml&cluster=west", "ann-token")
    assert code == 403
    code, granted = await read(reader, f"/jobs/{west_uid}", "wes-token")
    assert code == 200 and granted["efficiency"]["gpu_activity_mean"] == 0.2
