"""The pods of a job listed before the job ask the database for it once, not each: a
shard's catch-up, whose lists arrive in any order, asked once per pod and starved its
own commits. Once in a row, and once when Kopf handles them all at the same time."""

import asyncio
import gc
from typing import cast

import pytest

from jobarchive.config import load
from jobarchive.recording.attribution import Attribution
from jobarchive.recording.lookups import Shared
from jobarchive.recording.recorder import Recorder
from jobarchive.storage.store import Store
from jobarchive.storage.writer import Writer
from testbed import objects as o

PODS = 100


class EmptyStore:
    """A database that stores no job yet, and counts how often it was asked for one."""

    def __init__(self) -> None:
        self.job_lookups = 0

    async def rows(self, model: object, uids: list[str]) -> list[object]:
        self.job_lookups += 1
        # A query takes its time: whoever comes meanwhile finds it in flight.
        await asyncio.sleep(0.01)
        return []


def pods_of_a_late_job() -> list[dict[str, object]]:
    job = o.with_meta(o.example("tfjob-simple.yaml"), name="late", namespace="ns")
    job["metadata"]["uid"] = "00000000-0000-4000-8000-000000000001"
    pods = []
    for index in range(PODS):
        pod = o.kubeflow_pod(job, "tfReplicaSpecs", "Worker", index)
        pod["metadata"] |= {"uid": f"00000000-0000-4000-8000-{index:012d}", "resourceVersion": "1"}
        pods.append(pod)
    return pods


@pytest.mark.parametrize("together", [False, True], ids=["in-a-row", "together"])
async def test_pods_of_a_job_not_yet_stored_look_it_up_once(together: bool) -> None:
    store = EmptyStore()
    attribution = Attribution()
    attribution.load([], [])
    recorder = Recorder(load({}), cast(Store, store), Writer(cast(Store, store)), attribution)

    if together:
        await asyncio.gather(*(recorder.pod(None, pod) for pod in pods_of_a_late_job()))
    else:
        for pod in pods_of_a_late_job():
            await recorder.pod(None, pod)

    assert store.job_lookups == 1
    assert attribution.waiting_counts() == (PODS, 0)


async def turns() -> None:
    """A few turns of the loop: enough for an asker to start its question, and for a
    question to start."""
    for _ in range(3):
        await asyncio.sleep(0)


async def test_a_shared_question_is_asked_once_and_its_failure_reaches_every_asker() -> None:
    asked: list[str] = []
    gate = asyncio.Event()

    async def ask(key: str) -> str:
        asked.append(key)
        await gate.wait()
        if key == "bad":
            raise ValueError("no such thing")
        return key.upper()

    shared = Shared(ask)
    good = [asyncio.ensure_future(shared("a")) for _ in range(3)]
    bad = [asyncio.ensure_future(shared("bad")) for _ in range(2)]
    await turns()
    assert sorted(asked) == ["a", "bad"]
    gate.set()

    assert await asyncio.gather(*good) == ["A", "A", "A"]
    for failed in await asyncio.gather(*bad, return_exceptions=True):
        assert isinstance(failed, ValueError)
    assert sorted(asked) == ["a", "bad"]
    assert await shared("a") == "A"
    assert asked.count("a") == 2


async def test_a_cancelled_asker_leaves_the_question_to_the_others() -> None:
    gate = asyncio.Event()

    async def ask(key: str) -> str:
        await gate.wait()
        return key

    shared = Shared(ask)
    first = asyncio.ensure_future(shared("k"))
    second = asyncio.ensure_future(shared("k"))
    await asyncio.sleep(0)
    first.cancel()
    await asyncio.sleep(0)
    gate.set()

    assert await second == "k"
    assert first.cancelled()


async def test_a_question_whose_askers_all_left_fails_quietly_and_is_asked_anew() -> None:
    gate = asyncio.Event()
    asked = 0
    reported: list[dict[str, object]] = []
    asyncio.get_running_loop().set_exception_handler(lambda _, context: reported.append(context))

    async def ask(key: str) -> str:
        nonlocal asked
        asked += 1
        await gate.wait()
        raise ValueError("no such thing")

    shared = Shared(ask)
    askers = [asyncio.ensure_future(shared("k")) for _ in range(2)]
    await turns()
    for asker in askers:
        asker.cancel()
    gate.set()
    await asyncio.gather(*askers, return_exceptions=True)
    await turns()
    gc.collect()

    assert reported == []
    gate.clear()
    again = asyncio.ensure_future(shared("k"))
    await turns()
    assert asked == 2
    gate.set()
    with pytest.raises(ValueError, match="no such thing"):
        await again
