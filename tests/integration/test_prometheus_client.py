"""The Prometheus client (``jobarchive.infra.prometheus``) against a real Prometheus
scraping the test bed's dcgm-exporter and cAdvisor endpoints, and against small
servers that fail as a Prometheus or a proxy before it may: every failure one
``PrometheusError`` that says whether asking again may succeed, and never shows the
bearer token."""

import asyncio
import contextlib
import datetime
import json
import pathlib
import ssl
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from aiohttp import web

from jobarchive.config import ConfigError
from jobarchive.infra.prometheus import MAX_BODY, Prometheus, PrometheusError
from testbed.exporter import Gpu, Pod
from testbed.ports import free_port
from tests.support.metrics_bed import EXPORTER_POD, MONITORED_JOB, MetricsBed
from tests.support.pki import Authority

GPU = Gpu(0, "GPU-5d11648b-7cc4-2e4c-0de3-bd02f3d6a2c5")
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def a_pod() -> Pod:
    """A pod of this test's own: what earlier tests stored stays in Prometheus."""
    return Pod("team-a", f"train-{uuid.uuid4().hex[:8]}", str(uuid.uuid4()))


@pytest.fixture
async def client(cluster_metrics: MetricsBed) -> AsyncIterator[Prometheus]:
    """The client of the run's Prometheus."""
    # A fraction of a second, as Prometheus' timeout parameter must read it.
    prometheus = Prometheus(cluster_metrics.prometheus.url, timeout=9.5)
    yield prometheus
    await prometheus.close()


async def test_an_instant_vector_carries_the_exporters_labels(
    cluster_metrics: MetricsBed, client: Prometheus
) -> None:
    pod = a_pod()
    cluster_metrics.dcgm.set("DCGM_FI_DEV_GPU_UTIL", GPU.labels(pod, pod_uid=True), 87)
    cluster_metrics.dcgm_monitored.set("DCGM_FI_DEV_GPU_UTIL", GPU.labels(pod), 42)
    cluster_metrics.scraped()

    direct = await client.query(f'DCGM_FI_DEV_GPU_UTIL{{pod="{pod.name}"}}', now())
    assert [sample.value for sample in direct] == [87.0]
    assert direct[0].labels == {
        "__name__": "DCGM_FI_DEV_GPU_UTIL",
        "gpu": "0",
        "UUID": GPU.uuid,
        "pci_bus_id": "00000000:10:00.0",
        "device": "nvidia0",
        "modelName": "NVIDIA A100-SXM4-80GB",
        "Hostname": "gpu-node-1",
        "DCGM_FI_DRIVER_VERSION": "550.54.15",
        "container": "trainer",
        "namespace": "team-a",
        "pod": pod.name,
        "pod_uid": pod.uid,
        "instance": cluster_metrics.dcgm.address,
        "job": "dcgm-exporter",
    }
    # Through a ServiceMonitor the pod is in exported_*, the exporter's own in the rest.
    monitored = await client.query(
        f'DCGM_FI_DEV_GPU_UTIL{{exported_namespace="team-a",exported_pod="{pod.name}"}}', now()
    )
    assert [sample.value for sample in monitored] == [42.0]
    assert monitored[0].labels["job"] == MONITORED_JOB
    assert monitored[0].labels["exported_container"] == "trainer"
    assert {name: monitored[0].labels[name] for name in EXPORTER_POD} == EXPORTER_POD


async def test_a_range_function_over_the_pods_run_is_answered(
    cluster_metrics: MetricsBed, client: Prometheus
) -> None:
    pod = a_pod()
    for labels in pod.every_labels():
        cluster_metrics.cadvisor.set("container_memory_working_set_bytes", labels, 3 * 2**30)
    cluster_metrics.scraped()
    cluster_metrics.scraped()
    selector = f'namespace="team-a",pod="{pod.name}",container="trainer"'
    samples = await client.query(
        f"avg_over_time(container_memory_working_set_bytes{{{selector}}}[10s])", now()
    )
    assert [sample.value for sample in samples] == [3 * 2**30]
    # The pod-level series (container="") and the pause container's are there too.
    every = await client.query(
        f'count by (container) (container_memory_working_set_bytes{{pod="{pod.name}"}})', now()
    )
    assert sorted(sample.labels.get("container", "") for sample in every) == ["", "POD", "trainer"]


