"""The console's figures over real HTTP on both databases, from a history recorded through
the real write path: the jobs list's GPUs, queue, GPU-hours, queue wait and failure
reason (usage's one definition); the job page's waits, hours and restarts; the usage
page's table and its CSV, the same rows the API answers as CSV; every bar and row
leading to the job list it counts."""

import csv
import io
import re
import urllib.parse
from collections.abc import AsyncIterator
from html import unescape
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from jobarchive.reading import api, auth
from jobarchive.reading.console import mounts
from jobarchive.storage.models import Job
from tests.support.console import at, gpu_job, oom_killed_job
from tests.support.history import History

Client = TestClient[web.Request, web.Application]
WINDOW = f"since={at(-24 * 60)}&until={at(24 * 60)}"
DAY = at(0)[:10]
NEXT_DAY = f"{DAY[:8]}{int(DAY[8:]) + 1:02d}"
UNNAMED = "1f0c3a9e-7b2d-4c1e-9f3a-5d6e7f8a9b0c"


@pytest.fixture
async def recorded(database: str) -> dict[str, Any]:
    """bob's 8-GPU job in queue a100 with a restarted worker, alice's OOM-killed job."""
    async with History() as history:
        trained = await gpu_job(history)
        failed = await oom_killed_job(history)
    return {"gpu": trained["metadata"]["uid"], "oom": failed["job"]["metadata"]["uid"]}


@pytest.fixture
async def client(recorded: dict[str, Any]) -> AsyncIterator[Client]:
    async with TestClient(TestServer(api.Api(auth.NoAuth()).site())) as test_client:
        yield test_client


async def text(client: Client, path: str, kind: str = "text/html") -> str:
    response = await client.get(path)
    body = await response.text()
    assert response.status == 200, body
    assert response.content_type == kind
    return body


def row_of(html: str, css_class: str, holding: str) -> str:
    [found] = [
        row
        for row in re.findall(rf'<tr class="{css_class}">(.*?)</tr>', html, re.S)
        if holding in row
    ]
    return found


def cells(row: str, css_class: str) -> list[str]:
    return [
        unescape(cell).strip() for cell in re.findall(rf'class="{css_class}"[^>]*>([^<]*)<', row)
    ]


def links(html: str) -> list[str]:
    return [unescape(href) for href in re.findall(r'href="([^"]+)"', html)]


def leads(html: str) -> list[tuple[str, dict[str, str]]]:
    """Each link of a page as its path and its query's parameters."""
    found = []
    for href in links(html):
        parts = urllib.parse.urlsplit(href)
        found.append((parts.path, dict(urllib.parse.parse_qsl(parts.query))))
    return found


def jobs_of(created_since: str, created_until: str, **filters: str) -> tuple[str, dict]:
    return "./", {**filters, "created_since": created_since, "created_until": created_until}


async def test_the_list_shows_gpus_queue_hours_wait_and_why_a_job_failed(
    client: Client, recorded: dict
) -> None:
    html = await text(client, "/")
    trained = row_of(html, "job", "team-c/llm-train")
    assert cells(trained, "number gpus") == ["8"]
    assert cells(trained, "number gpu-hours") == ["8"]  # 2 pods x 4 GPUs x 1 h
    assert "<td>a100</td>" in trained and '<td class="number">10m</td>' in trained
    failed = row_of(html, "job", "team-a/bert-finetune")
    assert cells(failed, "reason") == ["OOMKilled (exit code 137)"]
    assert cells(trained, "reason") == [""]
    # The API's own answer of the same jobs is unchanged: the figures are the console's.
    listed = await (await client.get(api.PREFIX + "/jobs")).json()
    assert all("gpu_hours" not in job for job in listed["items"])


async def test_an_unnamed_cluster_is_shown_by_its_uids_first_characters(
    client: Client, recorded: dict
) -> None:
    await Job.filter(job_id=recorded["gpu"]).update(cluster=UNNAMED)
    html = await text(client, "/")
    trained = row_of(html, "job", "team-c/llm-train")
    assert f'<td class="cluster" title="{UNNAMED}">{UNNAMED[:8]}</td>' in trained
    failed = row_of(html, "job", "team-a/bert-finetune")
    assert '<td class="cluster">default</td>' in failed


