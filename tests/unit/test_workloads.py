"""Kueue's Workloads, as Kueue v0.19 writes them (tests/fixtures/kueue/), converted to the
current attempt's row and the current wait's (decision 43)."""

import copy
import datetime
import json
from typing import Any

import pytest

from jobarchive.core.kinds import BUILTIN_KINDS, KindRegistry
from jobarchive.recording.convert import IntermediateLink, InvalidObject
from jobarchive.recording.convert import evictions as ev
from jobarchive.recording.convert import workloads as wl
from testbed import objects as o

WORKLOAD_UID = "9c1e7a52-3b6d-4e8f-a1c2-7d9e0f1a2b3c"
JOB_UID = "5b0c7d2e-8a41-4f0b-9d1e-2c3f4a5b6c7d"
NOW = datetime.datetime(2026, 11, 21, tzinfo=datetime.UTC)
KINDS = KindRegistry(BUILTIN_KINDS)


def at(clock: str, day: int = 20) -> datetime.datetime:
    hour, minute, second = map(int, clock.split(":"))
    return datetime.datetime(2026, 11, day, hour, minute, second, tzinfo=datetime.UTC)


def workload(name: str) -> dict[str, Any]:
    return o.fixture(f"kueue/{name}.yaml")


def observe(name: str, gone: bool = False) -> wl.Observation:
    return wl.observe(workload(name), NOW, gone)


def test_a_workload_waiting_for_quota_has_no_attempt_and_waits_for_kueues_reason() -> None:
    seen = observe("pending")
    assert seen.attempt is None and seen.wait_over is None and seen.evictions is None
    assert seen.wait is not None
    assert seen.wait["reason"] == "Pending"
    assert seen.wait["message"] == (
        "couldn't assign flavors to pod set worker: insufficient unused quota for "
        "nvidia.com/gpu in flavor a100, 4 more needed"
    )
    # Seen when Kueue's write of it happened (its managedFields' time).
    assert seen.wait["first_seen"] == seen.wait["last_seen"] == at("10:00:02")
    assert seen.wait["wait_id"].startswith(f"{WORKLOAD_UID}/")
    assert (seen.wait["local_queue"], seen.wait["namespace"]) == ("user-queue", "team-a")


def test_a_reason_whose_numbers_change_is_one_wait_another_reason_is_another() -> None:
    first = observe("pending").wait
    fewer = workload("pending")
    condition = fewer["status"]["conditions"][0]
    condition["message"] = condition["message"].replace("4 more", "2 more")
    other = copy.deepcopy(fewer)
    other["status"]["conditions"][0]["message"] = "LocalQueue user-queue is stopped"
    assert first is not None
    assert wl.observe(fewer, NOW).wait["wait_id"] == first["wait_id"]  # type: ignore[index]
    assert wl.observe(other, NOW).wait["wait_id"] != first["wait_id"]  # type: ignore[index]


def test_an_admitted_workload_is_an_attempt_keyed_by_its_reservation() -> None:
    seen = observe("admitted")
    attempt = seen.attempt
    assert attempt is not None and seen.wait is None
    assert attempt["attempt_id"] == f"{WORKLOAD_UID}/2026-11-20T10:05:00Z"
    assert attempt["quota_reserved_at"] == attempt["admitted_at"] == at("10:05:00")
    assert attempt["running_at"] is None and attempt["end_reason"] is None
    assert (attempt["cluster_queue"], attempt["local_queue"]) == ("cq-a100", "user-queue")
    assert json.loads(attempt["flavors"]) == {
        "master": {"cpu": "default", "memory": "default", "nvidia.com/gpu": "a100"},
        "worker": {"cpu": "default", "memory": "default", "nvidia.com/gpu": "a100"},
    }
    assert (attempt["workload_id"], attempt["workload_name"]) == (
        WORKLOAD_UID,
        "pytorchjob-pytorch-simple-8d3e1",
    )
    assert attempt["version"] == "88140" and attempt["gmt_created"] == at("10:05:00")
    # Its wait is over since the admission.
    assert seen.wait_over == at("10:05:00")


def test_every_pod_ready_is_when_the_attempt_ran() -> None:
    attempt = observe("running").attempt
    assert attempt is not None and attempt["running_at"] == at("10:06:30")


def test_a_preempted_attempt_ends_with_the_eviction_and_names_its_preemptor() -> None:
    attempt = observe("preempted").attempt
    assert attempt is not None
    assert attempt["ended_at"] == at("11:00:00") and attempt["end_reason"] == "Preempted"
    assert attempt["underlying_cause"] is None
    assert attempt["preemptor_workload_id"] == "2f4a6c8e-0000-4000-8000-00000000beef"
    assert attempt["preemptor_job_id"] == "7d3b1f9a-0000-4000-8000-00000000cafe"
    assert attempt["message"] is not None
    assert attempt["message"].startswith("Preempted to accommodate a workload")
    assert json.loads(attempt["evictions"] or "") == {"Preempted": {"": 1}}


