"""``kubectl get archivedjobs --chunk-size=500`` paging a namespace of 100,000 jobs,
beside the JSON API's pages of the same jobs, in the same run from the same
``jobarchive serve``: each page's time to answer, p50 and p99.

Three ways over the same rows: the JSON API's ``/api/v1/jobs?namespace=...&limit=500``
walked by its cursors (the baseline) and the aggregated API's Table pages walked by
their continue, both timed per request by one aiohttp client to the whole body; and a
real kubectl, whose own per-request times (client-go's ``-v=6`` lines) are taken for
the same pages, and whose whole run (discovery, decoding, printing) is timed too. The
server runs with ``--auth none``: no review is timed, and kubectl, which sends no token
over plain HTTP, needs none.
"""

import asyncio
import contextlib
import datetime
import json
import os
import pathlib
import re
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator

import aiohttp

from bench.e2e_bench import percentiles
from jobarchive.config import DbTls
from jobarchive.core.rows import JobRow
from jobarchive.reading.kube.discovery import PREFIX
from jobarchive.storage import database as db
from jobarchive.storage.models import Job
from jobarchive.storage.readpool import ReadPool
from jobarchive.storage.store import Store
from testbed.ports import free_port

NAMESPACE = "bench"
PAGE = 500
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
T0 = datetime.datetime(2025, 11, 20, tzinfo=datetime.UTC)
# client-go's line for one answered request at -v=6.
ANSWERED = re.compile(r'"Response" verb="GET" url="([^"]+)" status="200 OK" milliseconds=(\d+)')
BIN = pathlib.Path(sys.executable).parent
DATABASE_VARIABLES = ("JOBARCHIVE_DB_URL", "JOBARCHIVE_DB_URL_FILE", "JOBARCHIVE_READ_DB_URL")


def _job(index: int) -> JobRow:
    finished = T0 + datetime.timedelta(seconds=index, minutes=30)
    return {
        "job_id": str(uuid.UUID(int=index + 1)),
        "version": str(index + 1),
        "name": f"sweep-{index}",
        "namespace": NAMESPACE,
        "gmt_created": T0 + datetime.timedelta(seconds=index),
        "kind": "PyTorchJob",
        "status": "Succeeded",
        "resources": json.dumps(
            {"Worker": {"replicas": 4, "resources": {"limits": {"nvidia.com/gpu": "8"}}}}
        ),
        "deploy_region": "eu-west-1",
        "tenant": "ml",
        "owner": f"user-{index % 50}",
        "deleted": True,
        "is_in_etcd": False,
        "gmt_finished": finished,
        "gmt_job_running": T0 + datetime.timedelta(seconds=index, minutes=1),
        "api_version": "kubeflow.org/v1",
        "remark": None,
        "queue": "research",
    }


async def _fill(url: str, jobs: int) -> None:
    await db.open_database(url, encryption=DbTls(), read_pool=ReadPool(url))
    try:
        store = Store()
        for first in range(0, jobs, PAGE):
            await store.upsert(Job, [_job(i) for i in range(first, min(jobs, first + PAGE))])
        await db.connection().execute_script("ANALYZE TABLE job_info")
    finally:
        await db.close_database()


@contextlib.asynccontextmanager
async def serving(url: str, workdir: pathlib.Path, **env: str) -> AsyncIterator[str]:
    """A real ``jobarchive serve --auth none`` on ``url``, ``env`` added to its
    environment: its origin, once it answers; stopped at the end."""
    port = free_port()
    inherited = {k: v for k, v in os.environ.items() if k not in DATABASE_VARIABLES}
    with (workdir / "serve.log").open("ab") as log:
        process = await asyncio.create_subprocess_exec(
            str(BIN / "jobarchive"),
            *("serve", "--auth", "none", "--port", str(port)),
            env={**inherited, "JOBARCHIVE_DB_URL": url, **env},
            stdout=log,
            stderr=log,
        )
    origin = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        async with aiohttp.ClientSession() as session:
            while True:
                with contextlib.suppress(aiohttp.ClientConnectionError):
                    async with session.get(origin + PREFIX) as response:
                        if response.status == 200:
                            break
                if time.monotonic() > deadline:
                    raise RuntimeError("jobarchive serve did not answer within 60 s")
                await asyncio.sleep(0.2)
        yield origin
    finally:
        process.terminate()
        await process.wait()


