"""A watch Kopf ends (a paged LIST answered 410 on its next page) is said in one line
naming its kind, namespace, cause and remedy, and the operator stops, so that a restart
lists again (ARCHITECTURE.md, decision 38); a run whose watches all live stays healthy."""

from typing import Any

import aiohttp
import kmock
import pytest

from jobarchive.kinds import BUILTIN_KINDS
from testbed.cluster import EVENTS, PODS, Cluster, Resource, job_resource
from testbed.ports import free_port
from tests.support.operators import OperatorFactory

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

    def listing(request: Any) -> Any:
        if request.params.get("continue"):
            return kmock.Response(status=410, payload=EXPIRED)
        return {"metadata": {"resourceVersion": "1", "continue": "compacted"}, "items": []}

    # Above the emulator's own paging (Cluster.paginate), which it serves every list with.
    (cluster.emulator ** 100)[kmock.action.LIST, target] << listing


async def health(url: str) -> tuple[int, Any]:
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        return response.status, await response.json()


async def test_a_watch_ended_by_a_410_is_said_and_stops_the_operator(
    cluster: Cluster, start_operator: OperatorFactory
) -> None:
    expire_continues(cluster, EVENTS)
    operator = await start_operator()
    # Kopf 1.45 ends the operator with its failed watch: nothing runs on unwatched.
    assert await operator.exited(within=60) != 0
    lines = [line for line in operator.log().splitlines() if ENDED in line]
    assert len(lines) == 1
    assert "(410, message='Gone'" in lines[0]
    assert "kubelet restarts the pod" in lines[0] and "shard" in lines[0]


async def test_a_run_whose_watches_live_stays_healthy(
    cluster: Cluster, start_operator: OperatorFactory
) -> None:
    liveness = f"http://127.0.0.1:{free_port()}/healthz"
    operator = await start_operator(f"--liveness={liveness}")
    await cluster.wait_watching(ALL)
    status, answer = await health(liveness)
    assert status == 200
    assert answer["watches"] == "all watching"
    assert "Kopf's watch of" not in operator.log()
