"""An Event about a pod is stored as soon as the pod is known to be a tracked job's, not
when the pod's row is committed: in a catch-up the commits trail the handlers by
thousands of rows, and Events that waited for them overflowed the bounds of what waits."""

import asyncio
from typing import cast

from jobarchive.config import load
from jobarchive.recording.attribution import Attribution
from jobarchive.recording.recorder import Recorder
from jobarchive.storage.models import Event, Pod, Stamped
from jobarchive.storage.store import Store
from jobarchive.storage.writer import Writer
from testbed import objects as o


class HeldWriter:
    """A writer whose pod rows stay uncommitted until ``commit`` is set; Events it
    commits at once. What it committed, by table."""

    def __init__(self) -> None:
        self.writing_pod = asyncio.Event()
        self.commit = asyncio.Event()
        self.committed: dict[type[Stamped], list[object]] = {Pod: [], Event: []}

    async def write(self, model: type[Stamped], rows: list[object], changed: object) -> list[None]:
        if model is Pod:
            self.writing_pod.set()
            await self.commit.wait()
        self.committed.setdefault(model, []).extend(rows)
        return [None] * len(rows)


async def test_an_event_about_a_pod_whose_row_is_being_committed_does_not_wait() -> None:
    writer = HeldWriter()
    attribution = Attribution()
    attribution.load([("ns", "train", "job-1")], [])
    recorder = Recorder(load({}), cast(Store, None), cast(Writer, writer), attribution)
    job = o.with_meta(o.example("tfjob-simple.yaml"), name="train", namespace="ns", uid="job-1")
    pod = o.kubeflow_pod(job, "tfReplicaSpecs", "Worker", 0)
    pod["metadata"] |= {"uid": "pod-1", "resourceVersion": "1"}

    storing = asyncio.ensure_future(recorder.pod(None, pod))
    await writer.writing_pod.wait()
    event = o.event(pod, "Pulled", "Container image pulled")
    event["metadata"] |= {"uid": "event-1", "resourceVersion": "2"}
    await recorder.event(None, event)

    assert attribution.waiting_counts() == (0, 0)
    assert len(writer.committed[Event]) == 1 and writer.committed[Pod] == []
    writer.commit.set()
    await storing
    assert len(writer.committed[Pod]) == 1
