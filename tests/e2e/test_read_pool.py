"""The operator serving the API reads through a pool of its own: a flood of reads that
holds every read connection leaves the writer committing, and the reads may go through
another account (JOBARCHIVE_READ_DB_URL, here one that may only SELECT) while the
operator writes through its own. A read database that cannot be reached costs the
API its answers (503), never the operator its start, even when it must prove its TLS."""

import asyncio
import json
import pathlib
import urllib.parse
from typing import Any

import aiohttp
import pytest

from jobarchive.storage.models import Job
from testbed import objects as o
from testbed.cluster import EVENTS, PODS, Cluster, resource_of
from testbed.mariadb import MariaDBServer, read_only_account
from testbed.ports import free_port
from tests.support.certificates import TlsServer
from tests.support.commands import jobarchive
from tests.support.operators import OperatorFactory
from tests.support.sessions import locked, running, sessions_by_user
from tests.support.waiting import eventually

pytestmark = pytest.mark.e2e
TFJOBS = resource_of("kubeflow.org", "TFJob")


def api_env(port: int, **more: str) -> dict[str, str]:
    """The operator's API on loopback, answering anyone (test_api_auth.py reviews callers)."""
    return {
        "JOBARCHIVE_API_PORT": str(port),
        "JOBARCHIVE_API_AUTH": "none",
        "JOBARCHIVE_API_HOST": "127.0.0.1",
        **more,
    }


async def get(session: aiohttp.ClientSession, url: str) -> tuple[int, Any]:
    async with session.get(url) as response:
        return response.status, await response.json()


async def test_the_writer_commits_while_every_read_connection_is_busy(
    cluster: Cluster, start_operator: OperatorFactory, archive: str
) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}/api/v1"
    env = api_env(port, JOBARCHIVE_API_CONCURRENCY="2", JOBARCHIVE_API_TIMEOUT="15")
    await start_operator(**env)
    await cluster.wait_watching([PODS, EVENTS, TFJOBS])

    async with aiohttp.ClientSession() as session:

        async def serving() -> bool:
            try:
                return (await get(session, f"{base}/openapi.json"))[0] == 200
            except aiohttp.ClientConnectionError:
                return False

        await eventually(serving)
        with locked(archive, "event_info"):
            # More reads than the writer's whole pool (JOBARCHIVE_WRITERS + 4 = 6).
            reads = [
                asyncio.create_task(get(session, f"{base}/events?namespace=team-{index}"))
                for index in range(10)
            ]

            async def pool_held() -> bool:
                return await asyncio.to_thread(running, archive, "event_info") == 2

            await eventually(pool_held, interval=0.05)
            job = o.with_meta(o.example("tfjob-simple.yaml"), name="meanwhile", namespace="x")
            created = await cluster.create(TFJOBS, job)

            async def recorded() -> Job | None:
                return await Job.filter(job_id=created["metadata"]["uid"]).first()

            # How soon is `make bench`'s (reads: recording beside a flooded API); here the
            # outcome: committed while the reads holding both connections were unanswered
            # (they end at their 15 s deadline), and both connections still waited, as
            # they did throughout.
            await eventually(recorded, interval=0.05)
            assert sum(not read.done() for read in reads) >= 2
            assert await asyncio.to_thread(running, archive, "event_info") == 2
            answers = await asyncio.gather(*reads)

    statuses = sorted(status for status, _ in answers)
    assert statuses == [503] * 8 + [504] * 2


async def test_reads_go_through_a_read_only_account_while_the_operator_writes_through_its_own(
    cluster: Cluster,
    start_operator: OperatorFactory,
    archive: str,
    private_mariadb: MariaDBServer,
) -> None:
    port = free_port()
    with read_only_account(archive) as read_url:
        reader = urllib.parse.urlsplit(read_url)
        operator = await start_operator(**api_env(port, JOBARCHIVE_READ_DB_URL=read_url))
        await cluster.wait_watching([PODS, EVENTS, TFJOBS])
        created = await cluster.create(
            TFJOBS, o.with_meta(o.example("tfjob-simple.yaml"), name="written", namespace="ro")
        )

        async with aiohttp.ClientSession() as session:

            async def listed() -> list[Any]:
                try:
                    _, page = await get(
                        session, f"http://127.0.0.1:{port}/api/v1/jobs?namespace=ro"
                    )
                except aiohttp.ClientConnectionError:
                    return []
                items: list[Any] = page["items"]
                return items

            [row] = await eventually(listed)

        assert row["job_id"] == created["metadata"]["uid"]
        accounts = sessions_by_user(archive)
        # The API's connections are the read-only account's; the writer's are its own.
        assert accounts.get(str(reader.username), 0) >= 1
        assert accounts.get("root", 0) >= 1
        log = operator.log()
        assert f"Reading from mysql://{reader.username}:***@" in log
        assert str(reader.password) not in log


async def test_an_unreachable_read_database_costs_the_api_its_answers_not_the_start(
    cluster: Cluster, start_operator: OperatorFactory, tls_server: TlsServer, tmp_path: pathlib.Path
) -> None:
    port = free_port()
    nowhere = f"mysql://reader:secret@127.0.0.1:{free_port()}/tls_archive"
    operator = await start_operator(
        **api_env(port, JOBARCHIVE_READ_DB_URL=nowhere),
        JOBARCHIVE_DB_URL=tls_server.url(),
        JOBARCHIVE_DB_TLS="required",
    )
    await cluster.wait_watching([PODS, EVENTS, TFJOBS])
    namespace = "unreachable-reads"
    created = await cluster.create(
        TFJOBS, o.with_meta(o.example("tfjob-simple.yaml"), name="recorded", namespace=namespace)
    )
    env = {"JOBARCHIVE_DB_URL": tls_server.url(), "JOBARCHIVE_DB_TLS": "required"}

    async def recorded() -> list[Any]:
        listed = await asyncio.to_thread(
            jobarchive, "jobs", "--namespace", namespace, "--output", "json", cwd=tmp_path, env=env
        )
        assert listed.returncode == 0, listed.stderr
        items: list[Any] = json.loads(listed.stdout)["items"]
        return items

    [row] = await eventually(recorded, within=30.0)
    assert row["job_id"] == created["metadata"]["uid"]
    async with aiohttp.ClientSession() as session:
        status, body = await get(session, f"http://127.0.0.1:{port}/api/v1/jobs?namespace=x")
    assert status == 503
    assert body["error"]["message"] == "the archive's database cannot be reached; retry later"
    log = operator.log()
    assert "TLS required: proven at its first read" in log
    assert "The API's database cannot be reached: Can't connect to MySQL server" in log
    assert "secret" not in log and "Traceback" not in log
