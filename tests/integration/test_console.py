"""The web console over real HTTP on both databases, from a history recorded through
the real write path: each page, its headers, its errors as HTML pages with the API's
status and message, and the queries only the console asks (a job's timeline, the
statistics' figures)."""

import re
import urllib.parse
from collections.abc import AsyncIterator
from html import unescape
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from jobarchive.core.rows import PodFailureRow
from jobarchive.reading import api, auth, kube, queries
from jobarchive.reading.console import gantt, mounts
from jobarchive.reading.console.routes import PAGES
from jobarchive.storage import database as db
from jobarchive.storage.failed import FailedPod
from jobarchive.storage.models import Pod
from jobarchive.storage.store import Store
from tests.support.console import at, crawl, keep_log_tail, large_job, oom_killed_job
from tests.support.history import History

Client = TestClient[web.Request, web.Application]


@pytest.fixture
async def recorded(database: str) -> dict[str, Any]:
    """The OOM-killed TFJob, a recreation of its name, and three PyTorchJobs in team-b."""
    async with History() as history:
        first = await history.job(
            "bert-finetune", status="Failed", created=at(-600), finished=at(-590), gone=True
        )
        story = await oom_killed_job(history)
        for index in range(3):
            await history.job(
                f"sweep-{index}", namespace="team-b", kind="PyTorchJob", created=at(index)
            )
    return {
        "earlier": first["metadata"]["uid"],
        "uid": story["job"]["metadata"]["uid"],
        "story": story,
    }


@pytest.fixture
async def client(recorded: dict[str, Any]) -> AsyncIterator[Client]:
    async with TestClient(TestServer(api.Api(auth.NoAuth()).site())) as test_client:
        yield test_client


async def page(client: Client, path: str, status: int = 200) -> str:
    response = await client.get(path)
    text = await response.text()
    assert response.status == status, text
    assert response.content_type == "text/html"
    csp = response.headers["Content-Security-Policy"]
    assert "default-src 'none'" in csp and "script-src 'self'" in csp
    assert "frame-ancestors 'none'" in csp and "'unsafe-inline'" not in csp
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["Referrer-Policy"] == "no-referrer"
    assert "<script>" not in text and " style=" not in text
    return text


def resolved(base: str, href: str) -> str:
    """A link of a page at ``base`` as the browser follows it: its path and query."""
    target = urllib.parse.urljoin("http://console" + base, unescape(href))
    return target.removeprefix("http://console")


def rows(html: str, css_class: str) -> list[str]:
    return re.findall(rf'<tr class="{css_class}[^"]*">(.*?)</tr>', html, re.S)


async def test_the_list_filters_pages_and_links_each_job(client: Client, recorded: dict) -> None:
    everything = await page(client, "/")
    assert len(rows(everything, "job")) == 5
    assert f'href="job?uid={recorded["uid"]}"' in everything
    assert 'class="status status-failed">Failed<' in everything
    assert "32m" in everything  # the duration of the OOM-killed job

    failed = await page(client, "/?status=failed&namespace=team-a&kind=&owner=")
    assert len(rows(failed, "job")) == 2 and "sweep" not in failed
    assert 'value="team-a"' in failed  # the form shows its state

    first = await page(client, "/?namespace=team-b&limit=2")
    assert len(rows(first, "job")) == 2
    following = re.search(r'class="next" href="([^"]+)"', first)
    assert following is not None
    second = await page(client, resolved("/", following.group(1)))
    assert len(rows(second, "job")) == 1 and "sweep-0" in second and 'class="next"' not in second
    assert "namespace=team-b" in following.group(1)


