"""What waits for its job or pod: a few fields per object, bounded by count and bytes,
the oldest dropped first."""

import tracemalloc

from jobarchive.core.accounting import ACCELERATORS
from jobarchive.core.bounded import Weighed
from jobarchive.core.kinds import BUILTIN_KINDS
from jobarchive.recording.attribution import Attribution, Waiting
from jobarchive.recording.recorder import event_waiting, pod_waiting
from testbed import objects as o
from testbed.objects import Body

TFJOB = next(k for k in BUILTIN_KINDS if (k.group, k.kind) == ("kubeflow.org", "TFJob"))


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def job() -> Body:
    body = o.with_meta(o.example("tfjob-simple.yaml"), uid="job-uid", resourceVersion="5")
    body["apiVersion"], body["kind"] = "kubeflow.org/v1", "TFJob"
    return body


JOB = job()


def launcher(index: int, annotation: int = 0) -> Body:
    """A worker pod of a job not seen yet, as the training-operator creates it."""
    pod = o.kubeflow_pod(JOB, "tfReplicaSpecs", "Worker", index)
    pod["metadata"].update(uid=f"pod-{index}", resourceVersion=str(100 + index))
    pod["metadata"]["annotations"] = {"example.com/config": "x" * annotation}
    pod["status"] = o.running_status("tensorflow", "tf:2.15", "10.0.0.1", f"172.16.0.{index}")
    return pod


def waiting_pod(index: int, annotation: int = 0) -> Waiting:
    return pod_waiting(
        "ADDED", launcher(index, annotation), TFJOB.main_container, None, ACCELERATORS
    )


def waiting_event(index: int) -> Waiting:
    pod = launcher(index)
    event = o.event(pod, "Scheduled", f"Successfully assigned kubeflow/worker-{index} to node-a")
    event["metadata"].update(uid=f"ev-{index}", resourceVersion=str(200 + index))
    return event_waiting("ADDED", event, None)


def test_a_weighed_map_drops_its_oldest_entries_past_its_count() -> None:
    weighed: Weighed[str, int] = Weighed(max_entries=2, max_weight=100)
    assert weighed.put("a", 1, 10) == []
    assert weighed.put("b", 2, 10) == []
    # Rewriting a key keeps its place: it has waited longest.
    assert weighed.put("a", 3, 10) == []
    assert weighed.put("c", 4, 10) == [("a", 3)]
    assert (len(weighed), weighed.weight) == (2, 20)
    assert weighed.oldest() == ("b", 2)


def test_a_weighed_map_drops_its_oldest_entries_past_its_weight() -> None:
    weighed: Weighed[str, int] = Weighed(max_entries=100, max_weight=100)
    weighed.put("a", 1, 40)
    weighed.put("b", 2, 40)
    assert weighed.put("c", 3, 50) == [("a", 1)]
    assert weighed.put("b", 5, 60) == [("b", 5)]
    assert (len(weighed), weighed.weight) == (1, 50)
    # One entry heavier than the whole bound is not kept either.
    assert weighed.put("huge", 6, 101) == [("c", 3), ("huge", 6)]
    assert (len(weighed), weighed.weight) == (0, 0)
    assert weighed.pop("huge") is None


def test_a_waiting_pod_keeps_its_row_not_its_body() -> None:
    item = waiting_pod(0, annotation=200_000)
    assert item.pod is not None
    assert (item.kind, item.uid, item.namespace, item.name) == (
        "Pod",
        "pod-0",
        "kubeflow",
        "tfjob-simple-worker-0",
    )
    assert (item.pod["image"], item.pod["pod_ip"], item.pod["job_id"]) == (
        "docker.io/kubeflowkatib/tf-mnist-with-summaries:latest",
        "172.16.0.0",
        "",
    )
    assert item.size() < 4096


def test_the_bytes_counted_cover_what_is_kept_and_not_much_more() -> None:
    attribution = Attribution(waiting_max=100_000, waiting_bytes=2**30)
    # Caches filled on a first conversion are not what waiting keeps.
    waiting_pod(999)
    waiting_event(999)
    tracemalloc.start()
    try:
        for index in range(500):
            attribution.wait(("kubeflow", "tfjob-simple"), waiting_pod(index))
            attribution.wait(f"pod-{index}", waiting_event(index))
        kept = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    counted = attribution.waiting_bytes()
    assert kept <= counted <= 2 * kept, (kept, counted)
    assert attribution.waiting_counts() == (500, 500)


def test_what_waits_is_bounded_by_count_oldest_first() -> None:
    attribution = Attribution(waiting_max=3, waiting_bytes=2**30)
    dropped = [attribution.wait(("kubeflow", "tfjob-simple"), waiting_pod(i)) for i in range(5)]
    assert [[item.uid for item in d] for d in dropped] == [[], [], [], ["pod-0"], ["pod-1"]]
    released = attribution.job_seen("kubeflow", "tfjob-simple", "job-uid", gone=False)
    assert [item.uid for item in released] == ["pod-2", "pod-3", "pod-4"]
    assert attribution.waiting_counts() == (0, 0)


def test_what_waits_is_bounded_by_bytes_oldest_first() -> None:
    size = waiting_pod(0).size()
    attribution = Attribution(waiting_max=1000, waiting_bytes=size * 3)
    for index in range(3):
        assert attribution.wait(f"owner-{index}", waiting_pod(index)) == []
    [dropped] = attribution.wait("owner-3", waiting_pod(3))
    assert dropped.uid == "pod-0"
    assert attribution.intermediate_seen("owner-0", "job-uid") == []
    assert [i.uid for i in attribution.intermediate_seen("owner-3", "job-uid")] == ["pod-3"]
    assert attribution.waiting_counts() == (2, 0)


def test_tighter_bounds_drop_the_oldest_at_once() -> None:
    attribution = Attribution()
    for index in range(4):
        attribution.wait(f"owner-{index}", waiting_pod(index))
    assert [item.uid for item in attribution.bound_waiting(2, 2**30)] == ["pod-0", "pod-1"]
    assert attribution.waiting_counts() == (2, 0)


def test_a_newer_version_replaces_the_waiting_one_and_a_deletion_sticks() -> None:
    clock = Clock()
    attribution = Attribution(ttl=60, clock=clock)
    deleted = waiting_pod(0)
    deleted.gone = True
    attribution.wait(("kubeflow", "tfjob-simple"), deleted)
    clock.now = 50
    newer = waiting_pod(0)
    attribution.wait(("kubeflow", "tfjob-simple"), newer)
    clock.now = 61
    # Expired by when it first began waiting, not by its latest version.
    [expired] = attribution.sweep(every=0) or []
    assert expired is newer and expired.gone