def test_once_the_quota_is_released_the_eviction_is_an_ending_without_its_attempt() -> None:
    seen = observe("requeued")
    assert seen.attempt is None
    assert seen.ending is not None
    assert (seen.ending.at, seen.ending.reason) == (at("11:00:00"), "Preempted")
    assert seen.ending.preemptor_workload == "2f4a6c8e-0000-4000-8000-00000000beef"
    # It waits again, for Kueue's reason.
    assert seen.wait is not None and seen.wait["reason"] == "Pending"
    # The ending given to the attempt remembered from before.
    before = observe("running").attempt
    assert before is not None
    closed = wl.ended(before, seen.ending, seen.version)
    assert closed is not None
    assert (closed["ended_at"], closed["end_reason"], closed["version"]) == (
        at("11:00:00"),
        "Preempted",
        "88170",
    )
    assert closed["running_at"] == at("10:06:30") and closed["cluster_queue"] == "cq-a100"


def test_an_ending_does_not_end_an_attempt_twice_nor_one_that_began_after_it() -> None:
    ending = ev.Ending(at("11:00:00"), "Preempted")
    preempted, readmitted = observe("preempted").attempt, observe("readmitted").attempt
    assert preempted is not None and readmitted is not None
    assert wl.ended(preempted, ending, "99999") is None
    assert wl.ended(readmitted, ending, "99999") is None


def test_a_readmitted_workload_is_a_second_attempt_and_says_the_first_ended() -> None:
    seen = observe("readmitted")
    attempt = seen.attempt
    assert attempt is not None
    assert attempt["attempt_id"] == f"{WORKLOAD_UID}/2026-11-20T11:20:00Z"
    assert (attempt["admitted_at"], attempt["running_at"]) == (at("11:20:00"), at("11:21:00"))
    # The reset eviction is not this attempt's end.
    assert attempt["end_reason"] is None and attempt["ended_at"] is None
    assert seen.previously is not None and seen.previously.startswith("Preempted to")
    # Had the eviction been missed, the counts tell the first attempt's end.
    first = observe("running").attempt
    assert first is not None
    ending = ev.missed(first, seen.evictions, seen.previously)
    assert (ending.at, ending.reason, ending.message) == (None, "Preempted", seen.previously)


def test_a_missed_eviction_that_the_counts_cannot_tell_ends_as_evicted() -> None:
    first = observe("preempted").attempt
    assert first is not None
    both = json.dumps({"Preempted": {"": 2}, "PodsReadyTimeout": {"WaitForStart": 1}})
    assert ev.missed(first, both, None).reason == "Evicted"
    assert ev.missed(first, None, None).reason == "Evicted"


def test_a_finished_workload_ends_its_attempt_finished() -> None:
    seen = observe("finished")
    attempt = seen.attempt
    assert attempt is not None and seen.wait is None
    assert (attempt["ended_at"], attempt["end_reason"]) == (at("13:00:00"), "Finished")
    assert (attempt["underlying_cause"], attempt["message"]) == (
        "Succeeded",
        "Job finished successfully",
    )


def test_a_podsready_timeout_keeps_its_underlying_cause_and_requeues() -> None:
    attempt = observe("podsready-timeout").attempt
    assert attempt is not None
    assert (attempt["end_reason"], attempt["underlying_cause"]) == (
        "PodsReadyTimeout",
        "WaitForStart",
    )
    assert (attempt["ended_at"], attempt["requeues"]) == (at("12:10:05"), 1)
    assert attempt["running_at"] is None and attempt["preemptor_workload_id"] is None


def test_multikueue_the_managers_workload_and_the_workers_copy() -> None:
    manager = observe("multikueue-manager").attempt
    assert manager is not None
    assert (manager["cluster_queue"], manager["end_reason"]) == (
        "cq-multikueue",
        "ClusterQueueStopped",
    )
    assert manager["admitted_at"] == at("09:00:09") and manager["running_at"] is None
    worker = observe("multikueue-worker").attempt
    assert worker is not None
    assert worker["end_reason"] == "DeactivatedDueToEvictedOnManagerCluster"
    assert worker["underlying_cause"] == "EvictedOnManagerCluster"
    assert json.loads(worker["flavors"]) == {
        "master": {"cpu": "default-flavor", "nvidia.com/gpu": "h100"}
    }