async def test_the_job_page_draws_every_pod_the_failure_and_the_warnings(
    client: Client, recorded: dict
) -> None:
    html = await page(client, f"/job?uid={recorded['uid']}")
    assert f"jobarchive job {recorded['uid']}" in html
    assert len(re.findall(r'<g class="bar ', html)) == 2  # one per pod
    assert html.count('<g class="bar failed"') == 2
    assert "OOMKilled (exit code 137)</text>" in html and "Error (exit code 143)</text>" in html
    assert html.count('<g class="mark warning">') == 2
    assert html.count('<g class="mark normal">') == 1
    assert len(rows(html, "event warning")) == 2
    assert "Memory cgroup out of memory" in html
    assert f'href="job?uid={recorded["earlier"]}"' in html  # the earlier incarnation
    assert re.search(r"<td>Worker</td>\s*<td[^>]*>2</td>", html)  # replicas per role
    assert "<dt>Duration</dt><dd>32m</dd>" in html
    assert "<td>gpu-node-0</td>" in html and "<td>gpu-node-1</td>" in html  # spec.nodeName


async def test_errors_are_pages_with_the_apis_status_and_message(client: Client) -> None:
    bad = await page(client, "/?created_since=yesterday", 400)
    assert "created_since: &#39;yesterday&#39; is not a date or time" in bad
    assert '<form class="filters"' in bad  # to correct in place
    unknown = await page(client, "/?colour=red", 400)
    assert "unknown parameter" in unknown
    assert "no job with uid" in await page(client, "/job?uid=no-such-uid", 404)
    assert "uid: name the job" in await page(client, "/job", 400)
    assert "no such page" in await page(client, "/no/such/page", 404)
    too_long = await page(client, "/stats?since=2020-01-01&until=2026-01-01", 400)
    assert "over 366 days" in too_long
    script = "%3Cscript%3Ealert(1)%3C/script%3E"
    for hostile in (
        await page(client, f"/?owner={script}", 200),
        await page(client, f"/?namespace={script}", 400),
    ):
        assert "<script>alert" not in hostile and "&lt;script&gt;alert(1)" in hostile
    # The usage and statistics pages' errors come with their forms, holding the text
    # asked for, to correct in place.
    usage_error = await page(client, "/usage?by=queue&since=last+tuesday&namespace=team-a", 400)
    assert '<form class="filters" method="get" action="usage">' in usage_error
    assert 'value="last tuesday"' in usage_error and 'value="team-a"' in usage_error
    assert "<option selected>queue</option>" in usage_error
    stats_error = await page(client, "/stats?since=2026-01-01&until=yesterday", 400)
    assert '<form class="filters" method="get" action="stats">' in stats_error
    assert 'value="yesterday"' in stats_error
    json_404 = await client.get(api.PREFIX + "/nothing-here")
    assert json_404.status == 404 and json_404.content_type != "text/html"


async def test_the_statistics_chart_the_window(client: Client) -> None:
    html = await page(client, f"/stats?since={at(-24 * 60)}&until={at(24 * 60)}")
    assert html.count('class="segment status-') >= 2
    assert "Why pods of failed jobs failed, by failure class" in html
    assert "Unclassified" in html and "2 pods" in html
    assert "TFJob: 21m avg, 32m max" in html  # the running PyTorchJobs have no duration yet
    assert "alice: 1 job" in html and "(none): 4 jobs" in html
    default = await page(client, "/stats")
    assert "Jobs per day, by status" in default


async def test_the_static_files_come_from_the_package(client: Client) -> None:
    for name, kind in (("console.css", "text/css"), ("console.js", "text/javascript")):
        response = await client.get(f"/{name}")
        assert response.status == 200 and response.content_type == kind
        assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert (await client.get("/static/..%2Fviews.py")).status == 404
    assert (await client.get("/static/nothing.css")).status == 404


