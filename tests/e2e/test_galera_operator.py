"""Real operators writing through a three-node Galera cluster while a node they write
through is SIGKILLed and rejoins: the soak's workload on emulated clusters, and the
soak checker's invariants on the archive, read from another node (decision 37); two
clusters' operators through different nodes, each cluster's rows its own (decision 35)."""

import asyncio
import pathlib
import random
from collections.abc import AsyncIterator

import pytest

from jobarchive.core.kinds import BUILTIN_KINDS
from soak.checker import Checker, read_tables
from soak.timeline import Timeline
from soak.truth import Truth
from soak.workload import Workload
from testbed.cluster import EVENTS, PODS, Cluster, emulated_cluster, job_resource
from testbed.galera import GaleraCluster, GaleraNode
from testbed.operator import OperatorProcess
from tests.support.galera import create_database, settled
from tests.support.operators import OperatorFactory, operators_of

pytestmark = pytest.mark.e2e
SEED = 20261202
WORKLOAD_SECONDS = 30.0
SETTLE_SECONDS = 90.0
ALL = [PODS, EVENTS, *(job_resource(kind) for kind in BUILTIN_KINDS)]


@pytest.fixture
async def west(
    operator_env: dict[str, str | None], tmp_path: pathlib.Path
) -> AsyncIterator[tuple[Cluster, OperatorFactory]]:
    """A second emulated cluster, and its operators."""
    async with (
        emulated_cluster() as api,
        operators_of(api, operator_env, tmp_path / "west") as start,
    ):
        yield api, start


def workload_on(cluster: Cluster, seed: int) -> tuple[Workload, Checker]:
    """The soak's workload on one cluster, and the checker of its truth."""
    loop = asyncio.get_running_loop()
    truth = Truth(cluster, loop.time)
    timeline = Timeline(lag=10.0, catch_up=20.0, clock=loop.time)
    workload = Workload(truth, random.Random(seed), jobs_per_minute=40.0, event_ttl=120.0)
    return workload, Checker(truth, timeline)


async def kill_and_rejoin(galera: GaleraCluster, node: GaleraNode) -> None:
    """A third into the workload, SIGKILL ``node``; a quarter later, start it again."""
    await asyncio.sleep(WORKLOAD_SECONDS / 3)
    node.kill()
    await asyncio.sleep(WORKLOAD_SECONDS / 4)
    await asyncio.to_thread(node.start)
    await asyncio.to_thread(galera.wait_synced)


def clean(operator: OperatorProcess) -> None:
    log = operator.log()
    assert "Gave up" not in log and "not stored" not in log
    assert "Traceback" not in log
    assert "The database is back after" in log


async def test_the_operator_loses_its_database_node_and_the_archive_is_exact(
    galera: GaleraCluster, cluster: Cluster, start_operator: OperatorFactory
) -> None:
    first, second, third = galera.nodes
    url = create_database(galera, first, second, third)
    database = url.rsplit("/", 1)[1]
    operator = await start_operator(JOBARCHIVE_DB_URL=url, JOBARCHIVE_RESYNC_INTERVAL="10")
    await cluster.wait_watching(ALL)
    workload, checker = workload_on(cluster, SEED)
    await asyncio.gather(workload.run(WORKLOAD_SECONDS), kill_and_rejoin(galera, first))
    assert workload.errors == []
    assert await settled({"": checker}, third, database, SETTLE_SECONDS) == {"": []}
    assert workload.lives >= 10
    tables = await asyncio.to_thread(read_tables, third.url, database)
    for node in (first, second):
        assert await asyncio.to_thread(read_tables, node.url, database) == tables
    clean(operator)
    print(f"{workload.lives} job lives; {checker.coverage}")


async def test_two_clusters_operators_write_through_different_nodes(
    galera: GaleraCluster,
    cluster: Cluster,
    start_operator: OperatorFactory,
    west: tuple[Cluster, OperatorFactory],
) -> None:
    first, second, third = galera.nodes
    east_url = create_database(galera, first, second, third)
    database = east_url.rsplit("/", 1)[1]
    west_url = f"{galera.url(third, second, first)}/{database}"
    west_cluster, start_west = west
    maintaining = {"JOBARCHIVE_RESYNC_INTERVAL": "5", "JOBARCHIVE_RETENTION_DAYS": "30"}
    east_operator = await start_operator(
        JOBARCHIVE_DB_URL=east_url, JOBARCHIVE_CLUSTER="east", **maintaining
    )
    west_operator = await start_west(
        JOBARCHIVE_DB_URL=west_url, JOBARCHIVE_CLUSTER="west", **maintaining
    )
    await cluster.wait_watching(ALL)
    await west_cluster.wait_watching(ALL)
    east, east_checker = workload_on(cluster, SEED)
    west_, west_checker = workload_on(west_cluster, SEED + 1)
    await asyncio.gather(
        east.run(WORKLOAD_SECONDS),
        west_.run(WORKLOAD_SECONDS),
        kill_and_rejoin(galera, first),
    )
    assert east.errors == west_.errors == []
    checkers = {"east": east_checker, "west": west_checker}
    found = await settled(checkers, second, database, SETTLE_SECONDS)
    assert found == {"east": [], "west": []}
    clean(east_operator)
    west_log = west_operator.log()
    assert "Gave up" not in west_log and "Traceback" not in west_log
    print(f"east {east.lives} and west {west_.lives} job lives")
