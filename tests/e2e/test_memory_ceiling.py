"""What waits for its job costs a few fields, not the object: a thousand pods with 200 KB
annotations, labelled with a job that never comes, arriving at 50 a second, leave the
real operator's resident memory less than 20 MB above where it was."""

import asyncio
import pathlib

import pytest

from jobarchive.core.kinds import BUILTIN_KINDS
from testbed.cluster import EVENTS, PODS, Cluster, Feed, job_resource
from testbed.objects import Body
from testbed.operator import OperatorProcess
from tests.support.operators import OperatorFactory
from tests.support.waiting import eventually

pytestmark = pytest.mark.e2e
WARM_UP = 50
BURST = 1000
PER_SECOND = 50
ANNOTATION_BYTES = 200 * 1024
CEILING = 20 * 2**20
# glibc's default, pinned: with the threshold left dynamic, freeing one large body raises
# it, and every body after that is allocated from the heap and stays resident once freed,
# so that even a process that keeps nothing grows by about the size of the burst.
MALLOC = {"MALLOC_MMAP_THRESHOLD_": "131072"}
WAITING_PODS = ("jobarchive_waiting_objects", frozenset({"kind": "Pod"}.items()))


def resident(operator: OperatorProcess) -> int:
    """The operator process's resident memory now (VmRSS), in bytes."""
    if operator.process is None:
        raise RuntimeError("the operator was never started")
    status = pathlib.Path(f"/proc/{operator.process.pid}/status").read_text()
    line = next(line for line in status.splitlines() if line.startswith("VmRSS:"))
    return int(line.split()[1]) * 1024


def orphan(index: int, annotation_bytes: int) -> Body:
    """A launcher-like pod whose training label names a job nobody creates, carrying a
    large annotation (a serialized config, as some submitters attach)."""
    filler = f"{index:08d}" + "x" * annotation_bytes
    return {
        "metadata": {
            "name": f"orphan-{index}",
            "namespace": "ml",
            "labels": {
                "training.kubeflow.org/job-name": "never-created",
                "training.kubeflow.org/replica-type": "worker",
            },
            "annotations": {"example.com/config": filler[:annotation_bytes]},
        },
        "spec": {"containers": [{"name": "trainer", "image": "trainer:1"}]},
        "status": {"phase": "Pending"},
    }


async def fed(feed: Feed, first: int, count: int, annotation_bytes: int) -> None:
    """Add ``count`` pods at a steady PER_SECOND, keeping none in the emulator's store."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    for index in range(count):
        # Pacing to a rate, not waiting for a condition.
        await asyncio.sleep(max(0.0, start + index / PER_SECOND - loop.time()))
        feed.remove(feed.add(orphan(first + index, annotation_bytes)))


async def test_a_burst_of_large_pods_waiting_for_their_job_stays_under_the_ceiling(
    cluster: Cluster, start_operator: OperatorFactory
) -> None:
    feed = Feed(cluster, PODS)
    operator = await start_operator(**MALLOC)
    await cluster.wait_watching([PODS, EVENTS, *(job_resource(kind) for kind in BUILTIN_KINDS)])

    async def waiting(count: int) -> bool:
        return (await operator.scrape()).get(WAITING_PODS) == count

    await fed(feed, 0, WARM_UP, 1024)
    await eventually(lambda: waiting(WARM_UP))
    before = resident(operator)

    await fed(feed, WARM_UP, BURST, ANNOTATION_BYTES)
    await eventually(lambda: waiting(WARM_UP + BURST))

    # Kopf keeps each object's last event for a few idle seconds after its handler ran:
    # the process has settled when its memory stops falling.
    readings = [resident(operator)]

    async def settled() -> tuple[int] | None:
        readings.append(resident(operator))
        grown = readings[-1] - before
        steady = abs(readings[-1] - readings[-2]) < 2**18
        return (grown,) if steady and grown < CEILING else None

    try:
        (grown,) = await eventually(settled, within=30, interval=1.0)
    except AssertionError:
        grown = resident(operator) - before
        raise AssertionError(f"the operator grew by {grown / 2**20:.1f} MB") from None
    print(f"resident memory grew by {grown / 2**20:.1f} MB over the burst")
