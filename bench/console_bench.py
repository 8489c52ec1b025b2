"""The console's job page of a 2,000-pod job (and as many Events): the time to answer it
(queries, timeline geometry, template) and its weight, beside the API's JSON detail of
the same job in the same run as the baseline. Both are asked over HTTP of the same
application, without authentication, each ``REPEAT`` times after a warm-up.

The rows are the converters' output for realistic objects (``bench.data``), given
varied lives (waves of starts, finishes, a few OOM kills, some still running), and
written by the store's upsert.
"""

import datetime
import time
from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from bench import data
from bench.e2e_bench import percentiles
from jobarchive.config import DbTls
from jobarchive.reading import api, auth
from jobarchive.storage import database as db
from jobarchive.storage.models import Event, Job, Pod
from jobarchive.storage.readpool import ReadPool
from jobarchive.storage.store import Store

REPEAT = 20
T0 = datetime.datetime(2026, 11, 20, 10, 0, tzinfo=datetime.UTC)


def _lives(rows: data.Rows) -> None:
    """Waves of pods: created a minute apart per wave of 100, each started a minute
    later, most finished within the hour, one in forty OOM-killed, the last wave running."""
    for index, pod in enumerate(rows.pods):
        wave = index // 100
        created = T0 + datetime.timedelta(minutes=wave)
        pod["gmt_created"] = created
        pod["gmt_started"] = created + datetime.timedelta(minutes=1)
        if wave == len(rows.pods) // 100 - 1:
            continue
        pod["gmt_finished"] = created + datetime.timedelta(minutes=40 + index % 20)
        pod["status"] = "Succeeded"
        if index % 40 == 7:
            pod["status"] = "Failed"
            pod["remark"] = "OOMKilled (exit code 137): Memory cgroup out of memory"
    for index, event in enumerate(rows.events):
        event["job_id"] = rows.jobs[0]["job_id"]
        moment = T0 + datetime.timedelta(minutes=index // 100, seconds=index % 60)
        event["first_timestamp"] = event["last_timestamp"] = moment
        if index % 40 == 7:
            event["type"], event["reason"] = "Warning", "OOMKilling"


async def _timed(client: Any, path: str) -> tuple[float, float, int]:
    """p50 and p99 seconds to answer ``path``, and the answer's size in bytes."""
    size = len(await (await client.get(path)).read())
    samples = []
    for _ in range(REPEAT):
        started = time.perf_counter()
        response = await client.get(path)
        body = await response.read()
        samples.append(time.perf_counter() - started)
        if response.status != 200:
            raise RuntimeError(f"{path} answered {response.status}")
        size = len(body)
    p50, p99 = percentiles(samples)
    return p50, p99, size


async def run(url: str, pods: int) -> dict[str, tuple[float, float, int]]:
    """Record a job of ``pods`` pods and Events; time its console page and its JSON."""
    await db.open_database(url, encryption=DbTls(), read_pool=ReadPool(url))
    try:
        rows = data.rows(1, pods)
        _lives(rows)
        store = Store()
        for model, part in ((Job, rows.jobs), (Pod, rows.pods), (Event, rows.events)):
            for first in range(0, len(part), 500):
                await store.upsert(model, part[first : first + 500])
        uid = rows.jobs[0]["job_id"]
        app: web.Application = api.Api(auth.NoAuth()).site()
        async with TestClient(TestServer(app)) as client:
            return {
                "console: job page": await _timed(client, f"/job?uid={uid}"),
                "baseline: API job detail (JSON)": await _timed(client, f"{api.PREFIX}/jobs/{uid}"),
            }
    finally:
        await db.close_database()
