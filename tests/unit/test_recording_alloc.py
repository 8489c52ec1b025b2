"""What recording a pod keeps alive, as a guard against regressions (not a timing).

Over 1,000 pods of one job, converted and attributed as the recorder does while they
wait for their commit: the objects the collector must track and the bytes kept per
pod. The bounds are the figures reached (1 tracked object, 1,124 bytes per pod: the
Waiting, its row, and the attribution's entry), with a little room. The row's 24
columns (decision 32 added four) take a dict of 64 slots where 20 took 32: about 530
bytes of the figure, 756 before.
"""

import gc
import tracemalloc

from jobarchive.config import load
from jobarchive.core.accounting import ACCELERATORS
from jobarchive.recording import convert
from jobarchive.recording.attribution import Attribution, Waiting
from jobarchive.recording.recorder import pod_waiting
from testbed import objects as o
from testbed.objects import Body

PODS = 1000
KINDS = load({}).kinds
JOB = o.with_meta(o.example("pytorch-simple.yaml"), uid="job-uid", resourceVersion="5")


def worker(index: int) -> Body:
    pod = o.kubeflow_pod(JOB, "pytorchReplicaSpecs", "Worker", index)
    pod["metadata"].update(
        uid=f"{index:08d}-0000-4000-8000-000000000000", resourceVersion="1", creationTimestamp=o.T0
    )
    pod["spec"]["containers"][0]["resources"] = {
        "requests": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": 1},
        "limits": {"nvidia.com/gpu": 1, "memory": "16Gi"},
    }
    pod["status"] = o.running_status("pytorch", "pytorch:2", f"10.0.{index % 250}.1", "172.16.0.9")
    return pod


def record(pods: list[Body], attribution: Attribution) -> list[Waiting]:
    """Convert and attribute pods as the recorder does; what waits for the commit."""
    kept = []
    for pod in pods:
        link = convert.pod_job_link(pod, KINDS)
        assert isinstance(link, convert.OwnerLink)
        item = pod_waiting(None, pod, link.kind.main_container, None, ACCELERATORS)
        attribution.pod_tracked(item.uid, link.job_uid)
        kept.append(item)
    return kept


def test_a_recorded_pod_keeps_one_tracked_object_and_few_bytes() -> None:
    pods = [worker(index) for index in range(PODS)]
    attribution = Attribution()
    record([worker(PODS)], attribution)
    gc.collect()
    tracked = len(gc.get_objects())
    tracemalloc.start()
    try:
        kept = record(pods, attribution)
        current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    gc.collect()
    assert (len(gc.get_objects()) - tracked) / PODS <= 1.05
    assert current / PODS <= 1180
    # Nothing larger passes through on the way: no copy of the object.
    assert peak / PODS <= 1230
    assert len(kept) == PODS
