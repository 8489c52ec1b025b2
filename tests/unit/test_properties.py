"""Property-based: the converters take anything Kubernetes can hold, and much it cannot,
and either return a complete row or raise InvalidObject; never anything else."""

import contextlib
import datetime
from collections.abc import Callable, Mapping
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobarchive.config import load
from jobarchive.core.kinds import BATCH_JOB
from jobarchive.core.quantities import parse_quantity
from jobarchive.core.rows import AttemptRow, EventRow, JobRow, PodRow, WaitRow
from jobarchive.recording.convert import (
    InvalidObject,
    event_row,
    involved_object,
    job_row,
    pod_job_link,
    pod_row,
)
from jobarchive.recording.convert.evictions import missed
from jobarchive.recording.convert.workloads import ended, observe
from jobarchive.recording.convert.workloads import job_link as workload_job_link
from testbed import objects as o
from tests.support.strategies import hostile_text

KINDS = load({}).kinds
NOW = datetime.datetime(2026, 11, 21, tzinfo=datetime.UTC)
TFJOB = next(k for k in KINDS if k.group == "kubeflow.org" and k.kind == "TFJob")
PROPERTIES = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])

json_leaf = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), hostile_text
)
json_value = st.recursive(
    json_leaf,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(hostile_text, children, max_size=4)
    ),
    max_leaves=20,
)


# Where the other families keep what their strategies read.
STRATEGY_PATHS = [
    ("spec", "trainer"),
    ("spec", "trainer", "numNodes"),
    ("spec", "trainer", "resourcesPerNode"),
    ("status", "jobsStatus"),
    ("spec", "rayClusterSpec"),
    ("spec", "rayClusterSpec", "workerGroupSpecs"),
    ("spec", "rayClusterSpec", "headGroupSpec"),
    ("status", "jobDeploymentStatus"),
    ("status", "jobStatus"),
    ("status", "endTime"),
    ("status", "reason"),
    ("spec", "tasks"),
    ("status", "state"),
    ("status", "state", "phase"),
    ("spec", "parallelism"),
    ("status", "active"),
    ("status", "completionTime"),
]


def scramble(base: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    """A realistic object with arbitrary values put at arbitrary known and unknown paths."""
    paths = [
        *STRATEGY_PATHS,
        ("metadata",),
        ("metadata", "name"),
        ("metadata", "uid"),
        ("metadata", "namespace"),
        ("metadata", "resourceVersion"),
        ("metadata", "creationTimestamp"),
        ("metadata", "labels"),
        ("metadata", "annotations"),
        ("metadata", "ownerReferences"),
        ("metadata", "deletionTimestamp"),
        ("spec",),
        ("status",),
        ("status", "conditions"),
        ("status", "phase"),
        ("status", "containerStatuses"),
        ("spec", "containers"),
        ("involvedObject",),
        ("involvedObject", "kind"),
        ("count",),
        ("series",),
        ("eventTime",),
        ("message",),
    ]

    def apply(changes: list[tuple[tuple[str, ...], Any]]) -> dict[str, Any]:
        obj: dict[str, Any] = __import__("copy").deepcopy(base)
        for path, value in changes:
            target = obj
            for key in path[:-1]:
                if not isinstance(target.get(key), dict):
                    target[key] = {}
                target = target[key]
            target[path[-1]] = value
        return obj

    return st.lists(st.tuples(st.sampled_from(paths), json_value), max_size=6).map(apply)


JOB = o.fixture("kubedl-tfjob.yaml")
POD = o.fixture("mpijob-v2beta1-launcher-pod.yaml")
EVENT = o.event(POD, "Started", "Started container")
EVENT["metadata"].update(uid="ev", resourceVersion="1", creationTimestamp=o.T0)


def complete_or_invalid(
    convert: Callable[[Any], Mapping[str, object]], obj: Any, columns: frozenset[str]
) -> None:
    """``convert(obj)`` raises InvalidObject or returns a complete row: all of ``columns``."""
    try:
        row = convert(obj)
    except InvalidObject:
        return
    assert columns <= row.keys(), sorted(columns - row.keys())


@PROPERTIES
@given(scramble(JOB))
def test_any_job_converts_or_is_invalid(obj: dict[str, Any]) -> None:
    complete_or_invalid(lambda body: job_row(body, TFJOB, None), obj, JobRow.__required_keys__)


BATCH_JOB_OBJECT = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "metadata": {"name": "finetune", "namespace": "ml", "uid": "b", "resourceVersion": "9"},
    "spec": {"parallelism": 2, "template": {"spec": {"containers": [{"name": "t"}]}}},
    "status": {"active": 1},
}
FAMILIES = {
    "trainjob": o.fixture("trainjob-torch.yaml"),
    "rayjob": o.fixture("rayjob.yaml"),
    "volcano": o.fixture("volcano-job.yaml"),
}


