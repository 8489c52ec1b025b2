"""The reconciliation's listing follows continue tokens page by page, over real HTTP."""

from typing import Any

import kmock
import pytest
from kubernetes_asyncio import client

from jobarchive.resync import PAGE_SIZE, list_uids
from tests.support.cluster import Cluster

pytestmark = pytest.mark.e2e


async def test_listing_reads_every_page_with_its_continue_token(cluster: Cluster) -> None:
    uids = [f"uid-{index}" for index in range(PAGE_SIZE * 2 + 7)]
    limits: list[str] = []

    def page(request: Any) -> dict[str, Any]:
        limits.append(request.params.get("limit"))
        start = int(request.params.get("continue") or 0)
        items = [{"metadata": {"uid": uid}} for uid in uids[start : start + PAGE_SIZE]]
        more = start + PAGE_SIZE < len(uids)
        return {"metadata": {"continue": str(start + PAGE_SIZE) if more else ""}, "items": items}

    cluster.emulator[kmock.action.LIST, kmock.resource("", "v1", "pods")] << page
    configuration = client.Configuration(host=cluster.url)
    async with client.ApiClient(configuration) as api:
        assert await list_uids(api, "/api/v1/pods") == set(uids)
    assert limits == [str(PAGE_SIZE)] * 3
