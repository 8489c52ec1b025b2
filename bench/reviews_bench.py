"""One caller's flood of access reviews (decision 14): a real ``jobarchive serve``
reviewing its callers with an API server played here (``ApiServer``), which answers
TokenReviews and SubjectAccessReviews from a table and counts them per user: kmock's
emulator matches each request against every one it served before, and would be the
bottleneck of a flood.

mallory, granted nothing, keeps requests in flight without pause (``bench/flood.py``,
a process of its own), each asking about a namespace nobody asked about before: every
one is a SubjectAccessReview unless her budget stops it. Meanwhile bob, who reads every
namespace, asks for one namespace's jobs again and again, each request timed. Measured:
the reviews a second sent about mallory, and bob's p50, with the default budget and
with a budget too large to matter, beside bob's p50 with no flood (the baseline), all
in one run, on one machine (the emulated API server in this process).
"""

import asyncio
import collections
import contextlib
import json
import os
import pathlib
import secrets
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
from aiohttp import web

from bench.kubectl_bench import BIN, DATABASE_VARIABLES
from jobarchive.config import DEFAULTS, DbTls
from jobarchive.core.rows import DEFAULT_CLUSTER
from jobarchive.reading.api import PREFIX
from jobarchive.storage import database as db
from testbed.mariadb import Databases
from testbed.operator import REPO, write_kubeconfig
from testbed.ports import free_port

MALLORY, BOB = "mallory-token", "bob-token"
# A budget no flood of one caller reaches within the bench: as if there were none.
UNBOUNDED = {"JOBARCHIVE_ACCESS_REVIEW_BURST": "100000", "JOBARCHIVE_ACCESS_REVIEW_RATE": "10000"}
BUDGETED = {
    "JOBARCHIVE_ACCESS_REVIEW_BURST": str(DEFAULTS.access_review_burst),
    "JOBARCHIVE_ACCESS_REVIEW_RATE": str(DEFAULTS.access_review_rate),
}
PATHS = 200_000


class ApiServer:
    """The reviews of an API server: mallory's token is hers, bob's his; bob may read
    everything, mallory nothing. ``asked`` counts the access reviews per user."""

    def __init__(self) -> None:
        self.url = ""
        self.asked: collections.Counter[str] = collections.Counter()

    async def _token_review(self, request: web.Request) -> web.Response:
        token = (await request.json())["spec"]["token"]
        users = {MALLORY: "mallory", BOB: "bob"}
        status: dict[str, Any] = {"authenticated": False}
        if token in users:
            user = {"username": users[token], "groups": ["system:authenticated"]}
            status = {"authenticated": True, "user": user}
        return web.json_response({"kind": "TokenReview", "status": status})

    async def _access_review(self, request: web.Request) -> web.Response:
        user = (await request.json())["spec"]["user"]
        self.asked[user] += 1
        status = {"allowed": user == "bob"}
        return web.json_response({"kind": "SubjectAccessReview", "status": status})

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator["ApiServer"]:
        """Served on a free port of 127.0.0.1 for the block."""
        app = web.Application()
        app.router.add_post("/apis/authentication.k8s.io/v1/tokenreviews", self._token_review)
        app.router.add_post(
            "/apis/authorization.k8s.io/v1/subjectaccessreviews", self._access_review
        )
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        port = free_port()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        self.url = f"http://127.0.0.1:{port}"
        try:
            yield self
        finally:
            await runner.cleanup()


@contextlib.asynccontextmanager
async def serving(
    url: str, api: ApiServer, workdir: pathlib.Path, env: dict[str, str]
) -> AsyncIterator[str]:
    """A real ``jobarchive serve`` on ``url`` reviewing with ``api``: its API's base."""
    kubeconfig = workdir / "kubeconfig"
    write_kubeconfig(kubeconfig, api.url)
    port = free_port()
    inherited = {k: v for k, v in os.environ.items() if k not in DATABASE_VARIABLES}
    given = {"JOBARCHIVE_DB_URL": url, "KUBECONFIG": str(kubeconfig), **env}
    # The archive's rows, none, are no other cluster's than serve's own (decision 36).
    given["JOBARCHIVE_CLUSTER"] = DEFAULT_CLUSTER
    with (workdir / "serve.log").open("ab") as log:
        process = await asyncio.create_subprocess_exec(
            str(BIN / "jobarchive"),
            *("serve", "--port", str(port)),
            env={**inherited, **given},
            stdout=log,
            stderr=log,
        )
    base = f"http://127.0.0.1:{port}{PREFIX}"
    try:
        await _answering(base)
        yield base
    finally:
        process.terminate()
        await process.wait()


