"""A failed job's evidence built from its stored rows (decision 42): containers from
their log tails' rows, else from the pod's remark; the pod's own reason; its Events and
its job's; the eviction of the Kueue attempt it ran in; and the job's failure chosen
from its first failing pod, or from its own Events when no pod failed."""

import datetime
from typing import Any

from jobarchive.core.evidence import JobEvidence, classify_job, failed_pods, pod_evidence_of
from jobarchive.core.taxonomy import ContainerState, KueueEviction, Reported
from jobarchive.infra.rules import load_rules

RULES = load_rules()
JOB = {"job_id": "job-1", "version": "10", "namespace": "ml", "status": "Failed"}


def at(minute: int) -> datetime.datetime:
    return datetime.datetime(2026, 11, 20, 10, minute, tzinfo=datetime.UTC)


def pod(uid: str, status: str = "Failed", **fields: Any) -> dict[str, Any]:
    row = {"pod_id": uid, "name": f"w-{uid}", "status": status, "remark": None}
    return {**row, "gmt_created": at(0), "gmt_finished": at(30), **fields}


def tail(uid: str, text: str | None = None, **fields: Any) -> dict[str, Any]:
    row = {"pod_id": uid, "container": "pytorch", "exit_code": 1, "reason": "Error"}
    return {**row, "gmt_failed": at(20), "captured": text is not None, "log_tail": text, **fields}


def event(uid: str, reason: str, message: str = "", minute: int = 10) -> dict[str, Any]:
    row = {"obj_uid": uid, "reason": reason, "message": message}
    return {**row, "first_timestamp": at(minute), "last_timestamp": at(minute)}


def test_a_pods_containers_are_its_tails_rows_an_unread_tail_none() -> None:
    rows = [tail("p0", "boom\n"), tail("p0", container="sidecar", exit_code=137, reason=None)]
    rows.append(tail("p0", "not read", captured=False, container="init"))
    evidence = pod_evidence_of(pod("p0"), JobEvidence(JOB, [pod("p0")], rows), ())
    assert evidence.containers == (
        ContainerState("pytorch", "Error", exit_code=1, finished_at=at(20), tail="boom\n"),
        ContainerState("sidecar", None, exit_code=137, finished_at=at(20)),
        ContainerState("init", "Error", exit_code=1, finished_at=at(20)),
    )
    assert (evidence.pod, evidence.status, evidence.ended_at) == ("p0", None, at(30))


def test_without_a_tails_row_the_remark_is_the_containers_end_or_the_pods_reason() -> None:
    killed = pod("p0", remark="OOMKilled (exit code 137): memory cgroup out of memory")
    evidence = pod_evidence_of(killed, JobEvidence(JOB, [killed]), ())
    assert evidence.containers == (
        ContainerState(
            "", "OOMKilled", "memory cgroup out of memory", exit_code=137, finished_at=at(30)
        ),
    )
    evicted = pod("p1", remark="Evicted: The node was low on resource: memory.")
    evidence = pod_evidence_of(evicted, JobEvidence(JOB, [evicted]), ())
    assert evidence.containers == ()
    assert evidence.status == Reported("Evicted", "The node was low on resource: memory.")


def test_a_pods_events_oldest_first_then_its_jobs() -> None:
    events = [event("p0", "Killing", minute=12), event("p0", "Pulled", minute=2)]
    events.append(event("p9", "Started"))
    job_events = (Reported("BackoffLimitExceeded", "Job has reached the specified backoff"),)
    evidence = pod_evidence_of(pod("p0"), JobEvidence(JOB, [pod("p0")], events=events), job_events)
    assert [e.reason for e in evidence.events] == ["Pulled", "Killing", "BackoffLimitExceeded"]


def test_the_eviction_is_the_attempts_the_pod_ran_in() -> None:
    attempts = [
        {"quota_reserved_at": at(0), "end_reason": "Preempted", "underlying_cause": None},
        {"quota_reserved_at": at(15), "end_reason": "Finished", "underlying_cause": None},
    ]
    first = pod_evidence_of(pod("p0"), JobEvidence(JOB, attempts=attempts), ())
    assert first.kueue == KueueEviction("Preempted", None, None)
    second = pod_evidence_of(pod("p1", gmt_created=at(16)), JobEvidence(JOB, attempts=attempts), ())
    assert second.kueue is None


def test_failed_pods_are_those_in_phase_failed_or_with_a_failed_containers_row() -> None:
    pods = [pod("p0"), pod("p1", "Running"), pod("p2", "Succeeded")]
    evidence = JobEvidence(JOB, pods, [tail("p1")])
    assert [row["pod_id"] for row in failed_pods(evidence)] == ["p0", "p1"]


def test_the_job_is_its_first_failing_pods_with_the_highest_exit_code() -> None:
    pods = [pod("p0"), pod("p1")]
    nccl = "[E ProcessGroupNCCL.cpp:1316] NCCL error: unhandled system error\n"
    tails = [
        tail("p0", nccl, gmt_failed=at(25), exit_code=3),
        tail("p1", "RuntimeError: CUDA out of memory. Tried to allocate 2 GiB\n"),
    ]
    found = classify_job(JobEvidence(JOB, pods, tails), RULES)
    assert (found.pod_id, found.pod_name, found.failure.failure.failure_class) == (
        "p1",
        "w-p1",
        "GPUOutOfMemory",
    )
    assert found.failure.derived_exit_code == 3


def test_a_job_none_of_whose_pods_failed_is_read_from_its_own_events() -> None:
    events = [event("job-1", "DeadlineExceeded", "Job was active longer than specified")]
    found = classify_job(JobEvidence(JOB, [pod("p0", "Running")], events=events), RULES)
    assert (found.pod_id, found.pod_name) == ("", "")
    assert found.failure.failure.failure_class == "DeadlineExceeded"
    assert classify_job(JobEvidence(JOB), RULES).failure.failure.failure_class == "Unknown"
