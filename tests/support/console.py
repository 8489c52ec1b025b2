"""Histories for the console's tests, recorded through the real write path (``History``:
Recorder -> Writer -> Store): a TFJob whose worker was OOM-killed, and a job of
thousands of pods; a failed container's log tail kept as the capture keeps it; the
console served as a process, and crawled by its links."""

import asyncio
import contextlib
import datetime
import pathlib
import re
import urllib.parse
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from html import unescape
from typing import Any

from demo.stories import RECORDED, play
from jobarchive.logtails import inserts as tails
from jobarchive.logtails.text import tail
from jobarchive.logtails.triggers import Failure
from jobarchive.reading import queries
from testbed import objects as o
from testbed.cluster import Cluster
from testbed.logs import Logs
from testbed.objects import Body
from tests.support.history import SPECS, History
from tests.support.rows import write_tails
from tests.support.serve import serve_process
from tests.support.waiting import answering, eventually

IMAGE = "gcr.io/kubeflow-ci/tf-mnist-with-summaries:1.0"


def at(minutes: float) -> str:
    """T0 plus ``minutes``, as Kubernetes writes a time."""
    start = datetime.datetime.fromisoformat(o.T0.replace("Z", "+00:00"))
    moment = start + datetime.timedelta(minutes=minutes)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


async def pod(
    history: History,
    job: Body,
    role: str,
    index: int,
    created: float,
    started: float | None = None,
    ended: float | None = None,
    exit_code: int = 0,
    reason: str = "Completed",
    gpus: int = 0,
    restarted: float | None = None,
) -> Body:
    """A pod of ``job`` created, started and ended at these minutes after T0 (each None:
    not yet), recorded as the operator records a watch event; with ``gpus`` GPUs, its
    container restarted once at minute ``restarted`` when given."""
    body = o.with_meta(
        o.kubeflow_pod(job, SPECS[job["kind"]], role, index),
        uid=str(uuid.uuid4()),
        resourceVersion=str(2000 + index),
        creationTimestamp=at(created),
    )
    if gpus:
        for container in body["spec"]["containers"]:
            container["resources"] = {"requests": {"nvidia.com/gpu": gpus}}
    if started is not None:
        body["spec"]["nodeName"] = f"gpu-node-{index}"
        running = o.running_status("tensorflow", IMAGE, f"10.0.3.{index % 250}", "172.16.3.9")
        running["startTime"] = at(started)
        status = running
        if ended is not None:
            status = o.terminated_status(running, exit_code, reason, at(ended))
        if restarted is not None:
            ended_once = {
                "terminated": {"exitCode": 1, "reason": "Error", "finishedAt": at(restarted)}
            }
            status["containerStatuses"][0].update(restartCount=1, lastState=ended_once)
        body["status"] = status
    await history.recorder.pod("ADDED", body)
    return body


async def oom_killed_job(history: History, namespace: str = "team-a") -> dict[str, Any]:
    """A TFJob of two workers: worker 1 OOM-killed at minute 31, worker 0 stopped by the
    job's failure at 32, with the kubelet's and the controller's Warnings and a Normal
    Event."""
    job = await history.job(
        "bert-finetune",
        namespace=namespace,
        status="Failed",
        finished=at(32),
        owner="alice",
    )
    worker = await pod(history, job, "Worker", 0, 0, 1, 32, 143, "Error")
    doomed = await pod(history, job, "Worker", 1, 0, 2, 31, 137, "OOMKilled")
    await history.event(worker, "Scheduled", "Assigned to gpu-node-1", first=at(0.5))
    await history.event(
        doomed,
        "OOMKilling",
        "Memory cgroup out of memory: Killed process 4121 (python)",
        type="Warning",
        first=at(31),
    )
    await history.event(
        job,
        "TFJobFailed",
        f"TFJob {namespace}/bert-finetune has failed because 1 Worker replica(s) failed.",
        type="Warning",
        first=at(32),
    )
    return {"job": job, "pods": [worker, doomed]}


