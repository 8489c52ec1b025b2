"""The aggregated API's discovery and availability probe with the database away: a real
``jobarchive serve`` on a database nobody listens for answers discovery at once (the
namespace controller waits for it in every namespace deletion), and reads 503."""

import pathlib
import time

import aiohttp
import pytest

from jobarchive.reading.kube import discovery
from jobarchive.storage import database
from testbed.cluster import Cluster, Reviews
from testbed.ports import free_port
from tests.support.kube import serving

pytestmark = pytest.mark.e2e
TOKEN = "reader-token"
AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"


async def test_discovery_answers_at_once_with_the_database_away_and_reads_503(
    cluster: Cluster, tmp_path: pathlib.Path
) -> None:
    reviews = Reviews(cluster)
    reviews.user(TOKEN, "reader")
    reviews.grant("user:reader")
    nowhere = f"mysql://root@127.0.0.1:{free_port()}/jobarchive"
    async with (
        serving(tmp_path, nowhere, cluster.url) as server,
        aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=server.context())) as session,
    ):
        for path, accept, kind in (
            (discovery.PREFIX, "application/json", "APIResourceList"),
            ("/apis", AGGREGATED, "APIGroupDiscoveryList"),
            ("/apis", "application/json", "APIGroupList"),
            (f"/apis/{discovery.GROUP}", "application/json", "APIGroup"),
        ):
            started = time.monotonic()
            async with session.get(server.url + path, headers={"Accept": accept}) as response:
                body = await response.json(content_type=None)
            assert (response.status, body["kind"]) == (200, kind)
            # Not after a try of the database, which waits up to its connect timeout;
            # how soon (within 1 s) is `make bench --only firstrun`'s figure.
            assert time.monotonic() - started < database.CONNECT_TIMEOUT
        headers = {"Authorization": f"Bearer {TOKEN}"}
        listed = f"{server.url}{discovery.PREFIX}/namespaces/team-a/archivedjobs"
        async with session.get(listed, headers=headers) as response:
            body = await response.json()
            assert response.status == 503, body
            assert response.headers["Retry-After"] == "1"
        assert (body["kind"], body["reason"]) == ("Status", "ServiceUnavailable")
        assert "database cannot be reached" in body["message"]
