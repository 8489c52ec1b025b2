"""No object is silently dropped, and none raises into Kopf: whatever goes wrong while
one object is attributed or converted is logged with the object's name and counted
``invalid``."""

import logging
from typing import cast

import pytest
from prometheus_client import REGISTRY

from jobarchive.config import load
from jobarchive.recording.attribution import Attribution
from jobarchive.recording.recorder import Recorder
from jobarchive.storage.store import Store
from jobarchive.storage.writer import Writer
from testbed import objects as o
from testbed.objects import Body


class BrokenStore:
    """A store whose lookups fail in ways no database error does."""

    async def live_job_uid(self, namespace: str, name: str) -> str | None:
        raise RecursionError("maximum recursion depth exceeded")

    async def pod_job_uid(self, pod_uid: str) -> str | None:
        raise MemoryError

    async def rows(self, model: object, uids: list[str]) -> list[object]:
        raise RuntimeError("the answer could not be read")


def invalid(kind: str) -> float:
    value = REGISTRY.get_sample_value(
        "jobarchive_objects_total", {"kind": kind, "outcome": "invalid"}
    )
    return value or 0.0


def launcher() -> Body:
    """An MPIJob launcher, linked to its job by label only."""
    pod = o.fixture("mpijob-v2beta1-launcher-pod.yaml")
    pod["metadata"]["ownerReferences"] = []
    return pod


@pytest.fixture
def recorder() -> Recorder:
    store = cast(Store, BrokenStore())
    return Recorder(load({}), store, Writer(store), Attribution())


async def test_a_failing_lookup_makes_the_pod_invalid_with_its_name_and_reason(
    recorder: Recorder, caplog: pytest.LogCaptureFixture
) -> None:
    before = invalid("Pod")
    with caplog.at_level(logging.WARNING):
        await recorder.pod("ADDED", launcher())
    assert invalid("Pod") == before + 1
    [line] = [r.getMessage() for r in caplog.records if "Skipping" in r.getMessage()]
    # A pod linked by label is first looked up by its own uid: it may be stored already.
    assert line == "Skipping Pod mpi/pi-launcher-7xk2p: MemoryError"


async def test_events_whose_subject_cannot_be_looked_up_are_invalid(
    recorder: Recorder, caplog: pytest.LogCaptureFixture
) -> None:
    before = invalid("Event")
    pod = launcher()
    job = o.with_meta(o.fixture("mpijob-v2beta1-pi.yaml"), uid="job-uid")
    started = o.event(pod, "Started", "Started container")
    created = o.event(job, "MPIJobCreated", "MPIJob created")
    with caplog.at_level(logging.WARNING):
        for index, event in enumerate([started, created]):
            await recorder.event(
                "ADDED", o.with_meta(event, uid=f"ev-{index}", resourceVersion="9")
            )
    assert invalid("Event") == before + 2
    reasons = [
        r.getMessage().split(": ", 1)[1] for r in caplog.records if "Skipping" in r.getMessage()
    ]
    assert reasons == ["MemoryError", "RuntimeError: the answer could not be read"]