@pytest.mark.parametrize("family", [*FAMILIES, "batch"])
@PROPERTIES
@given(data=st.data())
def test_any_job_of_every_family_converts_or_is_invalid(family: str, data: st.DataObject) -> None:
    if family == "batch":
        base, kind = BATCH_JOB_OBJECT, BATCH_JOB
    else:
        base = FAMILIES[family]
        kind = o.job_kind(KINDS, base)
    obj = data.draw(scramble(base))
    complete_or_invalid(lambda body: job_row(body, kind, None), obj, JobRow.__required_keys__)


@PROPERTIES
@given(scramble(POD))
def test_any_pod_links_and_converts_or_is_invalid(obj: dict[str, Any]) -> None:
    pod_job_link(obj, KINDS)
    complete_or_invalid(
        lambda body: pod_row(body, "job", "mpi-launcher", None), obj, PodRow.__required_keys__
    )


@PROPERTIES
@given(scramble(EVENT))
def test_any_event_converts_or_is_invalid(obj: dict[str, Any]) -> None:
    with contextlib.suppress(InvalidObject):
        involved = involved_object(obj)
        assert involved.kind and involved.name, involved
    complete_or_invalid(lambda body: event_row(body, None), obj, EventRow.__required_keys__)


@PROPERTIES
@given(json_value)
def test_anything_at_all_converts_or_is_invalid(value: Any) -> None:
    obj = value if isinstance(value, dict) else {"metadata": value}
    complete_or_invalid(lambda body: job_row(body, TFJOB, None), obj, JobRow.__required_keys__)
    complete_or_invalid(
        lambda body: pod_row(body, "job", None, None), obj, PodRow.__required_keys__
    )
    complete_or_invalid(lambda body: event_row(body, None), obj, EventRow.__required_keys__)
    pod_job_link(obj, KINDS)


@PROPERTIES
@given(
    st.one_of(
        json_leaf, st.from_regex(r"[+-]?[0-9.]{0,30}(e[+-]?[0-9]{1,4}|[numkMGTPE]|[KMGTPE]i)?")
    )
)
def test_any_quantity_parses_or_is_none(raw: Any) -> None:
    quantity = parse_quantity(raw)
    if quantity is not None:
        assert str(quantity)


@pytest.mark.parametrize("uid", [None, "", 5, "u" * 65])
def test_unusable_uids_are_invalid(uid: Any) -> None:
    obj = o.with_meta(JOB, uid=uid)
    with pytest.raises(InvalidObject):
        job_row(obj, TFJOB, None)


WORKLOADS = [o.fixture(f"kueue/{name}.yaml") for name in ("preempted", "requeued", "readmitted")]
WORKLOAD_PATHS = [
    ("status", "admission"),
    ("status", "admission", "podSetAssignments"),
    ("status", "schedulingStats"),
    ("status", "schedulingStats", "evictions"),
    ("status", "requeueState"),
    ("spec", "queueName"),
    ("metadata", "managedFields"),
]


@pytest.mark.parametrize("base", WORKLOADS, ids=["preempted", "requeued", "readmitted"])
@PROPERTIES
@given(data=st.data())
def test_any_workload_is_observed_or_is_invalid(base: dict[str, Any], data: st.DataObject) -> None:
    obj = data.draw(scramble(base))
    for path, value in data.draw(st.lists(st.tuples(st.sampled_from(WORKLOAD_PATHS), json_value))):
        target = obj
        for key in path[:-1]:
            target = target.setdefault(key, {}) if isinstance(target.get(key, {}), dict) else {}
        target[path[-1]] = value
    workload_job_link(obj, KINDS)
    try:
        seen = observe(obj, NOW)
    except InvalidObject:
        return
    for row, shape in ((seen.attempt, AttemptRow), (seen.wait, WaitRow)):
        assert row is None or shape.__required_keys__ <= row.keys()
    previous = observe(WORKLOADS[0], NOW).attempt
    assert previous is not None
    missed(previous, seen.evictions, seen.previously)
    if seen.ending is not None:
        ended(previous, seen.ending, seen.version)
