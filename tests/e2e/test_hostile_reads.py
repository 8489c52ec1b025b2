"""A tenant's rows built to exhaust whoever reads them, read over real HTTP from a real
``jobarchive serve``: an archive written before values were bounded on write (the rows
are made oversized in SQL, as older code stored them), of one job of 500 pods and 500
Events. Every answer stays within its byte budget and every row is still reached
through the cursors; the server's peak memory stays bounded while as many worst-case
requests as may query run at once and slow readers that never take their answers
hold their turns."""

import asyncio
import contextlib
import datetime
import json
import pathlib
import socket
import time
from collections.abc import Iterator
from typing import Any

import aiohttp
import pytest

from jobarchive.core.rows import IMAGE_LENGTH, MESSAGE_LENGTH, REMARK_LENGTH, RESOURCES_LENGTH
from jobarchive.reading.queries import PAGE_BYTES
from jobarchive.storage import database as db
from jobarchive.storage.models import Event, Job, Pod
from jobarchive.storage.store import Store
from testbed import objects as o
from testbed.cluster import EVENTS, PODS, Cluster, resource_of
from testbed.ports import free_port
from tests.support import rows
from tests.support.commands import jobarchive
from tests.support.operators import OperatorFactory
from tests.support.serve import Walk, get, jobarchive_serve, memory
from tests.support.waiting import eventually

pytestmark = pytest.mark.e2e

TFJOBS = resource_of("kubeflow.org", "TFJob")
NAMESPACE, UID = "attacker", "0f0f0f0f-0000-4000-8000-000000000001"
ROWS = 500
HUGE = 1_000_000
CONCURRENCY = 4
SLOW_READERS = 8
# Two pages of PAGE_BYTES and the job itself: what a job's detail may weigh at most.
ANSWER_BYTES = 2 * PAGE_BYTES + 64 * 1024
# Measured: 95 MB at start, a peak of 172 MB (before the bounds: 1,197-1,780 MB).
PEAK_RSS = 400 * 1024 * 1024
T0 = datetime.datetime(2026, 11, 20, 10, 0, tzinfo=datetime.UTC)