async def test_a_value_that_is_not_finite_is_left_out(client: Prometheus) -> None:
    assert await client.query("vector(0) / 0", now()) == []
    assert await client.query("vector(1) / 0", now()) == []
    assert [sample.value for sample in await client.query("vector(2.5)", now())] == [2.5]


@pytest.mark.parametrize(
    ("promql", "said"),
    [
        ("sum(", r"HTTP 400 \(bad_data\): .*parse error"),
        ("1", "answered a scalar, not an instant vector"),
        ("up[1m]", "answered a matrix, not an instant vector"),
    ],
)
async def test_a_query_prometheus_refuses_is_not_retryable(
    client: Prometheus, promql: str, said: str
) -> None:
    with pytest.raises(PrometheusError, match=said) as raised:
        await client.query(promql, now())
    assert raised.value.retryable is False


async def test_a_stopped_prometheus_is_retryable_and_answers_once_back(
    cluster_metrics: MetricsBed, client: Prometheus
) -> None:
    pod = a_pod()
    cluster_metrics.dcgm.set("DCGM_FI_DEV_FB_USED", GPU.labels(pod), 1024)
    cluster_metrics.scraped()
    cluster_metrics.prometheus.stop()
    with pytest.raises(PrometheusError, match="did not answer") as raised:
        await client.query("up", now())
    assert raised.value.retryable is True
    cluster_metrics.prometheus.start()
    stored = await client.query(f'DCGM_FI_DEV_FB_USED{{pod="{pod.name}"}}', now())
    assert [sample.value for sample in stored] == [1024.0]


def test_a_naive_moment_is_a_mistake_of_the_caller() -> None:
    prometheus = Prometheus("http://127.0.0.1:9")
    with pytest.raises(ValueError, match="naive"):
        asyncio.run(prometheus.query("up", datetime.datetime(2026, 1, 1)))


@contextlib.asynccontextmanager
async def serve(
    handler: Handler, path: str = "/api/v1/query", context: ssl.SSLContext | None = None
) -> AsyncIterator[str]:
    """``handler`` answering POSTs of ``path`` on a free port; yields the base URL."""
    app = web.Application()
    app.router.add_post(path, handler)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port, ssl_context=context).start()
    try:
        yield f"{'https' if context else 'http'}://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


def vector(*values: str) -> dict[str, object]:
    result = [{"metric": {"gpu": str(i)}, "value": [1, v]} for i, v in enumerate(values)]
    return {"status": "success", "data": {"resultType": "vector", "result": result}}


@pytest.mark.parametrize(
    ("status", "body", "retryable", "said"),
    [
        (500, "<html>Internal Server Error</html>", True, r"HTTP 500 \(no errorType\): <html>"),
        (502, "bad gateway", True, "HTTP 502"),
        (429, "slow down", True, "HTTP 429"),
        (
            503,
            json.dumps({"status": "error", "errorType": "timeout", "error": "query timed out"}),
            True,
            "HTTP 503 \\(timeout\\): query timed out",
        ),
        (
            422,
            json.dumps({"status": "error", "errorType": "execution", "error": "too many samples"}),
            False,
            "HTTP 422 \\(execution\\): too many samples",
        ),
        # A wrong path or credentials: every query would get it until they are fixed.
        (404, "404 page not found", True, "HTTP 404"),
        (401, "Unauthorized", True, "HTTP 401"),
        (403, "Forbidden (user=system:serviceaccount:jobarchive:jobarchive)", True, "HTTP 403"),
        (
            400,
            json.dumps({"status": "error", "errorType": "bad_data", "error": "parse error"}),
            False,
            "HTTP 400 \\(bad_data\\): parse error",
        ),
        (200, "not json", False, "HTTP 200"),
        (
            200,
            json.dumps({"status": "success", "data": {"resultType": "vector"}}),
            False,
            "malformed",
        ),
        (
            200,
            json.dumps(vector("1") | {"data": {"resultType": "vector", "result": [[]]}}),
            False,
            "malformed",
        ),
        (302, "moved", True, "HTTP 302"),
    ],
)
async def test_an_answer_says_whether_asking_again_may_succeed(
    status: int, body: str, retryable: bool, said: str
) -> None:
    async def answer(request: web.Request) -> web.Response:
        return web.Response(status=status, text=body)

    async with serve(answer) as url:
        prometheus = Prometheus(url)
        with pytest.raises(PrometheusError, match=said) as raised:
            await prometheus.query("up", now())
        await prometheus.close()
        assert raised.value.retryable is retryable


