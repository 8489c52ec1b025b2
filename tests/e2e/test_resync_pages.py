"""The reconciliation's listing follows continue tokens page by page, over real HTTP."""

import pytest
from kubernetes_asyncio import client

from jobarchive.infra.cluster import METADATA_ONLY, PAGE_SIZE
from jobarchive.maintenance.reconcile import list_uids
from testbed import objects as o
from testbed.cluster import PODS, Cluster, Feed

pytestmark = pytest.mark.e2e


async def test_listing_reads_every_page_with_its_continue_token(cluster: Cluster) -> None:
    feed = Feed(cluster, PODS)
    job = o.with_meta(o.example("tfjob-simple.yaml"), uid="job-uid")
    job["apiVersion"], job["kind"] = "kubeflow.org/v1", "TFJob"
    uids = {
        feed.add(o.kubeflow_pod(job, "tfReplicaSpecs", "Worker", index))["metadata"]["uid"]
        for index in range(PAGE_SIZE * 2 + 7)
    }
    configuration = client.Configuration(host=cluster.url)
    async with client.ApiClient(configuration) as api:
        assert await list_uids(api, "/api/v1/pods") == uids
    pages = [r for r in cluster.emulator if r.url.path == "/api/v1/pods" and "limit" in r.params]
    assert {r.headers.get("Accept") for r in pages} == {METADATA_ONLY}
    assert [(r.params["limit"], r.params.get("continue")) for r in pages] == [
        (str(PAGE_SIZE), None),
        (str(PAGE_SIZE), str(PAGE_SIZE)),
        (str(PAGE_SIZE), str(2 * PAGE_SIZE)),
    ]
