"""The tails of failed containers' logs, end to end: the real operator reads them
through the emulated pods/log subresource, stores them once each, and
``jobarchive logs`` shows them; a mass failure keeps to the limits while everything
else is recorded (how fast, beside no capture, is ``make bench --only logtails``)."""

import asyncio
import copy
import pathlib

import aiohttp
import pytest

from jobarchive.storage.models import LogTail
from testbed import objects as o
from testbed.cluster import EVENTS, PODS, Cluster, Feed
from testbed.logs import Logs
from testbed.mass_failure import (
    IMAGE,
    PYTORCHJOBS,
    TRACEBACK,
    fail_en_masse,
    failed,
    job_named,
    record_pods,
    turns,
)
from testbed.objects import Body
from testbed.operator import OperatorProcess
from tests.support.commands import jobarchive
from tests.support.operators import OperatorFactory
from tests.support.waiting import eventually

pytestmark = pytest.mark.e2e


def metric(outcome: str, reason: str) -> tuple[str, frozenset[tuple[str, str]]]:
    labels = {"outcome": outcome, "reason": reason}
    return ("jobarchive_log_tails_total", frozenset(labels.items()))


async def tails_of(pod: Body) -> list[LogTail]:
    return await LogTail.filter(pod_id=pod["metadata"]["uid"]).order_by("restart_count")


@pytest.fixture
def logs(cluster: Cluster) -> Logs:
    return Logs(cluster)


async def test_a_failed_workers_tail_is_stored_and_shown_by_jobarchive_logs(
    cluster: Cluster, logs: Logs, operator: OperatorProcess, archive: str, tmp_path: pathlib.Path
) -> None:
    job = await job_named(cluster, "mnist")
    worker = await cluster.create(PODS, o.kubeflow_pod(job, "pytorchReplicaSpecs", "Worker", 0))
    noise = "".join(f"epoch 1 step {step} loss 0.{step:03d}\n" for step in range(300))
    logs.write(worker, "pytorch", noise + TRACEBACK)
    await cluster.patch(PODS, "ml", worker["metadata"]["name"], {"status": failed(worker)})

    [row] = await eventually(lambda: tails_of(worker))
    assert (row.captured, row.truncated, row.exit_code, row.reason) == (True, True, 1, "Error")
    assert (row.container, row.container_type, row.restart_count) == ("pytorch", "container", 0)
    assert row.job_id == job["metadata"]["uid"]
    assert row.log_tail.endswith(TRACEBACK)
    assert len(row.log_tail.splitlines()) == 100
    assert logs.reads_of(worker) == [
        {"container": "pytorch", "tailLines": "101", "limitBytes": str(4 * 65536)}
    ]

    shown = jobarchive("logs", "ml/mnist", cwd=tmp_path, env={"JOBARCHIVE_DB_URL": archive})
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0] == (
        "==> ml/mnist-worker-0 container pytorch (restart 0): exit code 1 Error at "
        "2026-11-20 10:20:00 (last lines only)"
    )
    assert lines[-1].startswith("torch.OutOfMemoryError: CUDA out of memory")
    detail = jobarchive("job", "ml/mnist", cwd=tmp_path, env={"JOBARCHIVE_DB_URL": archive})
    # The job as the command named it, so that the hint fits 80 columns.
    assert "Log tails: jobarchive logs ml/mnist" in detail.stdout
    bad = jobarchive(
        "logs", "ml/mnist", "--limit", "0", cwd=tmp_path, env={"JOBARCHIVE_DB_URL": archive}
    )
    assert bad.returncode == 2 and "limit: 0 is outside 1..100" in bad.stderr


async def test_a_restarted_containers_previous_log_and_an_oom_killed_init_container(
    cluster: Cluster, logs: Logs, operator: OperatorProcess, archive: str
) -> None:
    job = await job_named(cluster, "restarts")
    worker = await cluster.create(PODS, o.kubeflow_pod(job, "pytorchReplicaSpecs", "Worker", 0))
    logs.write(worker, "pytorch", "NCCL error: unhandled system error\n", restart=0)
    logs.write(worker, "pytorch", "restarted, training again\n", restart=1)
    status = o.running_status("pytorch", IMAGE, "10.0.0.12", "172.16.0.12")
    dead = failed(worker)["containerStatuses"][0]["state"]
    status["containerStatuses"][0].update(restartCount=1, lastState=dead)
    await cluster.patch(PODS, "ml", worker["metadata"]["name"], {"status": status})

    [row] = await eventually(lambda: tails_of(worker))
    assert (row.restart_count, row.log_tail) == (0, "NCCL error: unhandled system error\n")
    assert logs.reads_of(worker)[0]["previous"] == "true"

    master = o.kubeflow_pod(job, "pytorchReplicaSpecs", "Master", 0)
    master["spec"]["initContainers"] = [{"name": "fetch-data", "image": "busybox"}]
    master = await cluster.create(PODS, master)
    logs.write(master, "fetch-data", "downloading shard 7/9\n")
    init_status = copy.deepcopy(failed(master, 137, "OOMKilled"))
    init_status["initContainerStatuses"] = [
        {**init_status["containerStatuses"][0], "name": "fetch-data"}
    ]
    init_status["containerStatuses"] = [
        {"name": "pytorch", "restartCount": 0, "state": {"waiting": {"reason": "PodInitializing"}}}
    ]
    await cluster.patch(PODS, "ml", master["metadata"]["name"], {"status": init_status})
    [oom] = await eventually(lambda: tails_of(master))
    assert (oom.container, oom.container_type, oom.exit_code, oom.reason) == (
        "fetch-data",
        "init",
        137,
        "OOMKilled",
    )
    assert oom.log_tail == "downloading shard 7/9\n"