def test_a_v1beta1_workload_reads_as_a_v1beta2_one_and_an_old_message_names_no_one() -> None:
    attempt = observe("v1beta1-preempted").attempt
    assert attempt is not None
    assert (attempt["quota_reserved_at"], attempt["ended_at"]) == (
        at("08:30:00", 19),
        at("09:00:00", 19),
    )
    assert attempt["end_reason"] == "Preempted"
    assert attempt["preemptor_workload_id"] is attempt["preemptor_job_id"] is None
    v1beta2 = workload("v1beta1-preempted")
    v1beta2["apiVersion"] = "kueue.x-k8s.io/v1beta2"
    v1beta2["spec"]["priorityClassRef"] = {"kind": "WorkloadPriorityClass", "name": "low"}
    del (
        v1beta2["spec"]["priorityClassName"],
        v1beta2["status"]["accumulatedPastExexcutionTimeSeconds"],
    )
    assert wl.observe(v1beta2, NOW).attempt == attempt


def test_a_preemptor_kueue_does_not_know_is_not_named() -> None:
    body = workload("preempted")
    for condition in body["status"]["conditions"]:
        if condition["type"] in ("Evicted", "Preempted"):
            condition["message"] = (
                "Preempted to accommodate a workload (UID: UNKNOWN, JobUID: UNKNOWN) due to "
                "reclamation within the cohort"
            )
    attempt = wl.observe(body, NOW).attempt
    assert attempt is not None and attempt["end_reason"] == "Preempted"
    assert attempt["preemptor_workload_id"] is attempt["preemptor_job_id"] is None


def test_a_workload_deleted_while_it_held_quota_ends_its_attempt_deleted() -> None:
    seen = observe("running", gone=True)
    assert seen.attempt is not None
    assert (seen.attempt["end_reason"], seen.attempt["ended_at"]) == ("Deleted", NOW)
    # A finished one keeps its finish.
    finished = observe("finished", gone=True).attempt
    assert finished is not None and finished["end_reason"] == "Finished"
    # A waiting one waited until then.
    pending = observe("pending", gone=True)
    assert pending.wait is not None and pending.attempt is None
    assert (pending.wait["first_seen"], pending.wait["last_seen"]) == (at("10:00:02"), NOW)


def test_waiting_on_admission_checks_is_a_wait_too() -> None:
    body = workload("admitted")
    body["status"]["conditions"][1] = {
        "type": "Admitted",
        "status": "False",
        "reason": "UnsatisfiedAdmissionChecks",
        "message": "The workload has not all admission checks",
        "lastTransitionTime": "2026-11-20T10:05:00Z",
    }
    seen = wl.observe(body, NOW)
    assert seen.attempt is not None and seen.attempt["admitted_at"] is None
    assert seen.wait is not None and seen.wait["reason"] == "UnsatisfiedAdmissionChecks"


def test_a_wait_seen_longer_is_extended_and_never_shortened() -> None:
    wait = observe("pending").wait
    assert wait is not None
    longer = wl.waited(wait, at("10:05:00"), "88140")
    assert longer is not None and longer["last_seen"] == at("10:05:00")
    assert longer["first_seen"] == at("10:00:02") and longer["version"] == "88140"
    assert wl.waited(wait, at("10:00:00"), "88140") is None


def test_the_job_is_the_workloads_controller_else_kueues_label() -> None:
    assert wl.job_link(workload("pending"), KINDS) == wl.JobLink(JOB_UID)
    labelled = workload("pending")
    del labelled["metadata"]["ownerReferences"]
    assert wl.job_link(labelled, KINDS) == wl.JobLink(JOB_UID)
    batch = workload("pending")
    batch["metadata"]["ownerReferences"][0].update(apiVersion="batch/v1", kind="Job")
    assert wl.job_link(batch, KINDS) == IntermediateLink(JOB_UID)
    pod = workload("pending")
    pod["metadata"]["ownerReferences"][0].update(apiVersion="v1", kind="Pod")
    assert wl.job_link(pod, KINDS) is None


@pytest.mark.parametrize(
    "spoil",
    [
        lambda body: body["metadata"].pop("uid"),
        lambda body: body["metadata"].pop("resourceVersion"),
        lambda body: body["metadata"].update(name=7),
        lambda body: body["status"]["conditions"][0].pop("lastTransitionTime"),
    ],
)
def test_a_workload_that_cannot_be_read_is_an_invalid_object(spoil: Any) -> None:
    body = workload("admitted")
    spoil(body)
    with pytest.raises(InvalidObject):
        wl.observe(body, NOW)


@pytest.mark.parametrize(
    "status",
    [
        None,
        "x",
        {"conditions": "x"},
        {"conditions": [None, 3, {"type": 5}, {"type": "QuotaReserved", "status": "False"}]},
        {"admission": [], "schedulingStats": {"evictions": [None, {"reason": 3}]}},
        {"requeueState": {"count": -1}, "admission": {"podSetAssignments": [{"flavors": 1}]}},
    ],
)
def test_odd_statuses_are_read_as_far_as_they_go(status: Any) -> None:
    body = workload("pending")
    body["status"] = status
    seen = wl.observe(body, NOW)
    assert seen.attempt is None and seen.uid == WORKLOAD_UID
