"""SubjectAccessReviews within a budget per identity, and the console's landing page
bounded and within the caller's clusters (decision 14), through a real ``jobarchive
serve`` over HTTP, its callers reviewed by the emulated API server, which counts the
reviews it was sent about each user. The attacks: one token asking about a new
namespace per request, to cost the API server a review each and push everyone else's
answers out; and a landing page opened to make the server review every namespace."""

import asyncio
import contextlib
import json
import pathlib
import re
import secrets
from collections.abc import AsyncIterator

import aiohttp
import pytest

from jobarchive.reading import ledger
from jobarchive.reading.api import PREFIX
from jobarchive.reading.console import mounts, views
from jobarchive.reading.kube.discovery import PREFIX as KUBE
from testbed.cluster import Cluster, Reviews
from testbed.operator import write_kubeconfig
from tests.support import fleet
from tests.support.fleet import EAST
from tests.support.history import History
from tests.support.serve import serve_process
from tests.support.waiting import answering

pytestmark = pytest.mark.e2e
MALLORY, BOB, CAROL = "mallory-token", "bob-token", "carol-token"
BURST, RATE = 5, 1
# More namespaces than the landing page reviews.
NAMESPACES = [f"ns-{number:02}" for number in range(views.LANDING + 10)]


@pytest.fixture
def reviews(cluster: Cluster) -> Reviews:
    """mallory reads nothing; bob every namespace; carol the first namespace and the
    last, past the landing page's bound."""
    table = Reviews(cluster)
    for token, name in ((MALLORY, "mallory"), (BOB, "bob"), (CAROL, "carol")):
        table.user(token, name)
    table.grant("user:bob")
    table.grant("user:carol", NAMESPACES[0])
    table.grant("user:carol", NAMESPACES[-1])
    return table


@contextlib.asynccontextmanager
async def served(
    tmp_path: pathlib.Path, db_url: str, cluster: Cluster, **env: str
) -> AsyncIterator[tuple[str, aiohttp.ClientSession]]:
    """A real ``jobarchive serve`` reviewing with the cluster: its origin, and a client."""
    kubeconfig = tmp_path / "serve-kubeconfig"
    write_kubeconfig(kubeconfig, cluster.url)
    log = tmp_path / "serve.log"
    serving = serve_process(db_url, log, KUBECONFIG=str(kubeconfig), **env)
    async with serving as running, aiohttp.ClientSession() as session:
        origin = f"http://127.0.0.1:{running.port}"
        # Answering at all (a 401 costs no review) is the sign that it serves.
        await answering(f"{origin}{PREFIX}/openapi.json", status=None)
        yield origin, session


@pytest.fixture
async def budgeted(
    tmp_path: pathlib.Path, archive: str, cluster: Cluster, reviews: Reviews
) -> AsyncIterator[tuple[str, aiohttp.ClientSession]]:
    """``serve`` with a budget of BURST reviews at once, RATE a second, per identity."""
    budget = {
        "JOBARCHIVE_ACCESS_REVIEW_BURST": str(BURST),
        "JOBARCHIVE_ACCESS_REVIEW_RATE": str(RATE),
    }
    async with served(tmp_path, archive, cluster, **budget) as both:
        yield both


async def fetch(
    session: aiohttp.ClientSession, url: str, token: str
) -> tuple[int, dict[str, str], str]:
    async with session.get(url, headers={"Authorization": f"Bearer {token}"}) as response:
        return response.status, dict(response.headers), await response.text()


def somewhere() -> str:
    """A namespace nobody asked about before."""
    return f"x{secrets.token_hex(6)}"


async def until_refused(session: aiohttp.ClientSession, url: str) -> tuple[dict[str, str], str]:
    """Mallory asks about new namespaces at ``url`` (``{}`` for one) until refused 429,
    within a bound: the answer's headers and body."""
    for _ in range(10 * BURST):
        status, headers, body = await fetch(session, url.format(somewhere()), MALLORY)
        if status == 429:
            return headers, body
        assert status == 403, body
    raise AssertionError("never refused")


