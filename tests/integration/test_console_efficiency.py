"""The console over real HTTP on both databases shows a job's efficiency (decision 45):
its figures, its per-GPU activity strip shaded by each GPU's mean (never used apart),
each cell's title, and the advice; a job without a summary shows none of it."""

import datetime
import json
import re
from collections.abc import AsyncIterator
from html import unescape

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from jobarchive.core.efficiency import MEASURED, GpuUse, PodEfficiency
from jobarchive.maintenance.summarising import summary_row
from jobarchive.reading import api, auth
from jobarchive.storage.models import Job, Pod
from jobarchive.storage.store import Store
from jobarchive.storage.summaries import Summary
from tests.support import rows

Client = TestClient[web.Request, web.Application]
START = datetime.datetime(2026, 11, 20, 10, 0, tzinfo=datetime.UTC)


@pytest.fixture
async def client(database: str) -> AsyncIterator[Client]:
    """A job of one pod of four GPUs, two busy and two never used, for one hour."""
    await Store().upsert(Job, [rows.job("job-eff", name="half", namespace="team-a")])
    await Store().upsert(Job, [rows.job("job-none", name="none", namespace="team-a")])
    pod = {"pod_id": "uid-w0", "version": "10", "job_id": "job-eff", "namespace": "team-a"}
    await Store().upsert(
        Pod,
        [
            rows.pod(
                "uid-w0",
                name="half-worker-0",
                job_id="job-eff",
                namespace="team-a",
                gpus=4,
                gmt_started=START,
                gmt_finished=START + datetime.timedelta(hours=1),
            )
        ],
    )
    gpus = (
        GpuUse("GPU-a", 0.9, 1.0, 0.5),
        GpuUse("GPU-b", 0.6, 0.9, 0.5),
        GpuUse("GPU-c", 0.0, 0.0, 0.0),
        GpuUse("GPU-d", 0.0, 0.0, 0.0),
    )
    figures = PodEfficiency(
        MEASURED,
        gpu_activity_mean=0.375,
        gpu_activity_peak=1.0,
        gpus_seen=4,
        unused_gpus=2,
        per_gpu=gpus,
    )
    await Store().upsert(Summary, [summary_row({**pod, "name": "half-worker-0"}, figures)])
    async with TestClient(TestServer(api.Api(auth.NoAuth()).site())) as test_client:
        yield test_client


async def page(client: Client, uid: str) -> str:
    response = await client.get(f"/job?uid={uid}")
    body = await response.text()
    assert response.status == 200, body
    return body


async def test_the_job_page_draws_each_gpu_shaded_and_says_the_advice(client: Client) -> None:
    html = await page(client, "job-eff")
    [figures] = re.findall(r'<p class="efficiency-figures">(.*?)</p>', html, re.S)
    # 4 GPU-hours; idle 4 x (1 - 0.375).
    assert unescape(figures).startswith("4 GPU-hours, activity 38%, idle 2.5 GPU-hours; 2 GPUs")
    shades = re.findall(r'<rect class="(gpu-[a-z]+)"', html)
    assert shades == ["gpu-full", "gpu-busy", "gpu-unused", "gpu-unused"]
    titles = re.findall(r"<title>(.*?)</title>", html)
    assert "half-worker-0 GPU GPU-a: mean 90%, peak 100%, memory peak 50%" in titles
    assert "<li>4 GPUs requested, 2 never used: request 2</li>" in html
    assert 'aria-label="Mean activity of 4 GPUs of 1 pods"' in html


async def test_a_job_without_a_summary_has_no_strip(client: Client) -> None:
    html = await page(client, "job-none")
    assert "GPU activity</h2>" not in html and "gpu-strip" not in html
    answer = json.loads(await (await client.get("/api/v1/jobs/job-none")).text())
    assert "efficiency" not in answer
