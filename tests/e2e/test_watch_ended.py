"""A watch Kopf ends (a paged LIST answered 410 on its next page) is said in one line
naming its kind, namespace, cause and remedy, and the liveness probe fails, so that a
restart lists again (ARCHITECTURE.md, decision 38); a run whose watches all live stays
healthy."""

from typing import Any

import aiohttp
import kmock
import pytest

from jobarchive.core.kinds import BUILTIN_KINDS
from testbed.cluster import EVENTS, PODS, Cluster, Resource, job_resource
from testbed.ports import free_port
from tests.support.operators import OperatorFactory
from tests.support.waiting import eventually

pytestmark = pytest.mark.e2e
ALL = [PODS, EVENTS, *(job_resource(kind) for kind in BUILTIN_KINDS)]
EXPIRED = {
    "kind": "Status",
    "apiVersion": "v1",
    "status": "Failure",
    "code": 410,
    "reason": "Expired",
    "message": "The provided continue parameter is too old to display a consistent list result.",
}
ENDED = "Kopf's watch of events.v1 in all namespaces ended"


def expire_continues(cluster: Cluster, resource: Resource) -> None:
    """Answer every list of ``resource`` with a page that says more follow, and every
    next page with 410, as an API server does once it compacted the list's revision."""
    target = kmock.resource(resource.group, resource.version, resource.plural)
    first_page = {"metadata": {"resourceVersion": "1", "continue": "compacted"}, "items": []}
    # Above the emulator's own paging (Cluster.paginate), which it serves every list with.
    (cluster.emulator**100)[kmock.action.LIST, target] << first_page
    next_page = (cluster.emulator**101)[
        kmock.action.LIST, target, kmock.params("continue=compacted")
    ]
    next_page << 410 << EXPIRED


async def health(url: str) -> tuple[int, Any]:
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        return response.status, await response.json()


async def live(url: str) -> bool:
    """Whether the liveness endpoint answers healthy; not when it answers no more."""
    try:
        return (await health(url))[0] == 200
    except aiohttp.ClientError:
        return False


async def test_a_watch_ended_by_a_410_is_said_and_fails_the_liveness_probe(
    cluster: Cluster, start_operator: OperatorFactory
) -> None:
    expire_continues(cluster, EVENTS)
    liveness = f"http://127.0.0.1:{free_port()}/healthz"
    operator = await start_operator(f"--liveness={liveness}")

    async def said() -> bool:
        return ENDED in operator.log()

    async def dead() -> bool:
        return not await live(liveness)

    await eventually(said, within=60)
    # Kopf 1.45 stops the operator with its failed watch: its process exits, or hangs in
    # the stop (other watches retrying) with the endpoint gone. Either fails the probe.
    await eventually(dead, within=30)
    lines = [line for line in operator.log().splitlines() if ENDED in line]
    assert len(lines) == 1
    assert f"ended (HTTP 410: {EXPIRED['message']})" in lines[0]
    assert "the kubelet restarts the pod" in lines[0] and "shard" in lines[0]
    # Killed: one that hangs in its stop would hold the teardown for the whole 20 s a
    # stop grants before it kills.
    await operator.kill()


async def test_a_run_whose_watches_live_stays_healthy(
    cluster: Cluster, start_operator: OperatorFactory
) -> None:
    liveness = f"http://127.0.0.1:{free_port()}/healthz"
    operator = await start_operator(f"--liveness={liveness}")
    await cluster.wait_watching(ALL)
    assert await live(liveness)
    _, answer = await health(liveness)
    assert answer["watches"] == "all watching"
    assert "Kopf's watch of" not in operator.log()
