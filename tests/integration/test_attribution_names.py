"""Attribution that asks the database, through the real write path on both databases.

A pod linked to its job only by a label (an MPIJob's launcher) keeps the job it was
attributed to: a job of the same name created after the first was deleted does not
take its late updates, in the same process or after a restart (when only the database
remembers). An Event whose job's lookup fails while the database is away is stored
once it is back, not left waiting for a job that was deleted and will never appear."""

from typing import Any

from jobarchive.config import load
from jobarchive.recording.attribution import Attribution
from jobarchive.recording.recorder import Recorder
from jobarchive.storage.models import Event, Pod
from jobarchive.storage.store import Store
from jobarchive.storage.writer import Writer
from testbed import objects as o
from testbed.objects import Body
from tests.support.history import History


def launcher(version: int, phase: str) -> Body:
    """The MPIJob launcher of job ``pi`` in ``mpi``, linked by its training labels only."""
    pod = o.fixture("mpijob-v2beta1-launcher-pod.yaml")
    pod["metadata"]["ownerReferences"] = []
    pod["status"] = {"phase": phase}
    return o.with_meta(pod, resourceVersion=str(version))


async def stored_job(pod: Body) -> str:
    row = await Pod.get(pod_id=pod["metadata"]["uid"])
    return str(row.job_id)


async def test_a_label_linked_pod_keeps_its_job_when_a_namesake_replaces_it(database: str) -> None:
    async with History() as history:
        first = await history.job("pi", namespace="mpi", status="Running")
        await history.recorder.pod("ADDED", launcher(2000, "Running"))
        # The first job is deleted, and a new one of the same name created.
        await history.recorder.job(
            o.job_kind(history.settings.kinds, first),
            "DELETED",
            o.with_meta(first, resourceVersion="2100"),
        )
        await history.job("pi", namespace="mpi", status="Created")
        late = launcher(2200, "Failed")
        await history.recorder.pod("MODIFIED", late)
    assert await stored_job(late) == first["metadata"]["uid"]

    # After a restart, only the database knows which job the pod is of.
    async with History() as restarted:
        later = launcher(2300, "Failed")
        await restarted.recorder.pod("DELETED", later)
    assert await stored_job(later) == first["metadata"]["uid"]
    assert (await Pod.get(pod_id=later["metadata"]["uid"])).is_in_etcd is False


class AwayAtFirst(Store):
    """The store, whose first lookups of rows fail as they do while the database is away."""

    def __init__(self, failures: int) -> None:
        super().__init__()
        self.failures = failures

    async def rows(self, model: Any, uids: Any) -> Any:
        if self.failures:
            self.failures -= 1
            raise ConnectionResetError("Lost connection to MySQL server during query")
        return await super().rows(model, uids)


async def test_an_event_whose_job_lookup_fails_is_stored_once_the_database_answers(
    database: str,
) -> None:
    async with History() as history:
        # Deleted while the operator was down: it will never be seen again.
        job = await history.job("gone-while-down", status="Failed", gone=True)
    event = o.with_meta(
        o.event(job, "TFJobFailed", "TFJob failed", type="Warning"),
        uid="3f1c2b9a-6d4e-4c1b-9a7e-2d5f8c0b1a99",
        resourceVersion="3000",
    )
    writer = Writer(Store(), flushers=1)
    writer.start()
    try:
        store = AwayAtFirst(failures=2)
        recorder = Recorder(load({}), store, writer, Attribution())
        await recorder.event("ADDED", event)
    finally:
        await writer.stop()
    assert store.failures == 0
    row = await Event.get(event_id=event["metadata"]["uid"])
    assert row.job_id == job["metadata"]["uid"]
