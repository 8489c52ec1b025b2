"""Who sees what in the console: the API's reviews, made of kmock's emulated API server,
which answers TokenReviews and SubjectAccessReviews from a table as a real one does.
A page carries the bearer token an authenticating proxy sets; a user allowed in one
namespace sees neither another namespace's job page (404, as if it never was) nor its
jobs in the list, and lands on the namespaces it may read. Under the aggregated prefix
the pages are reviewed as the archive's own resources."""

import pathlib
import re
from collections.abc import AsyncIterator
from html import unescape

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from jobarchive.config import DbTls
from jobarchive.infra import cluster as kube
from jobarchive.reading import api, auth, queries
from jobarchive.reading.console import mounts
from jobarchive.storage import database as db
from jobarchive.storage.readpool import ReadPool
from testbed.cluster import Cluster, Reviews
from testbed.operator import write_kubeconfig
from tests.support.console import oom_killed_job
from tests.support.failures import classify, failure
from tests.support.history import History

Client = TestClient[web.Request, web.Application]
ALICE, BOB, CAROL, DAVE, ERIN = "alice-token", "bob-token", "carol-t", "dave-t", "erin-t"
ARCHIVE = "archive.jobarchive.io"


@pytest.fixture
async def uids(tmp_path: pathlib.Path) -> AsyncIterator[dict[str, str]]:
    """The OOM-killed job in team-a, team-b and team-c: their uids by namespace."""
    url = f"sqlite://{tmp_path / 'archive.sqlite3'}"
    await db.open_database(url, encryption=DbTls(), read_pool=ReadPool(url))
    async with History() as history:
        mine = await oom_killed_job(history, "team-a")
        theirs = await oom_killed_job(history, "team-b")
        third = await oom_killed_job(history, "team-c")
    jobs = {"team-a": mine, "team-b": theirs, "team-c": third}
    yield {namespace: story["job"]["metadata"]["uid"] for namespace, story in jobs.items()}
    await db.close_database()


@pytest.fixture
def reviews(cluster: Cluster) -> Reviews:
    """The cluster's reviews: alice reads team-a (jobs.jobarchive.io only), bob every
    namespace, carol team-a and team-c, dave none; erin reads team-a's archived jobs and
    their logs through the aggregated API only, not its archived Events nor pods."""
    table = Reviews(cluster)
    for token, name in ((BOB, "bob"), (CAROL, "carol"), (DAVE, "dave"), (ERIN, "erin")):
        table.user(token, name)
    table.user(ALICE, "alice", "ml-team-a")
    table.grant("group:ml-team-a", "team-a", frozenset({("jobarchive.io", "jobs", "")}))
    table.grant("user:bob")
    table.grant("user:carol", "team-a")
    table.grant("user:carol", "team-c")
    logged = frozenset({(ARCHIVE, "archivedjobs", ""), (ARCHIVE, "archivedjobs", "log")})
    table.grant("user:erin", "team-a", logged)
    return table


@pytest.fixture
async def console(
    uids: dict[str, str],
    reviews: Reviews,
    cluster: Cluster,
    tmp_path: pathlib.Path,
    monkeypatch: pytest.MonkeyPatch,
) -> AsyncIterator[Client]:
    """The application as ``jobarchive serve`` builds it, reviewing with the cluster's
    API as ``reviews`` answers."""
    kubeconfig = tmp_path / "kubeconfig"
    write_kubeconfig(kubeconfig, cluster.url)
    monkeypatch.setattr(kube, "KUBE_CONFIG_DEFAULT_LOCATION", str(kubeconfig))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    access = await auth.access("kubernetes")
    async with TestClient(TestServer(api.Api(access).site())) as client:
        yield client


def offered(html: str) -> list[str]:
    """The namespaces' links a landing page offers, as written."""
    return [unescape(link) for link in re.findall(r'<a class="namespace" href="([^"]+)"', html)]


