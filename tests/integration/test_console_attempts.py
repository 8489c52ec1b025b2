"""The console over real HTTP on both databases shows a job's Kueue attempts and waits
(decision 43) and its failure class (decision 42): the job page's "Why" line, its
attempts as bands on the timeline with the preemption marked, its tables of attempts
and waits; the job list's class, the raw reason its title; the aggregated API's table
its FAILURE column."""

import datetime
import re
from collections.abc import AsyncIterator
from html import unescape
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from jobarchive.core.rows import AttemptRow, FailureRow, WaitRow
from jobarchive.reading import api, auth
from jobarchive.reading.kube.discovery import PREFIX
from jobarchive.recording.convert import workloads as wl
from jobarchive.storage.failed import FailedJob
from jobarchive.storage.kueue import Attempt, Wait
from jobarchive.storage.models import Job
from jobarchive.storage.store import Store
from testbed import objects as o
from tests.support import rows

Client = TestClient[web.Request, web.Application]
JOB = "5b0c7d2e-8a41-4f0b-9d1e-2c3f4a5b6c7d"
OTHER = "6c1d8e3f-9b52-4a1c-8e2f-3d4e5f6a7b8c"
NOW = datetime.datetime(2026, 11, 21, tzinfo=datetime.UTC)


def at(clock: str) -> datetime.datetime:
    hour, minute, second = map(int, clock.split(":"))
    return datetime.datetime(2026, 11, 20, hour, minute, second, tzinfo=datetime.UTC)


def attempt(state: str) -> AttemptRow:
    row = wl.observe(o.fixture(f"kueue/{state}.yaml"), NOW).attempt
    assert row is not None
    row["job_id"] = JOB
    return row


def wait(state: str) -> WaitRow:
    row = wl.observe(o.fixture(f"kueue/{state}.yaml"), NOW).wait
    assert row is not None
    row["job_id"] = JOB
    return row


@pytest.fixture
async def client(database: str) -> AsyncIterator[Client]:
    """A job of two attempts, the first preempted, that then failed (OOM-killed, its
    class written), and a job failed but not classified."""
    failed: dict[str, Any] = {"status": "Failed", "gmt_finished": at("13:00:00")}
    job = rows.job(JOB, name="bert", namespace="team-a", gmt_created=at("10:00:00"), **failed)
    other = rows.job(OTHER, name="plain", namespace="team-a", **failed)
    await Store().upsert(Job, [job, other])
    await Store().upsert(Attempt, [attempt("preempted"), attempt("finished")])
    await Store().upsert(Wait, [wait("pending")])
    failure: FailureRow = {
        "job_id": JOB,
        "version": "10",
        "namespace": "team-a",
        "failure_class": "GPUOutOfMemory",
        "pod_id": "pod-1",
        "pod_name": "bert-worker-0",
        "container": "pytorch",
        "exit_code": 1,
        "signal": None,
        "detail": "torch.OutOfMemoryError: CUDA out of memory",
        "derived_exit_code": 1,
        "gmt_created": at("13:00:00"),
    }
    await Store().upsert(FailedJob, [failure])
    async with TestClient(TestServer(api.Api(auth.NoAuth()).site())) as test_client:
        yield test_client


async def text(client: Client, path: str) -> str:
    response = await client.get(path)
    body = await response.text()
    assert response.status == 200, body
    return body


async def test_the_job_page_says_why_and_draws_the_attempts_and_the_preemption(
    client: Client,
) -> None:
    html = await text(client, f"/job?uid={JOB}")
    [why] = re.findall(r'<p class="why">(.*?)</p>', html, re.S)
    assert unescape(re.sub(r"<[^>]+>", "", why)) == (
        "Why: GPUOutOfMemory (pod bert-worker-0, container pytorch, exit code 1): "
        "torch.OutOfMemoryError: CUDA out of memory"
    )
    assert len(re.findall(r'<g class="attempt preempted">', html)) == 1
    assert len(re.findall(r'<g class="attempt finished">', html)) == 1
    assert html.count('<g class="preemption">') == 1
    assert "Kueue attempt (quota reserved to its end)" in html
    assert "and 2 Kueue attempts, 1 preempted" in html
    assert len(re.findall(r'<tr class="attempt">', html)) == 2
    assert f'href="job?uid={"7d3b1f9a-0000-4000-8000-00000000cafe"}"' in html
    [wait] = re.findall(r'<tr class="wait">(.*?)</tr>', html, re.S)
    assert "<td>Pending</td>" in wait and "4 more needed" in wait
    # Created 10:00:00, reserved 10:05:00 and 11:20:00; ready 90 s and 60 s after.
    assert "waited for quota 5m, to start 2m 30s, requeued 20m" in html


async def test_a_job_without_attempts_nor_class_has_no_band_and_no_why(client: Client) -> None:
    html = await text(client, f"/job?uid={OTHER}")
    assert '<p class="why">' not in html and '<g class="attempt' not in html
    assert "Kueue attempts and waits" not in html


async def test_the_job_list_shows_the_class_its_raw_reason_as_its_title(client: Client) -> None:
    html = await text(client, "/?namespace=team-a")
    cells = re.findall(r'<td class="reason[^"]*"[^>]*>([^<]*)</td>', html)
    assert sorted(cells) == ["", "GPUOutOfMemory"]


async def test_the_kube_tables_failure_column_shows_the_class(client: Client) -> None:
    accept = "application/json;as=Table;g=meta.k8s.io;v=v1"
    path = f"{PREFIX}/namespaces/team-a/archivedjobs"
    for where in (path, f"{path}/{JOB}"):
        response = await client.get(where, headers={"Accept": accept})
        table = await response.json()
        assert response.status == 200, table
        names = [column["name"] for column in table["columnDefinitions"]]
        failure = names.index("Failure")
        found = {row["cells"][0]: row["cells"][failure] for row in table["rows"]}
        assert found["bert"] == "GPUOutOfMemory"
        assert found.get("plain", "") == ""
    listed = await (await client.get(path)).json()
    classes = {job["metadata"]["name"]: job["status"]["failureClass"] for job in listed["items"]}
    assert classes == {"bert": "GPUOutOfMemory", "plain": None}
    got = await (await client.get(f"{path}/{JOB}")).json()
    assert [a["endReason"] for a in got["status"]["attempts"]] == ["Preempted", "Finished"]
    assert got["status"]["preemptions"] == 1 and got["status"]["quotaWaitSeconds"] == 300.0
