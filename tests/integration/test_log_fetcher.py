"""Reading a log through the pods/log subresource, against the emulated API server:
the query the fetcher sends, and each answer it turns into a tail or a reason."""

from collections.abc import AsyncIterator

import pytest
from kubernetes_asyncio import client

from jobarchive.logtails.fetcher import SERVER_BYTES_FACTOR, Fetcher
from jobarchive.logtails.text import tail
from jobarchive.logtails.triggers import failures
from testbed import objects as o
from testbed.cluster import PODS, Cluster
from testbed.logs import Logs


@pytest.fixture
async def api(cluster: Cluster) -> AsyncIterator[client.ApiClient]:
    settings = client.Configuration(host=cluster.url)
    async with client.ApiClient(settings) as api:
        yield api


def failed_pod(name: str, restarts: int = 0, waiting: bool = False) -> o.Body:
    running = o.running_status("pytorch", "pytorch:1", "10.0.0.1", "172.16.0.1")
    status = o.terminated_status(running, 1, "Error", "2026-11-20T10:20:00Z")
    container = status["containerStatuses"][0]
    if restarts:
        container["restartCount"] = restarts
        container["lastState"] = container.pop("state")
        container["state"] = (
            {"waiting": {"reason": "CrashLoopBackOff"}} if waiting else {"running": {}}
        )
    return {
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {"containers": [{"name": "pytorch", "image": "pytorch:1"}]},
        "status": status,
    }


async def test_the_tail_of_a_failed_container_is_read_with_its_bounds(
    cluster: Cluster, api: client.ApiClient
) -> None:
    logs = Logs(cluster)
    pod = await cluster.create(PODS, failed_pod("worker-0"))
    logs.write(pod, "pytorch", "".join(f"epoch {i}\n" for i in range(500)) + "CUDA OOM\n")
    [failure] = failures(pod)
    read = await Fetcher(api, 100, 1024).read(failure)
    assert read.data is not None and read.reason == ""
    assert tail(read.data, 100, 1024).text.splitlines()[-2:] == ["epoch 499", "CUDA OOM"]
    assert logs.reads_of(pod) == [
        {"container": "pytorch", "tailLines": "101", "limitBytes": str(1024 * SERVER_BYTES_FACTOR)}
    ]


@pytest.mark.parametrize("waiting", [False, True])
async def test_a_restarted_container_is_read_with_previous(
    cluster: Cluster, api: client.ApiClient, waiting: bool
) -> None:
    logs = Logs(cluster)
    pod = await cluster.create(PODS, failed_pod("worker-1", restarts=1, waiting=waiting))
    instance = 1 if waiting else 0
    logs.write(pod, "pytorch", "the dead one\n", restart=instance)
    logs.write(pod, "pytorch", "the next one\n", restart=instance + 1)
    [failure] = failures(pod)
    read = await Fetcher(api, 100, 1024).read(failure)
    assert read.data == b"the dead one\n"
    assert logs.reads_of(pod)[0]["previous"] == "true"


async def test_answers_without_a_log_become_reasons(
    cluster: Cluster, api: client.ApiClient
) -> None:
    logs = Logs(cluster)
    pod = await cluster.create(PODS, failed_pod("worker-2"))
    [failure] = failures(pod)
    fetcher = Fetcher(api, 100, 1024)
    await cluster.delete(PODS, "ml", "worker-2")
    gone = await fetcher.read(failure)
    assert (gone.data, gone.reason) == (None, "not_found")
    assert gone.note == 'the pod or its log is gone (404: pods "worker-2" not found)'

    pod = await cluster.create(PODS, failed_pod("worker-3"))
    [failure] = failures(pod)
    unknown = await fetcher.read(
        type(failure)(**{**failure.__dict__, "container": "nope", "previous": True})
    )
    assert unknown.reason == "bad_request"
    assert "container nope is not valid for pod worker-3" in unknown.note
    no_previous = await fetcher.read(type(failure)(**{**failure.__dict__, "previous": True}))
    assert no_previous.reason == "bad_request"
    assert 'previous terminated container "pytorch" in pod "worker-3" not found' in (
        no_previous.note
    )
    assert len(logs.requests) == 3
