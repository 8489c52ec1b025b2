"""What objects say cannot take over the operator's log: the real operator against the
emulated API, given names, namespaces, reasons and container names far longer than
Kubernetes allows, and names holding line breaks, writes every line under a bound,
each still naming its object, and none of the lines the objects hold."""

import uuid

import pytest

from jobarchive.storage.models import Event, Job
from testbed import objects as o
from testbed.cluster import EVENTS, PODS, Cluster, resource_of
from testbed.objects import Body
from tests.support.operators import OperatorFactory
from tests.support.waiting import eventually

pytestmark = pytest.mark.e2e
TFJOBS = resource_of("kubeflow.org", "TFJob")
HUGE = 100_000
# A namespace is part of the request's path, which the emulator takes up to 8 KiB.
LONG_NAMESPACE = 7_000
# Every line of the operator's log, Kopf's prefix included.
LONGEST_LINE = 1_000
FORGED = "ERROR forged: the database was dropped"


def huge(prefix: str, length: int = HUGE) -> str:
    return prefix + "n" * (length - len(prefix))


def forging(prefix: str) -> str:
    """A name Kubernetes' length allows (253) whose text would start a line of its own."""
    return f"{prefix}\n{FORGED}\n".ljust(253, "x")


def failed_status(container: str) -> Body:
    running = o.running_status(container, "busybox", "10.0.0.12", "172.16.0.12")
    return o.terminated_status(running, 1, "Error", "2026-11-20T10:20:00Z")


async def test_huge_and_multi_line_text_of_objects_is_cut_escaped_and_still_names_them(
    cluster: Cluster, start_operator: OperatorFactory
) -> None:
    operator = await start_operator(JOBARCHIVE_WAITING_MAX="100")
    await cluster.wait_watching([PODS, EVENTS, TFJOBS])
    tfjob = o.example("tfjob-simple.yaml")
    await cluster.create(TFJOBS, o.with_meta(tfjob, name=huge("huge-job-")))
    await cluster.create(TFJOBS, o.with_meta(tfjob, name=f"two-lines\n{FORGED}" * 20))
    namespace = huge("huge-namespace-", LONG_NAMESPACE)
    elsewhere = o.with_meta(tfjob, name=huge("elsewhere-"), namespace=namespace)
    await cluster.create(TFJOBS, elsewhere)
    job = await cluster.create(TFJOBS, o.with_meta(tfjob, name="victim"))
    await eventually(lambda: Job.filter(job_id=job["metadata"]["uid"]).first())

    pod = o.kubeflow_pod(job, "tfReplicaSpecs", "Worker", 0)
    await cluster.create(PODS, o.with_meta(pod, name=huge("huge-pod-")))
    # A failed container whose name is too long for its row: its log is not read.
    worker = await cluster.create(PODS, o.kubeflow_pod(job, "tfReplicaSpecs", "Worker", 1))
    status = {"status": failed_status(huge("huge-container-"))}
    await cluster.patch(PODS, "kubeflow", worker["metadata"]["name"], status)
    event = o.event(job, huge("HugeReason"), "a reason no column holds", type="Warning")
    await cluster.create(EVENTS, o.with_meta(event, name=huge("huge-event-")))
    kept = await cluster.create(EVENTS, o.event(job, huge("HugeReason"), "kept, cut"))
    # Over the waiting set's 100: pods of a job never seen, the oldest dropped by name.
    ghost = o.with_meta(tfjob, name="ghost", uid=str(uuid.uuid4()))
    for index in range(103):
        orphan = o.kubeflow_pod(ghost, "tfReplicaSpecs", "Worker", index)
        await cluster.create(PODS, o.with_meta(orphan, name=forging(f"orphan-{index}")))

    expected = {
        "job": f"Skipping TFJob kubeflow/huge-job-{'n' * 191}…({HUGE} characters): "
        f"metadata.name is {HUGE} characters, over 253",
        "escaped": "Skipping TFJob kubeflow/two-lines\\nERROR forged: the database was dropped",
        "namespace": f"Skipping TFJob huge-namespace-{'n' * 185}…({LONG_NAMESPACE} characters)"
        f"/elsewhere-{'n' * 190}…({HUGE} characters): metadata.name is {HUGE} characters",
        "pod": f"Skipping Pod kubeflow/huge-pod-{'n' * 191}…({HUGE} characters): ",
        "container": "Not reading the log of kubeflow/victim-worker-1 container "
        f"huge-container-{'n' * 185}…({HUGE} characters) (restart 0): the container name is",
        "event": f"Skipping Event kubeflow/huge-event-{'n' * 189}…({HUGE} characters): ",
        "dropped": "the waiting set is full (JOBARCHIVE_WAITING_MAX, JOBARCHIVE_WAITING_BYTES): "
        "Pod kubeflow/orphan-0\\nERROR forged: the database was dropped\\nxxx",
    }

    async def said() -> list[str]:
        log = operator.log()
        return [what for what, line in expected.items() if line not in log]

    async def all_said() -> bool:
        return not await said()

    try:
        await eventually(all_said, within=60)
    except AssertionError:
        raise AssertionError(f"not said: {await said()}") from None
    lines = operator.log().splitlines()
    longest = max(lines, key=len)
    assert len(longest) < LONGEST_LINE, longest
    assert not [line for line in lines if line.startswith(FORGED)]
    stored = await Event.get(event_id=kept["metadata"]["uid"])
    assert len(stored.reason) == 255 and stored.reason.endswith("…")
    print(f"longest line: {len(longest)} characters")