async def page(client: Client, path: str, token: str | None, status: int) -> str:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    response = await client.get(path, headers=headers)
    text = await response.text()
    assert response.status == status, text
    assert response.content_type == "text/html"
    return text


async def test_a_namespace_reader_sees_that_namespace_only(
    console: Client, uids: dict[str, str]
) -> None:
    mine = await page(console, "/?namespace=team-a", ALICE, 200)
    assert uids["team-a"] in mine and "team-a/bert-finetune" in mine
    assert "OOMKilled" in await page(console, f"/job?uid={uids['team-a']}", ALICE, 200)

    hidden = await page(console, f"/job?uid={uids['team-b']}", ALICE, 404)
    assert "no job with uid" in hidden and "team-b" not in hidden
    refused = await page(console, "/?namespace=team-b", ALICE, 403)
    assert "may not list jobs.jobarchive.io in namespace &#39;team-b&#39;" in refused
    assert uids["team-b"] not in refused
    landing = await page(console, "/", ALICE, 200)
    assert offered(landing) == ["./?namespace=team-a"] and uids["team-b"] not in landing
    assert "covers all namespaces" in await page(console, "/stats", ALICE, 403)


async def test_a_cluster_wide_reader_sees_everything_and_strangers_nothing(
    console: Client, uids: dict[str, str]
) -> None:
    everything = await page(console, "/", BOB, 200)
    assert uids["team-a"] in everything and uids["team-b"] in everything
    assert "OOMKilled" in await page(console, f"/job?uid={uids['team-b']}", BOB, 200)
    assert "Jobs per day" in await page(console, "/stats", BOB, 200)

    for path in ("/", f"/job?uid={uids['team-a']}", "/stats"):
        response = await console.get(path)
        assert response.status == 401 and response.headers["WWW-Authenticate"] == "Bearer"
        assert "bearer token is required" in await response.text()
    stolen = await page(console, f"/job?uid={uids['team-a']}", "stolen-token", 401)
    assert uids["team-a"] not in stolen.split("<main>")[1]


async def test_a_reader_of_some_namespaces_lands_on_them_and_a_reader_of_none_is_told_why(
    console: Client, uids: dict[str, str], reviews: Reviews
) -> None:
    landing = await page(console, "/?status=Failed", CAROL, 200)
    assert offered(landing) == [
        "./?status=Failed&namespace=team-a",
        "./?status=Failed&namespace=team-c",
    ]
    assert "team-b" not in landing and not any(uid in landing for uid in uids.values())
    assert "<option selected>Failed</option>" in landing  # the form keeps the filter
    # One review over all namespaces and one per namespace; none again while they hold.
    first, *each = [(r["verb"], r["namespace"]) for r in reviews.asked]
    assert (first, sorted(each)) == (("list", ""), [("list", ns) for ns in sorted(uids)])
    await page(console, "/", CAROL, 200)
    assert len(reviews.asked) == 1 + len(uids)
    chosen = await page(console, "/?status=Failed&namespace=team-c", CAROL, 200)
    assert uids["team-c"] in chosen and uids["team-a"] not in chosen

    nothing = await page(console, "/", DAVE, 403)
    assert "may not list jobs.jobarchive.io in any namespace the archive holds" in nothing
    assert "--clusterrole=jobarchive-reader --user=dave" in nothing
    assert not any(f"namespace={namespace}" in nothing for namespace in uids)
    bad = await page(console, "/?created_since=someday", DAVE, 400)
    assert "is not a date or time" in bad
    # A review that fails is a 503, whichever of the landing's it is.
    async with History() as history:
        await history.job("late", namespace="team-d")
    reviews.failing = True
    failed = await page(console, "/", CAROL, 503)
    assert "cannot check the caller" in failed and "team-d" not in failed
    reviews.failing = False
    # Past the landing's bound, what is left out is said.
    every = ["team-a", "team-b", "team-c", "team-d"]
    assert await queries.job_namespaces(3) == (every[:3], True)
    assert await queries.job_namespaces(4) == (every, False)