async def _walk(
    session: aiohttp.ClientSession, url: str, cursor: str, headers: dict[str, str]
) -> tuple[list[float], int]:
    """Seconds per page of a list walked to its end, and the rows it held."""
    samples: list[float] = []
    following, seen = "", 0
    while True:
        started = time.perf_counter()
        async with session.get(url + following, headers=headers) as response:
            page = await response.json()
        samples.append(time.perf_counter() - started)
        if response.status != 200:
            raise RuntimeError(f"{url} answered {response.status}")
        seen += len(page.get("items", page.get("rows", [])))
        after = page.get("next_cursor") or page.get("metadata", {}).get("continue")
        if not after:
            return samples, seen
        following = f"&{cursor}={after}"


async def _kubectl(origin: str, workdir: pathlib.Path) -> tuple[list[float], int, float]:
    """kubectl's own seconds per page, the rows it printed, and its whole run's seconds."""
    config = workdir / "kubeconfig"
    config.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "a", "cluster": {"server": origin}}],
                "users": [{"name": "u", "user": {}}],
                "contexts": [{"name": "a", "context": {"cluster": "a", "user": "u"}}],
                "current-context": "a",
            }
        )
    )
    args = ("get", "archivedjobs", "-n", NAMESPACE, f"--chunk-size={PAGE}", "-v=6")
    started = time.perf_counter()
    process = await asyncio.create_subprocess_exec(
        str(BIN / "kubectl"),
        f"--kubeconfig={config}",
        f"--cache-dir={workdir / 'cache'}",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    took = time.perf_counter() - started
    if process.returncode != 0:
        raise RuntimeError(f"kubectl failed: {err.decode()[-500:]}")
    pages = [
        int(ms) / 1000
        for url, ms in ANSWERED.findall(err.decode())
        if "/archivedjobs?" in url and "limit=" in url
    ]
    return pages, len(out.decode().splitlines()) - 1, took


async def run(url: str, jobs: int) -> tuple[dict[str, tuple[float, float, int]], float]:
    """Fill a namespace of ``jobs`` jobs; per way of reading it, p50 and p99 seconds per
    page and how many pages; and kubectl's whole run in seconds."""
    await _fill(url, jobs)
    with tempfile.TemporaryDirectory() as scratch:
        workdir = pathlib.Path(scratch)
        async with serving(url, workdir) as origin, aiohttp.ClientSession() as session:
            json_api = f"{origin}/api/v1/jobs?namespace={NAMESPACE}&limit={PAGE}"
            aggregated = f"{origin}{PREFIX}/namespaces/{NAMESPACE}/archivedjobs?limit={PAGE}"
            figures: dict[str, tuple[float, float, int]] = {}
            for name, listed, cursor, headers in (
                ("JSON API /api/v1/jobs page", json_api, "cursor", {}),
                ("aggregated API Table page", aggregated, "continue", {"Accept": TABLE}),
            ):
                samples, seen = await _walk(session, listed, cursor, headers)
                if seen != jobs:
                    raise RuntimeError(f"{name}: {seen} rows of {jobs}")
                figures[name] = (*percentiles(samples), len(samples))
            pages, printed, took = await _kubectl(origin, workdir)
            if printed != jobs:
                raise RuntimeError(f"kubectl printed {printed} rows of {jobs}")
            figures["kubectl get --chunk-size=500 page"] = (*percentiles(pages), len(pages))
    return figures, took
