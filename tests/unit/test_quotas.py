"""Kueue's ClusterQueue, as Kueue v0.19 serves it (tests/fixtures/kueue/), converted to
its GPU quotas, and its versions to a history of quota rows (decision 44)."""

import copy
import datetime
from typing import Any

import pytest

from jobarchive.recording.convert import InvalidObject
from jobarchive.recording.convert import quotas as cq
from testbed import objects as o

QUEUE_UID = "7f0c7a52-6a2e-4f2b-9a0e-1d8b3c2e4a10"
NOW = datetime.datetime(2026, 11, 21, tzinfo=datetime.UTC)
CREATED = datetime.datetime(2026, 11, 1, tzinfo=datetime.UTC)
SPEC_WRITTEN = datetime.datetime(2026, 11, 10, 12, tzinfo=datetime.UTC)
A100 = ("a100", "nvidia.com/gpu")
H100 = ("h100", "nvidia.com/gpu")


def queue() -> dict[str, Any]:
    return o.fixture("kueue/clusterqueue.yaml")


def test_a_cluster_queue_is_its_gpu_quotas_per_flavor_with_its_limits() -> None:
    seen = cq.capacity(queue(), frozenset())
    assert (seen.uid, seen.name, seen.version, seen.cohort) == (
        QUEUE_UID,
        "team-a",
        "4211",
        "research",
    )
    assert seen.created == CREATED
    # The status's writer is not the spec's: the spec was last written on the 10th.
    assert seen.changed == SPEC_WRITTEN
    assert seen.quotas == {A100: cq.Limits(8, 4, 2), H100: cq.Limits(16, None, None)}


def test_v1beta1s_cohort_and_configured_accelerators_are_read() -> None:
    body = queue()
    body["apiVersion"] = "kueue.x-k8s.io/v1beta1"
    body["spec"]["cohort"] = body["spec"].pop("cohortName")
    body["spec"]["resourceGroups"][1]["flavors"][1]["resources"].append(
        {"name": "example.com/tpu", "nominalQuota": "1500m"}
    )
    seen = cq.capacity(body, frozenset({"example.com/tpu"}))
    assert seen.cohort == "research"
    # Rounded up, as Kubernetes' Quantity.Value().
    assert seen.quotas[("h100", "example.com/tpu")] == cq.Limits(2, None, None)
    assert ("h100", "example.com/tpu") not in cq.capacity(body, frozenset()).quotas


def test_hostile_quotas_are_left_out_and_no_uid_is_refused() -> None:
    body = queue()
    flavors = body["spec"]["resourceGroups"][1]["flavors"]
    flavors[0]["resources"][0]["nominalQuota"] = "lots"
    flavors[1]["resources"][0]["borrowingLimit"] = {"no": "quantity"}
    flavors.append({"name": 7, "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 1}]})
    seen = cq.capacity(body, frozenset())
    assert seen.quotas == {H100: cq.Limits(16, None, None)}
    del body["metadata"]["uid"]
    with pytest.raises(InvalidObject):
        cq.capacity(body, frozenset())


def test_the_first_sighting_takes_the_quota_as_in_force_since_creation() -> None:
    seen = cq.capacity(queue(), frozenset())
    written, after = cq.changes(seen, {}, NOW, known=False)
    assert [row["valid_from"] for row in written] == [CREATED, CREATED]
    assert {(row["flavor"], row["nominal"], row["valid_until"]) for row in written} == {
        ("a100", 8, None),
        ("h100", 16, None),
    }
    assert after == {A100: written[0], H100: written[1]}
    assert written[0]["quota_id"].startswith(f"{QUEUE_UID}/")
    # Seen again unchanged: nothing written.
    assert cq.changes(seen, after, NOW, known=True) == ([], after)


def test_a_change_closes_the_row_in_force_and_opens_one_when_the_spec_was_written() -> None:
    first = cq.capacity(queue(), frozenset())
    _, in_force = cq.changes(first, {}, NOW, known=False)
    body = copy.deepcopy(queue())
    body["metadata"]["resourceVersion"] = "4300"
    body["metadata"]["managedFields"][0]["time"] = "2026-11-15T00:00:00Z"
    body["spec"]["resourceGroups"][1]["flavors"][0]["resources"][0]["nominalQuota"] = 4
    written, after = cq.changes(cq.capacity(body, frozenset()), in_force, NOW, known=True)
    changed = datetime.datetime(2026, 11, 15, tzinfo=datetime.UTC)
    [closed, opened] = written
    assert (closed["quota_id"], closed["valid_until"], closed["version"]) == (
        in_force[A100]["quota_id"],
        changed,
        "4300",
    )
    assert (opened["nominal"], opened["valid_from"], opened["valid_until"]) == (4, changed, None)
    assert after == {A100: opened, H100: in_force[H100]}


def test_a_change_is_dated_when_seen_without_managed_fields_and_never_before_its_row() -> None:
    first = cq.capacity(queue(), frozenset())
    _, in_force = cq.changes(first, {}, NOW, known=False)
    body = queue()
    del body["metadata"]["managedFields"]
    body["spec"]["cohortName"] = "other"
    written, _ = cq.changes(cq.capacity(body, frozenset()), in_force, NOW, known=True)
    assert {row["valid_until"] for row in written if row["valid_until"]} == {NOW}
    assert {row["valid_from"] for row in written if not row["valid_until"]} == {NOW}
    skewed = queue()
    skewed["metadata"]["managedFields"][0]["time"] = "2026-10-01T00:00:00Z"
    skewed["spec"]["cohortName"] = "other"
    written, _ = cq.changes(cq.capacity(skewed, frozenset()), in_force, NOW, known=True)
    assert {row["valid_from"] for row in written if not row["valid_until"]} == {CREATED}


def test_a_deleted_queue_closes_every_row_in_force() -> None:
    seen = cq.capacity(queue(), frozenset())
    _, in_force = cq.changes(seen, {}, NOW, known=False)
    written, after = cq.changes(seen, in_force, NOW, known=True, gone=True)
    assert after == {}
    assert sorted((row["flavor"], row["valid_until"]) for row in written) == [
        ("a100", NOW),
        ("h100", NOW),
    ]