async def test_under_the_prefix_pages_are_reviewed_as_the_archives_resources(
    console: Client, uids: dict[str, str]
) -> None:
    root = mounts.PATH + "/"
    landing = await page(console, root, ERIN, 200)
    assert offered(landing) == ["./?namespace=team-a"]
    assert f"archivedjobs.{ARCHIVE}" in landing
    listed = await page(console, root + "?namespace=team-a", ERIN, 200)
    assert uids["team-a"] in listed
    job = await page(console, f"{root}job?uid={uids['team-a']}", ERIN, 200)
    # Nor the archived pods (their OOMKilled remarks): each list left out, and said so.
    assert "OOMKilled" not in job and "Memory cgroup out of memory" not in job
    assert f"may not list <code>archivedevents.{ARCHIVE}</code> in namespace team-a" in job
    assert f"may not list <code>archivedpods.{ARCHIVE}</code> in namespace team-a" in job
    assert '<g class="mark' not in job
    logs = await page(console, f"{root}logs?uid={uids['team-a']}", ERIN, 200)
    assert "No log tail recorded" in logs
    assert "no job with uid" in await page(console, f"{root}job?uid={uids['team-b']}", ERIN, 404)
    refused = await page(console, root + "?namespace=team-b", ERIN, 403)
    assert f"may not list archivedjobs.{ARCHIVE} in namespace &#39;team-b&#39;" in refused
    assert "covers all namespaces" in await page(console, root + "stats", ERIN, 403)
    # Erin reads nothing at /, where reads are jobs.jobarchive.io's; alice the reverse.
    assert "may not list jobs.jobarchive.io in any" in await page(console, "/", ERIN, 403)
    elsewhere = await page(console, root, ALICE, 403)
    assert f"may not list archivedjobs.{ARCHIVE} in any" in elsewhere
    hidden = await page(console, f"{root}job?uid={uids['team-a']}", ALICE, 404)
    assert "OOMKilled" not in hidden and "team-a" not in hidden


async def test_a_namespace_reader_sees_its_namespaces_failure_classes_alone(
    console: Client, uids: dict[str, str]
) -> None:
    await classify(failure(uids["team-a"], "OOMKilled", "team-a"))
    await classify(failure(uids["team-b"], "NCCLError", "team-b"))
    window = "by=failure&since=2026-11-20&until=2026-11-21"
    mine = await page(console, f"/usage?{window}&namespace=team-a", ALICE, 200)
    assert ">OOMKilled</a></td>" in mine and "NCCLError" not in mine
    # A class's row leads to its jobs in the list, within the page's namespace.
    [listed] = re.findall(r'<a href="(\./\?[^"]*failure=OOMKilled[^"]*)"', mine)
    assert "namespace=team-a" in unescape(listed)
    assert uids["team-a"] in await page(console, unescape(listed), ALICE, 200)
    # A namespace's page leads to no cluster queue's figures: they are the cluster's.
    [queues] = re.findall(r'Grouped <a href="([^"]+)"', mine)
    assert "by=clusterqueue" in queues and "namespace" not in queues
    for refused in (f"/usage?{window}&namespace=team-b", f"/usage?{window}"):
        assert "NCCLError" not in await page(console, refused, ALICE, 403)
    headers = {"Authorization": f"Bearer {ALICE}"}
    answer = await console.get(f"{api.PREFIX}/usage?{window}&namespace=team-a", headers=headers)
    assert [row["failure"] for row in (await answer.json())["items"]] == ["OOMKilled"]
    other = await console.get(f"{api.PREFIX}/usage?{window}&namespace=team-b", headers=headers)
    assert other.status == 403 and "NCCLError" not in await other.text()
    # The usage page's own chart of classes, over every namespace, needs every namespace.
    assert "NCCLError" not in await page(console, "/usage?since=2026-11-20", ALICE, 403)
    everything = await page(console, f"/usage?{window}", BOB, 200)
    assert ">OOMKilled</a></td>" in everything and ">NCCLError</a></td>" in everything