async def _answering(base: str, within: float = 60.0) -> None:
    deadline = time.monotonic() + within
    async with aiohttp.ClientSession() as session:
        while True:
            with contextlib.suppress(aiohttp.ClientConnectionError):
                async with session.get(f"{base}/openapi.json") as response:
                    await response.read()
                    return
            if time.monotonic() > deadline:
                raise AssertionError(f"jobarchive serve did not answer in {within} s")
            await asyncio.sleep(0.2)


async def bob_p50(base: str, seconds: float) -> float:
    """Bob's requests one after another for ``seconds``: their median, in ms."""
    took = []
    headers = {"Authorization": f"Bearer {BOB}"}
    async with aiohttp.ClientSession(headers=headers) as session:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            began = time.perf_counter()
            async with session.get(f"{base}/jobs?namespace=team-a") as response:
                await response.read()
                assert response.status == 200, response.status
            took.append((time.perf_counter() - began) * 1000)
    return statistics.median(took)


@contextlib.asynccontextmanager
async def flood(base: str, clients: int, workdir: pathlib.Path) -> AsyncIterator[dict[str, Any]]:
    """mallory's flood for the block, each request a namespace new to the server; its
    answers by status, once stopped."""
    listed = workdir / "paths.txt"
    listed.write_text("\n".join(f"/jobs?namespace=x{secrets.token_hex(6)}" for _ in range(PATHS)))
    answers: dict[str, Any] = {}
    process = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "bench.flood", base, str(listed), str(clients), MALLORY),
        cwd=REPO,
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        yield answers
    finally:
        process.terminate()
        out, _ = await process.communicate()
        answers.update(json.loads(out.decode() or "{}"))


async def flooded(
    url: str, api: ApiServer, env: dict[str, str], args: Any
) -> tuple[float, float, dict[str, Any]]:
    """Reviews a second about mallory and bob's p50 (ms) over a flood; its answers."""
    with tempfile.TemporaryDirectory() as workdir:
        async with serving(url, api, pathlib.Path(workdir), env) as base:
            await bob_p50(base, 1.0)  # bob known, his answer kept
            async with flood(base, args.reviews_clients, pathlib.Path(workdir)) as answers:
                await asyncio.sleep(1.0)  # the flood under way
                before, began = api.asked["mallory"], time.monotonic()
                p50 = await bob_p50(base, args.reviews_seconds)
                sent = api.asked["mallory"] - before
                rate = sent / (time.monotonic() - began)
    return rate, p50, answers


async def run(
    databases: Databases, line: Callable[..., None], ratio: Callable[..., bool], args: Any
) -> list[bool]:
    """The section's figures, printed; whether its targets were met."""
    url = databases.create("jobarchive_bench_reviews")
    await db.open_database(url, encryption=DbTls())
    await db.close_database()
    print(
        f"Reviews: one caller's flood of new namespaces ({args.reviews_clients} in flight, "
        f"{args.reviews_seconds} s), another caller's p50 ms meanwhile"
    )
    async with ApiServer().running() as api:
        with tempfile.TemporaryDirectory() as workdir:
            async with serving(url, api, pathlib.Path(workdir), BUDGETED) as base:
                await bob_p50(base, 1.0)
                baseline = await bob_p50(base, args.reviews_seconds)
        line("baseline: bob's p50, no flood", f"{baseline:.1f}")
        unbounded = await flooded(url, api, UNBOUNDED, args)
        budgeted = await flooded(url, api, BUDGETED, args)
    for name, (rate, p50, answers) in (("no budget", unbounded), ("budget", budgeted)):
        line(f"{name}: mallory's reviews/s", f"{rate:,.1f}", json.dumps(answers))
        line(f"{name}: bob's p50 during the flood", f"{p50:.1f}")
    burst, refill = DEFAULTS.access_review_burst, DEFAULTS.access_review_rate
    # Over the measured window the bucket gives its rate, and at most its burst besides.
    limit = refill + burst / args.reviews_seconds
    return [ratio("budget: mallory's reviews/s", budgeted[0], limit, higher_is_better=False)]
