"""Who reads what over real HTTP: a real ``jobarchive serve`` and the operator's own API,
each reviewing its callers with the emulated API server, which answers TokenReviews and
SubjectAccessReviews from a table as a real one does. The operator makes those reviews
and no other request that is not a read."""

import asyncio
import contextlib
import os
import pathlib
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from jobarchive.core.rows import DEFAULT_CLUSTER
from jobarchive.reading.api import PREFIX
from jobarchive.storage.models import Job
from testbed import objects as o
from testbed.cluster import (
    ACCESS_REVIEWS,
    EVENTS,
    PODS,
    TOKEN_REVIEWS,
    Cluster,
    Reviews,
    resource_of,
)
from testbed.operator import write_kubeconfig
from testbed.ports import free_port
from tests.support.commands import DATABASE_VARIABLES, JOBARCHIVE
from tests.support.history import History
from tests.support.operators import OperatorFactory
from tests.support.waiting import eventually

pytestmark = pytest.mark.e2e
TFJOBS = resource_of("kubeflow.org", "TFJob")
ALICE, BOB = "alice-token", "bob-token"


@pytest.fixture
def reviews(cluster: Cluster) -> Reviews:
    """alice in group ml-team-a, which reads team-a; bob reads every namespace."""
    table = Reviews(cluster)
    table.user(ALICE, "alice", "ml-team-a")
    table.user(BOB, "bob")
    table.grant("group:ml-team-a", "team-a")
    table.grant("user:bob")
    return table


@pytest.fixture
async def uids(archive: str) -> dict[str, str]:
    """One recorded job in team-a and one in team-b, by namespace."""
    async with History() as history:
        mine = await history.job("mnist", namespace="team-a")
        theirs = await history.job("bert", namespace="team-b", kind="PyTorchJob")
    return {"team-a": mine["metadata"]["uid"], "team-b": theirs["metadata"]["uid"]}


@contextlib.asynccontextmanager
async def served(
    tmp_path: pathlib.Path, db_url: str, api_server: str, *args: str
) -> AsyncIterator[str]:
    """``jobarchive serve`` with a kubeconfig for ``api_server``; its API's base URL."""
    kubeconfig = tmp_path / "serve-kubeconfig"
    write_kubeconfig(kubeconfig, api_server)
    port = free_port()
    inherited = {k: v for k, v in os.environ.items() if k not in DATABASE_VARIABLES}
    env = {**inherited, "JOBARCHIVE_DB_URL": db_url, "KUBECONFIG": str(kubeconfig)}
    # The rows History wrote are the default store's cluster's: serve's own (decision 36).
    env["JOBARCHIVE_CLUSTER"] = DEFAULT_CLUSTER
    with (tmp_path / "serve.log").open("ab") as log:
        process = await asyncio.create_subprocess_exec(
            str(JOBARCHIVE), "serve", "--port", str(port), *args, env=env, stdout=log, stderr=log
        )
    base = f"http://127.0.0.1:{port}{PREFIX}"
    try:
        # Answering at all (a 401 costs no review) is the sign that it serves.
        await eventually(lambda: status_of(base + "/openapi.json"), within=30)
        yield base
    finally:
        process.terminate()
        await process.wait()
        print((tmp_path / "serve.log").read_text())


async def status_of(url: str, token: str | None = None) -> int | None:
    try:
        return (await call(url, token))[0]
    except aiohttp.ClientConnectionError:
        return None


async def call(url: str, token: str | None = None) -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with aiohttp.ClientSession() as session, session.get(url, headers=headers) as response:
        return response.status, await response.json()


async def test_jobarchive_serve_shows_each_caller_what_kubernetes_grants(
    cluster: Cluster,
    reviews: Reviews,
    uids: dict[str, str],
    e2e_db_url: str,
    tmp_path: pathlib.Path,
) -> None:
    async with served(tmp_path, e2e_db_url, cluster.url) as base:
        assert (await call(f"{base}/jobs"))[0] == 401

        status, mine = await call(f"{base}/jobs?namespace=team-a", ALICE)
        assert (status, [job["name"] for job in mine["items"]]) == (200, ["mnist"])
        assert (await call(f"{base}/jobs/{uids['team-a']}", ALICE))[0] == 200
        assert (await call(f"{base}/jobs/{uids['team-b']}", ALICE))[0] == 404
        assert (await call(f"{base}/jobs?namespace=team-b", ALICE))[0] == 403
        status, everything = await call(f"{base}/jobs", ALICE)
        assert status == 403 and "name a namespace" in everything["error"]["message"]
        assert (await call(f"{base}/stats", ALICE))[0] == 403

        status, all_jobs = await call(f"{base}/jobs", BOB)
        assert (status, {job["namespace"] for job in all_jobs["items"]}) == (
            200,
            {"team-a", "team-b"},
        )
        assert (await call(f"{base}/stats", BOB))[0] == 200
        assert (await call(f"{base}/jobs/{uids['team-b']}", BOB))[0] == 200
    # One review per token, one per (user, verb, namespace): the rest came from the cache.
    # Bob's job of team-b is a get, and its Events' and pods' list there (one review).
    assert cluster.requests_to(TOKEN_REVIEWS) == 2
    assert cluster.requests_to(ACCESS_REVIEWS) == 8