def _pods() -> list[Any]:
    return [
        rows.pod(
            f"pod-{n:04d}",
            name=f"big-{n:04d}",
            namespace=NAMESPACE,
            job_id=UID,
            status="Failed",
            gmt_created=T0 + datetime.timedelta(seconds=n // 10),
        )
        for n in range(ROWS)
    ]


def _events() -> list[Any]:
    return [
        rows.event(
            f"event-{n:04d}",
            name=f"big-{n:04d}.{n:x}",
            obj_namespace=NAMESPACE,
            obj_name=f"big-{n:04d}",
            obj_uid=f"pod-{n:04d}",
            job_id=UID,
            last_timestamp=T0 + datetime.timedelta(seconds=n // 10),
        )
        for n in range(ROWS)
    ]


@pytest.fixture
async def old_archive(archive: str) -> str:
    """The job, its pods and Events, then their text grown in SQL past every bound, as an
    archive from before the bounds holds them: images, resources and messages of a
    million characters, the messages in three-byte characters, which JSON writes as six."""
    store = Store()
    await store.upsert(Job, [rows.job(UID, name="big", namespace=NAMESPACE)])
    await store.upsert(Pod, _pods())
    await store.upsert(Event, _events())
    conn = db.connection()
    # A tenth of the rows at a million characters, the others a little past each bound:
    # enough for every page to outgrow its budget, and a database of 200 MB, not 3 GB.
    huge = "WHERE id % 10 = 0"
    rest = "WHERE id % 10 <> 0"
    await conn.execute_script(
        f"UPDATE replica_info SET image = REPEAT('i', {HUGE}), remark = REPEAT('r', 200016), "
        f"resources = CONCAT('{{\"a\":\"', REPEAT('x', {HUGE}), '\"}}') {huge}"
    )
    await conn.execute_script(
        f"UPDATE replica_info SET image = REPEAT('i', {IMAGE_LENGTH + 10}), "
        f"remark = REPEAT('r', {REMARK_LENGTH + 10}), "
        f"resources = CONCAT('{{\"a\":\"', REPEAT('x', {RESOURCES_LENGTH}), '\"}}') {rest}"
    )
    await conn.execute_script(f"UPDATE event_info SET message = REPEAT('日', {HUGE}) {huge}")
    await conn.execute_script(
        f"UPDATE event_info SET message = REPEAT('日', {MESSAGE_LENGTH + 10}) {rest}"
    )
    return archive


@contextlib.contextmanager
def slow_readers(port: int, path: str, count: int) -> Iterator[list[socket.socket]]:
    """``count`` clients that ask for ``path`` and never read their answers; a receive
    buffer of 4 KiB each, so that the server's writes stall at once."""
    clients = []
    try:
        for _ in range(count):
            client = socket.socket()
            client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            client.connect(("127.0.0.1", port))
            client.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
            clients.append(client)
        yield clients
    finally:
        for client in clients:
            client.close()


def assert_cut(value: str, bound: int) -> None:
    assert len(value) == bound and value.endswith("…"), (len(value), value[-3:])


async def test_oversized_rows_answer_within_the_budget_and_every_row_is_reached(
    old_archive: str, e2e_db_url: str, tmp_path: pathlib.Path
) -> None:
    async with (
        jobarchive_serve(e2e_db_url, tmp_path / "serve.log", CONCURRENCY) as (base, _),
        aiohttp.ClientSession() as session,
    ):
        detail = f"{base}/jobs/{UID}"
        walked = await Walk().read(session, detail, "pods", "pods_cursor", "pods_next_cursor")
        pods, largest_pods = walked.rows, walked.largest
        walked = await Walk().read(session, detail, "events", "events_cursor", "events_next_cursor")
        events, largest_events = walked.rows, walked.largest
        walked = await Walk().read(
            session, f"{base}/events", "items", "cursor", "next_cursor", namespace=NAMESPACE
        )
        listed, largest_listed = walked.rows, walked.largest
        console = await get(session, base.replace("/api/v1", "") + f"/job?uid={UID}")
    print(
        f"largest answers: detail {largest_pods} / {largest_events}, events {largest_listed}, "
        f"console {len(console[1])} bytes"
    )
    assert sorted(pod["pod_id"] for pod in pods) == [f"pod-{n:04d}" for n in range(ROWS)]
    assert sorted(e["event_id"] for e in events) == sorted(e["event_id"] for e in listed)
    assert len(events) == ROWS
    assert max(largest_pods, largest_events, largest_listed) <= ANSWER_BYTES
    assert_cut(pods[0]["image"], IMAGE_LENGTH)
    assert_cut(pods[0]["remark"], REMARK_LENGTH)
    assert_cut(pods[0]["resources"], RESOURCES_LENGTH)
    assert_cut(events[0]["message"], MESSAGE_LENGTH)
    assert console[0] == 200 and len(console[1]) < 2 * 2**20


async def test_the_cli_prints_bounded_json_of_oversized_rows(
    old_archive: str, e2e_db_url: str, tmp_path: pathlib.Path
) -> None:
    env = {"JOBARCHIVE_DB_URL": e2e_db_url}
    shown = jobarchive("job", UID, "-o", "json", cwd=tmp_path, env=env)
    listed = jobarchive(
        "events", "-n", NAMESPACE, "--limit", "500", "-o", "json", cwd=tmp_path, env=env
    )
    assert (shown.returncode, listed.returncode) == (0, 0), shown.stderr + listed.stderr
    print(f"jobarchive job -o json: {len(shown.stdout)} bytes; events: {len(listed.stdout)}")
    assert len(shown.stdout) <= ANSWER_BYTES and len(listed.stdout) <= ANSWER_BYTES
    assert json.loads(listed.stdout)["next_cursor"] is not None


async def test_worst_case_requests_and_slow_readers_keep_the_servers_memory_bounded(
    old_archive: str, e2e_db_url: str, tmp_path: pathlib.Path
) -> None:
    async with (
        jobarchive_serve(e2e_db_url, tmp_path / "serve.log", CONCURRENCY) as (base, pid),
        aiohttp.ClientSession() as session,
    ):
        at_start, _ = memory(pid)
        worst = [
            (f"{base}/jobs/{UID}", {"limit": "500"}),
            (f"{base}/events", {"namespace": NAMESPACE, "limit": "500"}),
        ]
        for _ in range(3):
            answers = await asyncio.gather(
                *(get(session, *worst[n % 2]) for n in range(CONCURRENCY))
            )
            assert {status for status, _ in answers} == {200}
        port = int(base.split(":")[2].split("/")[0])
        path = f"/api/v1/jobs/{UID}?limit=500"
        with slow_readers(port, path, SLOW_READERS):
            # The readers hold every turn while they do not read: others are turned away
            # in about the second they may wait, rather than piling answers up.
            async def turned_away() -> bool:
                started = time.monotonic()
                status, _ = await get(session, *worst[1])
                return status == 503 and time.monotonic() - started < 5

            await eventually(turned_away, within=30)
            _, peak = memory(pid)
        recovered = await eventually(lambda: _answered(session, worst[1]), within=60)
        assert recovered
        rss, peak = memory(pid)
    print(
        f"serve's RSS {at_start / 1e6:.0f} MB at start, {rss / 1e6:.0f} MB after, "
        f"peak (VmHWM) {peak / 1e6:.0f} MB with {CONCURRENCY} worst-case requests at once "
        f"and {SLOW_READERS} slow readers"
    )
    assert peak < PEAK_RSS


async def _answered(session: aiohttp.ClientSession, asked: tuple[str, dict[str, str]]) -> bool:
    status, _ = await get(session, *asked)
    return status == 200


async def test_a_tenants_huge_values_are_stored_cut_through_the_real_operator(
    cluster: Cluster, start_operator: OperatorFactory, archive: str
) -> None:
    port = free_port()
    await start_operator(
        JOBARCHIVE_API_PORT=str(port), JOBARCHIVE_API_HOST="127.0.0.1", JOBARCHIVE_API_AUTH="none"
    )
    await cluster.wait_watching([PODS, EVENTS, TFJOBS])
    job = await cluster.create(
        TFJOBS, o.with_meta(o.example("tfjob-simple.yaml"), name="big", namespace=NAMESPACE)
    )
    # Under 1 MiB a body: the emulator, like aiohttp, refuses larger request bodies.
    image, said = "i" * 300_000, "m" * 200_000
    for index in range(20):
        pod = o.kubeflow_pod(job, "tfReplicaSpecs", "Worker", index)
        pod["spec"]["containers"][0]["image"] = image
        running = o.running_status("tensorflow", image, "10.0.0.1", f"172.20.0.{index + 1}")
        pod["status"] = o.terminated_status(running, 1, "Error", "2026-11-20T11:00:00Z", said)
        pod = await cluster.create(PODS, pod)
        await cluster.create(EVENTS, o.event(pod, "Hostile", "日" * 120_000, type="Warning"))
    uid = job["metadata"]["uid"]

    async def all_stored() -> bool:
        pods = await Pod.filter(job_id=uid).count()
        return pods == 20 and await Event.filter(job_id=uid).count() == 20

    await eventually(all_stored, within=60)
    pods = await Pod.filter(job_id=uid).values_list("image", "remark")
    assert {(len(image), len(remark)) for image, remark in pods} == {(IMAGE_LENGTH, REMARK_LENGTH)}
    assert all(image.endswith("…") and remark.endswith("…") for image, remark in pods)
    messages = await Event.filter(job_id=uid).values_list("message", flat=True)
    assert {len(message) for message in messages} == {MESSAGE_LENGTH}
    async with aiohttp.ClientSession() as session:
        status, body = await get(
            session, f"http://127.0.0.1:{port}/api/v1/jobs/{uid}", {"limit": "500"}
        )
    print(f"a job of 20 such pods and Events: its detail {len(body)} bytes")
    assert status == 200 and len(body) < 1_000_000