async def gpu_job(history: History) -> Body:
    """A TFJob of bob's in queue ``a100`` that waited 10 minutes: two workers of 4
    GPUs each ran from minute 10 to 70 (8 GPU-hours); worker 1 restarted at minute 40."""
    job = await history.job(
        "llm-train",
        namespace="team-c",
        status="Succeeded",
        finished=at(70),
        owner="bob",
        queue="a100",
    )
    await pod(history, job, "Worker", 0, 0, 10, 70, gpus=4)
    await pod(history, job, "Worker", 1, 0, 10, 70, gpus=4, restarted=40)
    return job


async def large_job(history: History, pods: int, name: str = "llama-pretrain") -> Body:
    """A TFJob of ``pods`` workers started in waves: most succeeded, one in forty
    OOM-killed, the last ones still running. Recorded many at a time, so that the
    writer commits them in groups."""
    job = await history.job(name, namespace="team-a", status="Running", owner="bob")

    async def one(index: int) -> None:
        wave = index % 10
        if index >= pods - 20:
            await pod(history, job, "Worker", index, wave, wave + 1)
        elif index % 40 == 7:
            await pod(history, job, "Worker", index, wave, wave + 1, 30 + wave, 137, "OOMKilled")
        else:
            await pod(history, job, "Worker", index, wave, wave + 1, 60 + wave)

    for first in range(0, pods, 250):
        await asyncio.gather(*(one(index) for index in range(first, min(first + 250, pods))))
    return job


async def demo_recorded(cluster: Cluster) -> None:
    """The demo's jobs' lives played on ``cluster`` (``demo.stories``), once the
    operator watching it has recorded each job in its last status."""
    await play(cluster, Logs(cluster))

    async def recorded() -> bool:
        jobs = (await queries.list_jobs(queries.JobQuery())).items
        return {job["name"]: job["status"] for job in jobs} == RECORDED

    await eventually(recorded, within=30)


@contextlib.asynccontextmanager
async def serving_console(db_url: str, workdir: pathlib.Path) -> AsyncIterator[str]:
    """A real ``jobarchive serve --auth none`` on ``db_url``; its origin (scheme, host,
    port), once the console answers."""
    async with serve_process(db_url, workdir / "serve.log", "--auth", "none") as running:
        origin = f"http://127.0.0.1:{running.port}"
        await answering(origin + "/")
        yield origin


async def keep_log_tail(
    job: Body, pod: Body, text: bytes, exit_code: int = 137, restart: int = 0
) -> None:
    """Store a failed container's log tail as the capture would, for ``pod`` of ``job``."""
    meta = pod["metadata"]
    failure = Failure(
        namespace=meta["namespace"],
        pod=meta["name"],
        pod_uid=meta["uid"],
        container="tensorflow",
        container_type="container",
        restart_count=restart,
        exit_code=exit_code,
        reason="OOMKilled",
        finished_at=datetime.datetime.now(datetime.UTC),
        previous=False,
    )
    row = tails.row(failure, job["metadata"]["uid"], tail(text, 100, 65536), None)
    await write_tails([row])


# Where a page names another address: a link, an asset, a form's action.
REFERENCES = re.compile(r'(?:href|src|action)="([^"]*)"')
# What a crawl's fetch gives back of an address: its status, content type and text.
Fetch = Callable[[str], Awaitable[tuple[int, str, str]]]


async def crawl(fetch: Fetch, start: str, most: int = 100) -> dict[str, tuple[int, str]]:
    """Every address reachable from ``start`` by the references of the HTML pages on the
    way, each resolved against its page as a browser does (``start``: a URL, or a path
    and query): each one's status and content type."""
    found: dict[str, tuple[int, str]] = {}
    waiting = [start]
    while waiting:
        address = waiting.pop()
        if address in found:
            continue
        assert len(found) < most, "the crawl does not end"
        status, content_type, text = await fetch(address)
        named = []
        if content_type == "text/html":
            named = [urllib.parse.urljoin(address, unescape(r)) for r in REFERENCES.findall(text)]
        found[address] = (status, content_type)
        waiting += named
    return found