async def test_a_pod_deleted_before_the_read_is_recorded_as_not_captured_once(
    cluster: Cluster, logs: Logs, operator: OperatorProcess, archive: str
) -> None:
    job = await job_named(cluster, "deleted")
    worker = await cluster.create(PODS, o.kubeflow_pod(job, "pytorchReplicaSpecs", "Worker", 0))
    logs.delay = 2.0
    name = worker["metadata"]["name"]
    await cluster.patch(PODS, "ml", name, {"status": failed(worker)})
    await eventually(lambda: asyncio.sleep(0, logs.reads_of(worker)))
    await cluster.delete(PODS, "ml", name)

    [row] = await eventually(lambda: tails_of(worker))
    assert not row.captured
    assert row.log_tail is None
    assert row.note == f'the pod or its log is gone (404: pods "{name}" not found)'
    assert (await operator.scrape()).get(metric("failed", "not_found")) == 1
    assert len(logs.reads_of(worker)) == 1
    line = f"Log tail of ml/{name} container pytorch (restart 0) not captured"
    assert line in operator.log()


async def test_after_a_restart_a_captured_tail_is_not_read_again(
    cluster: Cluster, logs: Logs, start_operator: OperatorFactory, archive: str
) -> None:
    first = await start_operator()
    await cluster.wait_watching([PODS, EVENTS, PYTORCHJOBS])
    job = await job_named(cluster, "restart")
    worker = await cluster.create(PODS, o.kubeflow_pod(job, "pytorchReplicaSpecs", "Worker", 0))
    logs.write(worker, "pytorch", TRACEBACK)
    await cluster.patch(PODS, "ml", worker["metadata"]["name"], {"status": failed(worker)})
    await eventually(lambda: tails_of(worker))
    await first.stop()

    second = await start_operator()

    async def skipped() -> bool:
        try:
            scraped = await second.scrape()
        except aiohttp.ClientError:
            return False
        return scraped.get(metric("skipped", "already_captured")) == 1

    await eventually(skipped)
    assert len(logs.reads_of(worker)) == 1
    assert len(await tails_of(worker)) == 1


# The new spelling, and the old one, which is still read but warned about.
@pytest.mark.parametrize(("spelling", "warned"), [("true", False), ("1", True)])
async def test_a_succeeded_containers_tail_is_read_when_the_setting_says_so(
    cluster: Cluster,
    logs: Logs,
    start_operator: OperatorFactory,
    archive: str,
    spelling: str,
    warned: bool,
) -> None:
    operator = await start_operator(JOBARCHIVE_LOG_SUCCEEDED=spelling)
    await cluster.wait_watching([PODS, EVENTS, PYTORCHJOBS])
    job = await job_named(cluster, "finished")
    worker = await cluster.create(PODS, o.kubeflow_pod(job, "pytorchReplicaSpecs", "Worker", 0))
    logs.write(worker, "pytorch", "epoch 9 done, model saved\n")
    done = failed(worker, 0, "Completed")
    await cluster.patch(PODS, "ml", worker["metadata"]["name"], {"status": done})

    [row] = await eventually(lambda: tails_of(worker))
    assert (row.captured, row.exit_code, row.reason) == (True, 0, "Completed")
    assert row.log_tail == "epoch 9 done, model saved\n"
    old = "JOBARCHIVE_LOG_SUCCEEDED=1 is the old spelling, read as true; write "
    assert (old + "JOBARCHIVE_LOG_SUCCEEDED=true" in operator.log()) is warned


FAILING_PODS = 2000
OTHER_PODS = 300
CONCURRENCY = 4
# Enough to see recording go on with and without reads; how fast is ``make bench``'s.
ROUNDS = 2


async def test_a_mass_failure_keeps_to_the_limits_and_recording_does_not_slow(
    cluster: Cluster, logs: Logs, start_operator: OperatorFactory, archive: str
) -> None:
    feed = Feed(cluster, PODS)
    # The default rate (10 reads a second); a slow node answers each read in 0.5 s, so
    # the concurrency limit binds too. Every failure queued (the default queues 500 of
    # a namespace at once), so that the reads go on through every turn.
    operator = await start_operator(
        JOBARCHIVE_LOG_CONCURRENCY=str(CONCURRENCY),
        JOBARCHIVE_LOG_TAILS_PER_NAMESPACE=str(FAILING_PODS),
    )
    await cluster.wait_watching([PODS, EVENTS, PYTORCHJOBS])
    await record_pods(cluster, feed, "warm-up", OTHER_PODS)
    job = await fail_en_masse(cluster, feed, logs, FAILING_PODS)
    tails = LogTail.filter(job_id=job["metadata"]["uid"], captured=True)
    before = await tails.count()
    # Other pods recorded while the capture reads, and while it is held (as without it).
    # Whether recording keeps its pace beside the capture is a timing ratio, measured
    # by `make bench --only logtails` (the same scenario, its target 1.2x): here, every
    # pod of every turn is recorded, and the capture read on meanwhile.
    taken = await turns(cluster, feed, logs, ROUNDS, OTHER_PODS)
    print(f"recording {OTHER_PODS} pods: without reads {taken.quiet}, during {taken.during}")
    assert len(taken.quiet) == len(taken.during) == ROUNDS

    captured = await tails.count()
    assert before < captured
    assert 0 < captured < FAILING_PODS
    assert logs.peak == CONCURRENCY
    read = [(request.namespace, request.pod) for request in logs.requests]
    assert len(set(read)) == len(read)
    scraped = await operator.scrape()
    queued = scraped.get(("jobarchive_log_tail_queue", frozenset())) or 0
    assert queued > FAILING_PODS - captured - 200
