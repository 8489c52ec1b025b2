"""The database goes away in the middle of a burst; the operator waits, catches up, and
loses nothing. Stops and restarts the run's own MariaDB server, and no other: on an
external server (JOBARCHIVE_TEST_MYSQL_URL) it is skipped."""

import asyncio
import time

import aiohttp
import pytest

from jobarchive.core.kinds import BUILTIN_KINDS
from jobarchive.storage.models import Event, Pod
from testbed import objects as o
from testbed.cluster import EVENTS, PODS, Cluster, job_resource, resource_of
from testbed.mariadb import MariaDBServer
from testbed.ports import free_port
from tests.support.operators import OperatorFactory
from tests.support.waiting import eventually

pytestmark = pytest.mark.e2e
TFJOBS = resource_of("kubeflow.org", "TFJob")
ALL = [PODS, EVENTS, *(job_resource(kind) for kind in BUILTIN_KINDS)]
OUTAGE_SECONDS = 20
BURST = 300


async def health(url: str) -> int:
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        return response.status


async def stored(model: type[Pod] | type[Event], namespace_field: str) -> int:
    """How many rows of the burst are stored; 0 while the test's own pool reconnects."""
    try:
        return await model.filter(**{namespace_field: "burst"}).count()
    except Exception:
        return 0


async def test_a_database_outage_in_the_middle_of_a_burst_loses_nothing(
    cluster: Cluster, start_operator: OperatorFactory, private_mariadb: MariaDBServer
) -> None:
    port = free_port()
    liveness = f"http://127.0.0.1:{port}/healthz"
    operator = await start_operator(f"--liveness={liveness}", JOBARCHIVE_UNHEALTHY_AFTER="5")
    await cluster.wait_watching(ALL)
    assert await health(liveness) == 200
    job = await cluster.create(
        TFJOBS, o.with_meta(o.example("tfjob-simple.yaml"), name="burst", namespace="burst")
    )

    async def one(index: int) -> None:
        pod = await cluster.create(PODS, o.kubeflow_pod(job, "tfReplicaSpecs", "Worker", index))
        await cluster.create(EVENTS, o.event(pod, "Scheduled", f"Assigned to node-{index}"))

    try:
        for index in range(BURST // 2):
            await one(index)
        await asyncio.to_thread(private_mariadb.stop)
        down = time.monotonic()
        for index in range(BURST // 2, BURST):
            await one(index)
        # The database stays away for OUTAGE_SECONDS, however long the burst took: the
        # outage itself is what the test simulates.
        await asyncio.sleep(max(0.0, OUTAGE_SECONDS - 3 - (time.monotonic() - down)))
        # Writes have failed for longer than JOBARCHIVE_UNHEALTHY_AFTER, and Kopf's
        # 10-second cache of the first probe has expired.
        assert await health(liveness) == 500
        await asyncio.sleep(max(0.0, OUTAGE_SECONDS - (time.monotonic() - down)))
    finally:
        await asyncio.to_thread(private_mariadb.start)
    back = time.monotonic()

    async def all_stored() -> bool:
        return (
            await stored(Pod, "namespace") == BURST
            and await stored(Event, "obj_namespace") == BURST
        )

    await eventually(all_stored, within=120)
    catch_up = time.monotonic() - back
    assert operator.running

    async def healthy() -> bool:
        return await health(liveness) == 200

    # Kopf answers from its cache of the last probe for 10 s: the 500 may outlast the outage.
    await eventually(healthy, within=20)
    log = operator.log()
    # One line per change of state, not per row: a stale pooled connection found just
    # after the return can make a second, short episode.
    outages = log.count("The database is unavailable")
    assert 1 <= outages <= 3
    assert log.count("The database is back after") == outages
    print(
        f"outage {OUTAGE_SECONDS} s, {BURST} pods + {BURST} Events, caught up in {catch_up:.1f} s"
    )