async def test_a_prometheus_that_hangs_is_a_retryable_timeout() -> None:
    async def hang(request: web.Request) -> web.Response:
        await asyncio.Event().wait()
        raise AssertionError("never answered")

    async with serve(hang) as url:
        prometheus = Prometheus(url, timeout=0.5)
        with pytest.raises(PrometheusError, match="did not answer: TimeoutError") as raised:
            await prometheus.query("up", now())
        await prometheus.close()
        assert raised.value.retryable is True


@pytest.mark.parametrize("declared", [True, False])
async def test_an_answer_over_four_mebibytes_is_refused_unread(declared: bool) -> None:
    async def flood(request: web.Request) -> web.StreamResponse:
        reply = web.StreamResponse()
        if declared:
            reply.content_length = MAX_BODY + 1
        await reply.prepare(request)
        for _ in range(MAX_BODY // 2**16 + 1):
            await reply.write(b" " * 2**16)
        return reply

    async with serve(flood) as url:
        prometheus = Prometheus(url)
        with pytest.raises(PrometheusError, match=f"more than {MAX_BODY} bytes") as raised:
            await prometheus.query("up", now())
        await prometheus.close()
        assert raised.value.retryable is False


async def test_the_token_of_the_file_is_sent_read_again_each_time_and_never_shown(
    tmp_path: pathlib.Path,
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("first-Zm9vYmFy\n")
    seen: list[str] = []

    async def checking(request: web.Request) -> web.Response:
        header = request.headers.get("Authorization", "")
        seen.append(header)
        if header == "Bearer second-YmF6cXV4":
            # A proxy that quotes the request's headers in its error page.
            return web.Response(status=502, text=f"upstream refused: Authorization: {header}")
        return web.json_response(vector("1"))

    async with serve(checking, path="/prometheus/api/v1/query") as url:
        prometheus = Prometheus(url + "/prometheus/", token_file=token_file)
        assert [sample.value for sample in await prometheus.query("up", now())] == [1.0]
        token_file.write_text("second-YmF6cXV4")
        with pytest.raises(PrometheusError) as raised:
            await prometheus.query("up", now())
        token_file.write_text("third-cXV1eA\nX-Injected: yes")
        with pytest.raises(PrometheusError, match=r"token file .* printable ASCII word") as odd:
            await prometheus.query("up", now())
        token_file.unlink()
        with pytest.raises(PrometheusError, match=r"token file .* cannot be read") as missing:
            await prometheus.query("up", now())
        await prometheus.close()
    assert seen == ["Bearer first-Zm9vYmFy", "Bearer second-YmF6cXV4"]
    assert "second-YmF6cXV4" not in str(raised.value)
    assert "upstream refused: Authorization: Bearer ***" in str(raised.value)
    assert raised.value.__cause__ is None and raised.value.__suppress_context__
    assert "third-cXV1eA" not in str(odd.value)
    assert missing.value.retryable is True


async def test_https_is_verified_with_the_ca_file(tmp_path: pathlib.Path) -> None:
    authority = Authority(tmp_path / "ca", "prometheus-ca")
    issued = authority.issue("prometheus", server=True)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(issued.cert, issued.key)

    async def answer(request: web.Request) -> web.Response:
        return web.json_response(vector("0.5"))

    async with serve(answer, context=context) as url:
        trusting = Prometheus(url, ca_file=authority.write())
        assert [sample.value for sample in await trusting.query("up", now())] == [0.5]
        await trusting.close()
        # The system's CAs do not know this one.
        system = Prometheus(url)
        with pytest.raises(PrometheusError, match="certificate verify failed"):
            await system.query("up", now())
        await system.close()
    with pytest.raises(ConfigError, match=r"^JOBARCHIVE_PROMETHEUS_CA_FILE: .* is not a readable"):
        Prometheus(url, ca_file=tmp_path / "missing.pem")
