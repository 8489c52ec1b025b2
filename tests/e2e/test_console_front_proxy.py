"""The console as ``kubectl proxy`` reaches it: through kube-apiserver's aggregator,
played here with a front-proxy certificate made in the test, against a real
``jobarchive serve`` over HTTPS. The caller the front proxy names lands on the
namespaces it may read, reviewed as the archive's own resources; the same headers
from anyone else name nobody."""

import contextlib
import pathlib
import re

import aiohttp
import pytest

from jobarchive.reading.console import mounts
from testbed.cluster import Cluster, Reviews
from tests.support import aggregator
from tests.support.history import History
from tests.support.pki import Authority
from tests.support.waiting import eventually

pytestmark = pytest.mark.e2e
ARCHIVE = "archive.jobarchive.io"


async def page(client: aggregator.Client, url: str, headers: dict[str, str]) -> tuple[int, str]:
    async with client.session() as session, session.get(url, headers=headers) as response:
        return response.status, await response.text()


async def test_the_console_under_the_prefix_reads_as_the_front_proxys_caller(
    cluster: Cluster, archive: str, tmp_path: pathlib.Path
) -> None:
    async with History() as history:
        for namespace in ("team-a", "team-b", "team-c"):
            await history.job(f"mnist-{namespace}", namespace=namespace)
    reviews = Reviews(cluster)
    logged = frozenset({(ARCHIVE, "archivedjobs", ""), (ARCHIVE, "archivedjobs", "log")})
    for namespace in ("team-a", "team-c"):
        reviews.grant("user:carol", namespace, logged)
    # Granted the JSON API's resource only: nothing of the archive's own.
    reviews.grant("user:dave", "", frozenset({("jobarchive.io", "jobs", "")}))
    cluster.serve(aggregator.CONFIGMAPS)
    serving_ca = Authority(tmp_path / "serving", "serving-ca")
    proxy_ca = Authority(tmp_path / "proxy", "front-proxy-ca")
    await aggregator.publish(cluster, proxy_ca, first=True)
    trusted = serving_ca.write()
    proxy = aggregator.Client(trusted, proxy_ca.issue(aggregator.PROXY_NAME))
    nobody = aggregator.Client(trusted)
    serving = serving_ca.issue("127.0.0.1", server=True)
    async with aggregator.served_https(tmp_path, archive, cluster.url, serving) as base:
        console = f"{base}{mounts.PATH}/"

        async def answers() -> bool:
            with contextlib.suppress(aiohttp.ClientError):
                return (await page(proxy, console, {"X-Remote-User": "carol"}))[0] == 200
            return False

        await eventually(answers, within=30)
        status, landing = await page(proxy, console, {"X-Remote-User": "carol"})
        offered = re.findall(r'<a class="namespace" href="([^"]+)"', landing)
        assert (status, offered) == (200, ["./?namespace=team-a", "./?namespace=team-c"])
        reviewed = aggregator.access_reviews(cluster)[-1]
        assert reviewed["user"] == "carol"
        assert reviewed["resourceAttributes"]["group"] == ARCHIVE
        assert reviewed["resourceAttributes"]["resource"] == "archivedjobs"

        status, listed = await page(
            proxy, console + "?namespace=team-c", {"X-Remote-User": "carol"}
        )
        assert status == 200 and "team-c/mnist-team-c" in listed and "team-a/" not in listed
        assert (await page(proxy, console + "?namespace=team-b", {"X-Remote-User": "carol"}))[
            0
        ] == 403

        status, refused = await page(proxy, console, {"X-Remote-User": "dave"})
        assert status == 403 and f"may not list archivedjobs.{ARCHIVE} in any" in refused

        # The same headers without the front proxy's certificate name nobody.
        status, stranger = await page(nobody, console, {"X-Remote-User": "carol"})
        assert status == 401 and "kubectl proxy" in stranger and "team-a" not in stranger