async def test_jobarchive_serve_with_no_api_server_to_ask_answers_503(
    uids: dict[str, str], e2e_db_url: str, tmp_path: pathlib.Path
) -> None:
    nowhere = f"http://127.0.0.1:{free_port()}"
    async with served(tmp_path, e2e_db_url, nowhere) as base:
        status, body = await call(f"{base}/jobs?namespace=team-a", ALICE)
    assert status == 503
    assert body["error"]["message"].startswith(
        "cannot check the caller's access: the Kubernetes API did not answer"
    )
    assert ALICE not in (tmp_path / "serve.log").read_text()


async def test_jobarchive_serve_without_a_cluster_says_so_in_one_line(
    archive: str, tmp_path: pathlib.Path
) -> None:
    inherited = {k: v for k, v in os.environ.items() if k not in DATABASE_VARIABLES}
    inherited.pop("KUBERNETES_SERVICE_HOST", None)
    env = {**inherited, "JOBARCHIVE_DB_URL": archive, "KUBECONFIG": str(tmp_path / "none")}
    process = await asyncio.create_subprocess_exec(
        str(JOBARCHIVE),
        "serve",
        "--port",
        str(free_port()),
        env=env,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    _, stderr = await asyncio.wait_for(process.communicate(), 60)
    said = stderr.decode()
    *_, line = said.strip().splitlines()
    assert (process.returncode, "Traceback" in said) == (1, False), said
    assert line.startswith("Error: --auth kubernetes: no Kubernetes cluster: not running in a pod")
    assert line.endswith("; or serve this machine only with --auth none")


async def test_the_operators_api_reviews_callers_and_the_operator_writes_nothing_else(
    cluster: Cluster, reviews: Reviews, start_operator: OperatorFactory, archive: str
) -> None:
    port = free_port()
    await start_operator(JOBARCHIVE_API_PORT=str(port), JOBARCHIVE_API_HOST="127.0.0.1")
    await cluster.wait_watching([PODS, EVENTS, TFJOBS])
    mine, theirs = [
        await cluster.create(
            TFJOBS, o.with_meta(o.example("tfjob-simple.yaml"), name="mnist", namespace=namespace)
        )
        for namespace in ("team-a", "team-b")
    ]
    recorded = [job["metadata"]["uid"] for job in (mine, theirs)]

    async def both_recorded() -> bool:
        return await Job.filter(job_id__in=recorded).count() == 2

    await eventually(both_recorded)
    base = f"http://127.0.0.1:{port}{PREFIX}"

    status, listed = await call(f"{base}/jobs?namespace=team-a", ALICE)
    assert (status, [job["job_id"] for job in listed["items"]]) == (200, [recorded[0]])
    assert (await call(f"{base}/jobs/{theirs['metadata']['uid']}", ALICE))[0] == 404
    assert (await call(f"{base}/jobs/{theirs['metadata']['uid']}", BOB))[0] == 200
    assert (await call(f"{base}/stats", ALICE))[0] == 403
    assert (await call(f"{base}/jobs"))[0] == 401

    assert cluster.requests_to(TOKEN_REVIEWS) == 2
    # Bob's job of team-b: a get, and a list for the Events and pods it carries.
    assert cluster.requests_to(ACCESS_REVIEWS) == 5
    assert cluster.writes_by_others() == []
    # Only the reviews are let through: any other request that is not a read still counts.
    configmaps = f"{cluster.url}/api/v1/namespaces/team-a/configmaps"
    async with aiohttp.ClientSession() as session, session.post(configmaps, json={}):
        pass
    assert cluster.writes_by_others() == [f"POST {configmaps}"]