async def test_the_job_page_shows_the_wait_the_hours_and_each_pods_restarts(
    client: Client, recorded: dict
) -> None:
    html = await text(client, f"/job?uid={recorded['gpu']}")
    assert '<dd class="queue-wait">10m</dd>' in html
    assert '<dd class="gpus">8</dd>' in html
    assert '<dd class="gpu-hours">8 ' in html
    restarts = re.findall(r'<td class="number restarts"[^>]*>(\d+)</td>', html)
    assert sorted(restarts) == ["0", "1"]
    assert f'title="the last at {at(40).replace("T", " ").replace("Z", " UTC")}"' in html
    # One bar per pod, the restarted one marked where its container ended.
    assert len(re.findall(r'<g class="bar ', html)) == 2
    assert html.count('<path class="restart"') == 1
    assert "restarted once, the last at" in html
    oom = await text(client, f"/job?uid={recorded['oom']}")
    assert '<path class="restart"' not in oom
    assert '<dt>Why it failed</dt><dd class="remark">OOMKilled (exit code 137)</dd>' in oom


async def test_the_usage_page_tables_its_figures_and_links_each_to_its_jobs(
    client: Client,
) -> None:
    html = await text(client, f"/usage?by=owner&{WINDOW}")
    bob = row_of(html, "usage-row", ">bob<")
    assert re.search(r'<td class="number">8</td>', bob)  # GPU-hours
    assert leads(bob) == [jobs_of(at(-24 * 60), at(24 * 60), owner="bob")]
    # A bar of bob's on the day leads to his jobs created that day.
    assert jobs_of(DAY, NEXT_DAY, owner="bob") in leads(html)
    # Every link is relative and stays on the page's mount.
    assert all("://" not in href and not href.startswith("/") for href in links(html))
    [listed] = links(bob)
    jobs = await text(client, urllib.parse.urljoin("/usage", listed))
    assert "team-c/llm-train" in jobs and "bert-finetune" not in jobs


async def test_the_usage_csv_link_downloads_the_rows_the_api_answers_as_csv(
    client: Client,
) -> None:
    for mount in ("/", mounts.PATH + "/"):
        page = await text(client, f"{mount}usage?by=queue&{WINDOW}")
        [href] = re.findall(r'<a class="csv" href="([^"]+)"', page)
        assert unescape(href).startswith("usage.csv?by=queue&")
        response = await client.get(urllib.parse.urljoin(mount + "usage", unescape(href)))
        assert response.status == 200 and response.content_type == "text/csv"
        disposition = response.headers["Content-Disposition"]
        assert disposition == 'attachment; filename="usage-by-queue.csv"'
        assert "default-src 'none'" in response.headers["Content-Security-Policy"]
        downloaded = await response.text()
        asked = await client.get(
            f"{api.PREFIX}/usage?by=queue&{WINDOW}", headers={"Accept": "text/csv"}
        )
        assert downloaded == await asked.text()
    rows = list(csv.DictReader(io.StringIO(downloaded)))
    assert {row["queue"]: row["gpu_hours"] for row in rows} == {"a100": "8.0", "": "0.0"}


async def test_a_bad_usage_csv_request_is_an_error_page(client: Client) -> None:
    response = await client.get("/usage.csv?by=colour")
    assert response.status == 400 and response.content_type == "text/html"
    assert '<form class="filters" method="get" action="usage">' in await response.text()


async def test_the_statistics_count_in_words_and_each_bar_leads_to_its_jobs(
    client: Client,
) -> None:
    html = await text(client, f"/stats?{WINDOW}")
    assert "2 jobs in all." in html and "2.0" not in html
    assert jobs_of(DAY, NEXT_DAY, status="Failed") in leads(html)
    assert jobs_of(at(-24 * 60), at(24 * 60), owner="alice") in leads(html)
    [failed] = [href for href in links(html) if "status=Failed" in href]
    jobs = await text(client, urllib.parse.urljoin("/stats", failed))
    assert "team-a/bert-finetune" in jobs and "llm-train" not in jobs