async def test_the_timeline_query_reads_compact_rows_and_the_stats_add_up(
    recorded: dict,
) -> None:
    drawn = await queries.job_timeline(recorded["uid"])
    assert drawn is not None and not drawn.pods_cut and not drawn.events_cut
    assert [pod["status"] for pod in drawn.pods] == ["Failed", "Failed"]
    assert set(drawn.pods[0]) == set(queries.TIMELINE_POD_FIELDS)
    assert [e["reason"] for e in drawn.events] == ["Scheduled", "OOMKilling", "TFJobFailed"]
    assert await queries.job_timeline("no-such-uid") is None

    since, until = queries.parse_time(at(-24 * 60), "s"), queries.parse_time(at(24 * 60), "u")
    per_day = await queries.jobs_per_day(since, until)
    assert sum(row["jobs"] for row in per_day) == 5
    assert {row["day"] for row in per_day} == {at(0)[:10]}
    # The failed pods by their own class: unclassified until the classifying pass runs.
    unclassified = {"failure_class": "Unclassified", "pods": 2, "jobs": 1}
    assert await queries.failed_pod_classes(since, until) == [unclassified]
    killed = await Pod.get(job_id=recorded["uid"], remark__startswith="OOMKilled")
    await Store().upsert(FailedPod, [classed(killed, "OOMKilled")])
    assert await queries.failed_pod_classes(since, until) == [
        {"failure_class": "OOMKilled", "pods": 1, "jobs": 1},
        {**unclassified, "pods": 1},
    ]
    owners = await queries.rollup("owner", None, None, since, until)
    assert [row["owner"] for row in owners if row["gpu_hours"]] == []


def classed(pod: Pod, failure_class: str) -> PodFailureRow:
    """A failed pod's class as the classifying pass writes it."""
    return {
        "pod_id": pod.pod_id,
        "version": "1",
        "job_id": pod.job_id,
        "namespace": pod.namespace,
        "failure_class": failure_class,
        "container": None,
        "exit_code": None,
        "signal": None,
        "detail": None,
        "gmt_created": None,
    }


async def test_a_two_thousand_pod_job_is_drawn_in_bounded_rows(database: str) -> None:
    async with History() as history:
        job = await large_job(history, 2000)
    async with TestClient(TestServer(api.Api(auth.NoAuth()).site())) as client:
        html = await page(client, f"/job?uid={job['metadata']['uid']}")
    pods_per_bar = [int(n) for n in re.findall(r'<g class="bar [a-z]+" data-pods="(\d+)"', html)]
    assert sum(pods_per_bar) == 2000
    assert len(pods_per_bar) <= gantt.BARS_PER_ROLE
    assert "worker · 2000 pods (grouped)" in html
    assert "OOMKilled (exit code 137)" in html
    assert len(html.encode()) < 150_000


async def test_the_timeline_reads_its_index(database: str) -> None:
    if database != "mysql":
        pytest.skip("EXPLAIN as MariaDB writes it")
    sql = queries.timeline_pods_sql("some-uid")
    _, plan = await db.connection().execute_query("EXPLAIN " + sql)
    assert plan[0]["key"] and plan[0]["key"] != "PRIMARY" and plan[0]["type"] == "ref"
    assert "filesort" not in (plan[0]["Extra"] or "").lower()


async def test_a_failed_pods_log_tail_is_linked_from_its_bar_and_row(
    client: Client, recorded: dict
) -> None:
    uid, story = recorded["uid"], recorded["story"]
    before = await page(client, f"/job?uid={uid}")
    assert "&amp;pod=" not in before
    text = b"epoch 3 loss 0.41\n<script>alert(1)</script>\nCUDA out of memory\n"
    await keep_log_tail(story["job"], story["pods"][1], text)

    job = await page(client, f"/job?uid={uid}")
    link = f'href="logs?uid={uid}&amp;pod=bert-finetune-worker-1"'
    # From the bar and from the pod's row; the worker without a tail has neither.
    assert job.count(link) == 2
    assert "pod=bert-finetune-worker-0" not in job

    logs = await page(client, f"/logs?uid={uid}&pod=bert-finetune-worker-1")
    assert "bert-finetune-worker-1 · tensorflow" in logs
    assert "OOMKilled (exit code 137)" in logs
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in logs and "<script>alert" not in logs
    assert f"jobarchive logs {uid}" in logs
    other = await page(client, f"/logs?uid={uid}&pod=bert-finetune-worker-0")
    assert "No log tail recorded for this pod or container." in other
    missing = await page(client, "/logs?uid=00000000-0000-4000-8000-000000000000", 404)
    assert "no job with uid" in missing
    too_many = await page(client, f"/logs?uid={uid}&limit=0", 400)
    assert "limit" in too_many


