"""The real operator writing through a three-node Galera cluster while the node it
writes through is SIGKILLed and rejoins: the soak's workload on the emulated cluster,
and the soak checker's invariants on the archive, read from another node (decision 37)."""

import asyncio
import random

import pytest

from jobarchive.kinds import BUILTIN_KINDS
from soak.checker import Checker, read_tables
from soak.timeline import Timeline
from soak.truth import Truth
from soak.workload import Workload
from testbed.cluster import EVENTS, PODS, Cluster, job_resource
from testbed.galera import GaleraCluster
from tests.support.galera import create_database
from tests.support.operators import OperatorFactory

SEED = 20261202
WORKLOAD_SECONDS = 30.0
SETTLE_SECONDS = 90.0


@pytest.mark.e2e
async def test_the_operator_loses_its_database_node_and_the_archive_is_exact(
    galera: GaleraCluster, cluster: Cluster, start_operator: OperatorFactory
) -> None:
    first, second, third = galera.nodes
    url = create_database(galera, first, second, third)
    database = url.rsplit("/", 1)[1]
    operator = await start_operator(JOBARCHIVE_DB_URL=url, JOBARCHIVE_RESYNC_INTERVAL="10")
    await cluster.wait_watching([PODS, EVENTS, *(job_resource(kind) for kind in BUILTIN_KINDS)])
    loop = asyncio.get_running_loop()
    timeline = Timeline(lag=10.0, catch_up=20.0, clock=loop.time)
    truth = Truth(cluster, loop.time)
    workload = Workload(truth, random.Random(SEED), jobs_per_minute=40.0, event_ttl=120.0)

    async def kill_and_rejoin() -> None:
        await asyncio.sleep(WORKLOAD_SECONDS / 3)
        first.kill()
        await asyncio.sleep(WORKLOAD_SECONDS / 4)
        await asyncio.to_thread(first.start)
        await asyncio.to_thread(galera.wait_synced)

    await asyncio.gather(workload.run(WORKLOAD_SECONDS), kill_and_rejoin())
    assert workload.errors == []
    checker = Checker(truth, timeline)
    deadline = loop.time() + SETTLE_SECONDS
    while True:
        tables = await asyncio.to_thread(read_tables, third.url, database)
        violations = checker.check(tables, loop.time())
        if not violations or loop.time() > deadline:
            break
        await asyncio.sleep(1.0)
    assert violations == []
    assert workload.lives >= 10
    for node in (first, second):
        assert await asyncio.to_thread(read_tables, node.url, database) == tables
    log = operator.log()
    assert "Gave up" not in log and "not stored" not in log
    assert "Traceback" not in log
    print(f"{workload.lives} job lives; {checker.coverage}")
