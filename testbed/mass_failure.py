"""A mass failure of training workers while other pods keep coming: the scenario that
``tests/e2e/test_log_tails.py`` holds to the log tails' limits and ``make bench``'s
``logtails`` section times (``bench/logtails_bench.py``), on an emulated cluster with
its pods/log subresource (``testbed.logs``) and a real operator recording into the
database this process has open through Tortoise.

The failed pods' logs are read slowly (a node answering each read in half a second),
so that the capture reads on for minutes. Other pods are then recorded in turns: once
with every read held (``Logs.pause``), as without a capture, and once while the reads
go on, so that both see the same database and the same emulator.
"""

import asyncio
import dataclasses
import datetime
from typing import Any

from jobarchive.storage.models import Pod
from testbed import objects as o
from testbed.cluster import Cluster, Feed, resource_of
from testbed.logs import Logs
from testbed.objects import Body

PYTORCHJOBS = resource_of("kubeflow.org", "PyTorchJob")
IMAGE = "docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727"
TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "/opt/mnist.py", line 143, in <module>\n'
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
)
# Seconds a slow node takes to answer each read of a log.
SLOW_NODE = 0.5


@dataclasses.dataclass
class Turns:
    """Seconds to record each batch of other pods: with every read held, and during
    the capture."""

    quiet: list[float] = dataclasses.field(default_factory=list)
    during: list[float] = dataclasses.field(default_factory=list)


async def job_named(cluster: Cluster, name: str) -> Body:
    """A PyTorchJob of that name in namespace ``ml``, created through the API."""
    return await cluster.create(
        PYTORCHJOBS, o.with_meta(o.example("pytorch-simple.yaml"), name=name, namespace="ml")
    )


def failed(pod: Body, exit_code: int = 1, reason: str = "Error") -> Body:
    """A status of the pod whose one container ran, then terminated."""
    running = o.running_status("pytorch", IMAGE, "10.0.0.12", "172.16.0.12")
    return o.terminated_status(running, exit_code, reason, "2026-11-20T10:20:00Z")


async def record_pods(cluster: Cluster, feed: Feed, name: str, count: int) -> float:
    """Seconds from the first of ``count`` pods of a new job to the last one's row.

    The end is the last row's own write time (``gmt_modified``, in microseconds), not
    the moment a poll saw it: a poll's interval and its query would be a tenth of the
    figure, more than the margin the benchmark compares with."""
    job = await job_named(cluster, name)
    cluster.forget_requests()
    started = datetime.datetime.now(tz=datetime.UTC)
    for index in range(count):
        feed.add(o.kubeflow_pod(job, "pytorchReplicaSpecs", "Worker", index))
    rows = Pod.filter(job_id=job["metadata"]["uid"])
    await _counted(rows, count)
    last = await rows.order_by("-gmt_modified").first()
    assert last is not None
    return (last.gmt_modified - started).total_seconds()


async def fail_en_masse(cluster: Cluster, feed: Feed, logs: Logs, failing: int) -> Body:
    """A job whose ``failing`` workers have all failed, each with a log to read from a
    slow node; returns the job once every pod is recorded (the capture reads on)."""
    logs.delay = SLOW_NODE
    job = await job_named(cluster, "mass-failure")
    for index in range(failing):
        pod: dict[str, Any] = o.kubeflow_pod(job, "pytorchReplicaSpecs", "Worker", index)
        pod["status"] = failed(pod)
        logs.write(feed.add(pod), "pytorch", f"worker {index}: {TRACEBACK}")
    await _counted(Pod.filter(job_id=job["metadata"]["uid"]), failing)
    return job


async def turns(cluster: Cluster, feed: Feed, logs: Logs, rounds: int, count: int) -> Turns:
    """``count`` other pods recorded ``rounds`` times with every read held, and as many
    times while the capture reads, alternately."""
    taken = Turns()
    for turn in range(rounds):
        logs.pause()
        taken.quiet.append(await record_pods(cluster, feed, f"quiet-{turn}", count))
        logs.resume()
        taken.during.append(await record_pods(cluster, feed, f"busy-{turn}", count))
    return taken


async def _counted(rows: Any, count: int, within: float = 300.0) -> None:
    """Wait until the query finds ``count`` rows; fail past ``within`` seconds (a writer
    that stopped, not a slow one)."""
    deadline = asyncio.get_running_loop().time() + within
    while await rows.count() < count:
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"{count} pods were not recorded in {within} s")
        await asyncio.sleep(0.05)