async def test_every_link_of_every_page_stays_under_its_mount(
    client: Client, recorded: dict
) -> None:
    uid, story = recorded["uid"], recorded["story"]
    await keep_log_tail(story["job"], story["pods"][1], b"CUDA out of memory\n")

    async def fetch(address: str) -> tuple[int, str, str]:
        response = await client.get(address)
        assert "default-src 'none'" in response.headers["Content-Security-Policy"], address
        assert response.headers["X-Content-Type-Options"] == "nosniff", address
        return response.status, response.content_type, await response.text()

    for mount in ("/", mounts.PATH + "/"):
        found = await crawl(fetch, mount)
        assert {status for status, _ in found.values()} == {200}
        # Every page and asset is one path segment below the mount.
        below = {a: urllib.parse.urlsplit(a).path.removeprefix(mount) for a in found}
        console = {name for name in below.values() if "/" not in name}
        assert console == {*PAGES, "console.css", "console.js", "favicon.svg"}
        assert any(f"logs?uid={uid}&pod=" in address for address in found)
        # The rest is the JSON of what a page shows, on the API beside it: the JSON API
        # at /, the aggregated API's objects under the prefix (a uid as the name).
        elsewhere = {
            a for a in found if urllib.parse.urlsplit(a).path.removeprefix(mount) not in console
        }
        assert {found[address][1] for address in elsewhere} == {"application/json"}
        if mount == "/":
            assert all(address.startswith(api.PREFIX + "/") for address in elsewhere)
        else:
            job = f"{kube.PREFIX}/namespaces/team-a/archivedjobs/{uid}"
            assert {kube.PREFIX, job, job + "/log"} <= elsewhere
            assert all(a == kube.PREFIX or a.startswith(kube.PREFIX + "/") for a in elsewhere)


async def test_the_prefix_without_its_slash_and_the_old_paths_lead_to_the_pages(
    client: Client, recorded: dict
) -> None:
    uid = recorded["uid"]
    for old, new in (
        (mounts.PATH, mounts.PATH + "/"),
        (f"/jobs/{uid}?limit=1", f"/job?uid={uid}&limit=1"),
        (f"/jobs/{uid}/logs?pod=x", f"/logs?uid={uid}&pod=x"),
        ("/static/console.css", "/console.css"),
    ):
        moved = await client.get(old, allow_redirects=False)
        assert moved.status == 301 and "://" not in moved.headers["Location"]
        assert resolved(old, moved.headers["Location"]) == new
    assert "OOMKilled" in await page(client, f"/jobs/{uid}")
    # What an old path holds is a parameter of the new one, never a place to go.
    for hostile in ("%2F%2Fevil.example%2F", "https:%2F%2Fevil.example", "..%2F..%2Fx"):
        moved = await client.get(f"/jobs/{hostile}/logs", allow_redirects=False)
        location = urllib.parse.urlsplit(moved.headers["Location"])
        assert (location.scheme, location.netloc, location.path) == ("", "", "../../logs")
        assert urllib.parse.parse_qs(location.query)["uid"] == [urllib.parse.unquote(hostile)]
    assert "no such page" in await page(client, "/static/nothing.css", 404)
    for missing in ("/nope", "/job/extra", f"{mounts.PATH}/nope", f"{mounts.PATH}/job/x"):
        assert "no such page" in await page(client, missing, 404)
    refused = await client.post(mounts.PATH + "/")
    assert refused.status == 405 and refused.content_type == "text/html"
    assert "GET" in refused.headers["Allow"]
    assert "the console answers GET only" in await refused.text()
