"""The pods of a job listed before the job ask the database for it once, not each: a
shard's catch-up, whose lists arrive in any order, asked once per pod and starved its
own commits."""

from typing import cast

from jobarchive.config import load
from jobarchive.recording.attribution import Attribution
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
        return []


async def test_pods_of_a_job_not_yet_stored_look_it_up_once() -> None:
    store = EmptyStore()
    attribution = Attribution()
    attribution.load([], [])
    recorder = Recorder(load({}), cast(Store, store), Writer(cast(Store, store)), attribution)
    job = o.with_meta(o.example("tfjob-simple.yaml"), name="late", namespace="ns")
    job["metadata"]["uid"] = "00000000-0000-4000-8000-000000000001"

    for index in range(PODS):
        pod = o.kubeflow_pod(job, "tfReplicaSpecs", "Worker", index)
        pod["metadata"] |= {"uid": f"00000000-0000-4000-8000-{index:012d}", "resourceVersion": "1"}
        await recorder.pod(None, pod)

    assert store.job_lookups == 1
    assert attribution.waiting_counts() == (PODS, 0)