async def test_one_callers_reviews_stay_within_its_budget_and_past_it_429_in_each_shape(
    budgeted: tuple[str, aiohttp.ClientSession], reviews: Reviews
) -> None:
    loop = asyncio.get_running_loop()
    origin, session = budgeted
    began = loop.time()
    statuses = [
        (await fetch(session, f"{origin}{PREFIX}/jobs?namespace={somewhere()}", MALLORY))[0]
        for _ in range(40)
    ]
    elapsed = loop.time() - began
    # The budget's burst, then its rate over the flood; each refused, never a 5xx.
    sent = reviews.asked_by.count("mallory")
    assert BURST <= sent <= BURST + RATE * elapsed + 1, (sent, elapsed)
    assert set(statuses) == {403, 429} and statuses.count(403) == sent

    headers, body = await until_refused(session, f"{origin}{PREFIX}/jobs?namespace={{}}")
    retry = int(headers["Retry-After"])
    assert 1 <= retry <= 1 / RATE + 1
    message = f"too many access reviews for this caller; retry in {retry} s"
    assert json.loads(body)["error"]["message"].startswith(message)
    assert json.loads(body)["error"]["status"] == 429

    url = f"{origin}{KUBE}/namespaces/{{}}/archivedjobs"
    headers, body = await until_refused(session, url)
    status = json.loads(body)
    shape = (status["kind"], status["reason"], status["code"])
    assert shape == ("Status", "TooManyRequests", 429)
    assert status["details"]["retryAfterSeconds"] == int(headers["Retry-After"]) >= 1

    headers, body = await until_refused(session, f"{origin}/?namespace={{}}")
    assert headers["Content-Type"].startswith("text/html") and int(headers["Retry-After"]) >= 1
    assert "429: too many checks of your access for now" in body

    # Another caller's budget is its own: bob is reviewed as ever.
    status_of_bob = await fetch(session, f"{origin}{PREFIX}/jobs?namespace=team-a", BOB)
    assert status_of_bob[0] == 200
    assert reviews.asked_by.count("bob") == 1


async def test_a_flood_of_one_caller_leaves_another_callers_answer_kept(
    tmp_path: pathlib.Path, archive: str, cluster: Cluster, reviews: Reviews
) -> None:
    # No budget to speak of, so that the flood's reviews are all sent: more answers of
    # mallory's than one identity's are kept (``ledger.DECISIONS``).
    unbounded = {"JOBARCHIVE_ACCESS_REVIEW_BURST": "100000"}
    async with served(tmp_path, archive, cluster, **unbounded) as (origin, session):
        bob = f"{origin}{PREFIX}/jobs?namespace=team-a"
        assert (await fetch(session, bob, BOB))[0] == 200
        assert reviews.asked_by.count("bob") == 1
        turns = asyncio.Semaphore(8)

        async def flood() -> int:
            async with turns:
                url = f"{origin}{PREFIX}/jobs?namespace={somewhere()}"
                return (await fetch(session, url, MALLORY))[0]

        flooding = ledger.DECISIONS + 50
        statuses = await asyncio.gather(*(flood() for _ in range(flooding)))
        assert set(statuses) == {403} and reviews.asked_by.count("mallory") == flooding
        # Bob's answer was kept: his next request sends no review.
        assert (await fetch(session, bob, BOB))[0] == 200
        assert reviews.asked_by.count("bob") == 1


def offered(html: str) -> list[str]:
    """The namespaces a landing page offers."""
    return re.findall(r'<a class="namespace" href="\./\?namespace=([^"]+)"', html)


async def test_the_landing_page_costs_one_review_for_a_cluster_wide_reader_and_few_otherwise(
    tmp_path: pathlib.Path, archive: str, cluster: Cluster, reviews: Reviews
) -> None:
    async with History() as history:
        for namespace in NAMESPACES:
            await history.job("mnist", namespace=namespace)
    async with served(tmp_path, archive, cluster) as (origin, session):
        for mount in ("", mounts.PATH):
            before = reviews.asked_by.count("bob")
            for _ in range(5):
                status, _, page = await fetch(session, f"{origin}{mount}/", BOB)
                assert status == 200 and "mnist" in page and 'class="landing"' not in page
            # At most one review per request, and none while its answer holds.
            assert reviews.asked_by.count("bob") - before == 1

            before = reviews.asked_by.count("carol")
            status, _, landing = await fetch(session, f"{origin}{mount}/", CAROL)
            # One over all namespaces, one for each of the first LANDING.
            assert reviews.asked_by.count("carol") - before == 1 + views.LANDING
            # The first is offered; the last, past the bound, is not reviewed.
            assert (status, offered(landing)) == (200, [NAMESPACES[0]])
            assert f"only the first {views.LANDING} by name were checked" in landing
            await fetch(session, f"{origin}{mount}/", CAROL)
            assert reviews.asked_by.count("carol") - before == 1 + views.LANDING


async def test_the_landing_page_names_no_namespace_of_a_cluster_the_caller_may_not_read(
    tmp_path: pathlib.Path, archive: str, cluster: Cluster
) -> None:
    async with History() as history:
        # team-a in east (home) and west, team-b in west only.
        await fleet.two_clusters(history)
    reviews = Reviews(cluster)
    for token, name in (("east-token", "eastern"), ("west-token", "western")):
        reviews.user(token, name)
        reviews.grant(f"user:{name}", "team-a")
        reviews.grant(f"user:{name}", "team-b")
    reviews.grant_clusters("user:western", fleet.WEST)
    async with served(tmp_path, archive, cluster, JOBARCHIVE_CLUSTER=EAST) as (origin, session):
        for mount in ("", mounts.PATH):
            status, _, landing = await fetch(session, f"{origin}{mount}/", "east-token")
            assert (status, offered(landing)) == (200, ["team-a"])
            assert "team-b" not in landing
            status, _, landing = await fetch(session, f"{origin}{mount}/", "west-token")
            assert (status, offered(landing)) == (200, ["team-a", "team-b"])
