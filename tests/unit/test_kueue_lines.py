"""A job's Kueue attempts and waits as its detail gives them and as ``jobarchive job``
prints them (decision 43): the waits' reasons each once with how long they held, the
figures null for a job Kueue never admitted, every line within 80 columns."""

import datetime
from typing import Any

from jobarchive.cli.kueue_lines import flavor_names, kueue_lines
from jobarchive.cli.widths import fitted
from jobarchive.reading.queries.preemptions import FIGURES, attempt_json, figures_json, waits_json

NOW = datetime.datetime(2026, 11, 21, tzinfo=datetime.UTC)
PREEMPTOR = "7d3b1f9a-0000-4000-8000-00000000cafe"
QUOTA = "couldn't assign flavors to pod set worker: insufficient unused quota for nvidia.com/gpu"


def at(clock: str) -> datetime.datetime:
    hour, minute, second = map(int, clock.split(":"))
    return datetime.datetime(2026, 11, 20, hour, minute, second, tzinfo=datetime.UTC)


def stretch(first: str, last: str, message: str = QUOTA) -> dict[str, Any]:
    return {"reason": "Pending", "message": message, "first_seen": at(first), "last_seen": at(last)}


def test_a_reason_seen_twice_is_shown_once_its_stretches_summed() -> None:
    rows = [
        stretch("11:00:40", "11:20:00"),
        stretch("10:00:02", "10:05:00"),
        stretch("10:01:00", "10:02:00", "another"),
    ]
    assert waits_json(rows) == [
        {
            "reason": "Pending",
            "message": QUOTA,
            "first_seen": "2026-11-20T10:00:02Z",
            "last_seen": "2026-11-20T11:20:00Z",
            "held_s": 298.0 + 1160.0,
        },
        {
            "reason": "Pending",
            "message": "another",
            "first_seen": "2026-11-20T10:01:00Z",
            "last_seen": "2026-11-20T10:02:00Z",
            "held_s": 60.0,
        },
    ]


def test_the_figures_of_a_job_kueue_never_admitted_are_null() -> None:
    assert figures_json(None) == dict.fromkeys(FIGURES)


def test_an_attempts_times_are_rfc3339_and_its_flavors_parsed() -> None:
    row: dict[str, Any] = dict.fromkeys(
        ("cluster_queue", "local_queue", "admitted_at", "running_at", "ended_at", "end_reason")
    )
    row.update(underlying_cause=None, message="m", preemptor_workload_id=None, requeues=2)
    row.update(preemptor_job_id=None, quota_reserved_at=at("10:05:00"))
    row["flavors"] = '{"worker":{"nvidia.com/gpu":"a100"}}'
    shown = attempt_json(row)
    assert shown["quota_reserved_at"] == "2026-11-20T10:05:00Z" and shown["ended_at"] is None
    assert shown["flavors"] == {"worker": {"nvidia.com/gpu": "a100"}}
    assert (shown["requeues"], shown["message"]) == (2, "m")


def attempt(reserved: str, ended: str | None, end: str | None, **more: Any) -> dict[str, Any]:
    flavors = {"master": {"cpu": "default", "nvidia.com/gpu": "a100"}}
    shown: dict[str, Any] = {"cluster_queue": "cq-a100", "flavors": flavors}
    shown.update(quota_reserved_at=f"2026-11-20T{reserved}Z", end_reason=end)
    shown["ended_at"] = None if ended is None else f"2026-11-20T{ended}Z"
    shown.update(underlying_cause=None, message=None, preemptor_job_id=None)
    return {**shown, **more}


def detail(**more: Any) -> dict[str, Any]:
    found: dict[str, Any] = {
        "attempts": [
            attempt("10:05:00", "11:00:00", "Preempted", preemptor_job_id=PREEMPTOR),
            attempt("11:20:00", "13:00:00", "Finished", underlying_cause="Succeeded"),
        ],
        "attempts_truncated": False,
        "waits": [{"reason": "Pending", "message": QUOTA + ", 2 more needed", "held_s": 1498.0}],
        "waits_truncated": False,
        "preemptions": 1,
        "preempted_gpu_hours": 3.622,
        "evicted_gpu_hours": 0.0,
        "quota_wait_s": 300.0,
        "start_wait_s": 150.0,
        "requeue_wait_s": 1200.0,
    }
    return {**found, **more}


def test_the_attempts_and_waits_are_printed_in_80_columns() -> None:
    lines = kueue_lines(detail(), NOW, 80)
    assert lines[:4] == [
        "Attempts: 2, 1 preempted (3.622 GPU-hours lost)",
        "Kueue waits: quota 5m, start 2m 30s, requeue 20m",
        "  #1 2026-11-20 10:05 cq-a100/a100 55m Preempted by job 7d3b1f9a",
        "  #2 2026-11-20 11:20 cq-a100/a100 1h 40m Finished (Succeeded)",
    ]
    assert lines[4].startswith("Waited: Pending for 24m 58s: couldn't assign flavors")
    assert lines[4].endswith("…(131 characters)")
    assert all(len(line) <= 80 for line in lines)


def test_a_running_attempt_a_cut_list_and_another_eviction_are_said() -> None:
    running = attempt("12:00:00", None, None)
    evicted = attempt("10:00:00", "10:30:00", "PodsReadyTimeout", message="\x1b[2JExceeded" * 20)
    found = detail(attempts=[evicted, running], attempts_truncated=True, waits=[])
    found.update(evicted_gpu_hours=1.5, waits_truncated=True)
    lines = kueue_lines(found, NOW, 80)
    assert lines[0] == "Attempts: 2+, 1 preempted (3.622 GPU-hours lost; 1.5 to other evictions)"
    head = "  #1 2026-11-20 10:00 cq-a100/a100 30m PodsReadyTimeout: \\x1b[2"
    assert lines[2].startswith(head) and "\x1b" not in lines[2]
    assert lines[3] == "  #2 2026-11-20 12:00 cq-a100/a100 12h running"
    cut = ["(the first 2 attempts; -o json has them whole)", "(the oldest waits only)"]
    assert lines[4:] == cut
    assert all(len(line) <= 80 for line in lines)


def test_to_a_file_or_a_pipe_every_line_is_whole() -> None:
    lines = kueue_lines(detail(), NOW, None)
    assert lines[4] == f"Waited: Pending for 24m 58s: {QUOTA}, 2 more needed"


def test_a_job_kueue_never_saw_has_no_lines() -> None:
    assert kueue_lines({"replicas": {}}, NOW, 80) == []
    assert kueue_lines(detail(attempts=[], waits=[]), NOW, 80) == []


def test_the_flavors_shown_are_the_accelerators_else_every_one() -> None:
    assert flavor_names({"a": {"cpu": "default", "nvidia.com/gpu": "h100"}}) == "h100"
    assert flavor_names({"a": {"cpu": "spot"}, "b": {"memory": "default"}}) == "default,spot"
    assert flavor_names("not JSON") == ""


def test_a_line_too_wide_is_cut_with_the_mark_that_says_how_long_it_was() -> None:
    assert fitted("short", 80) == "short"
    cut = fitted("y" * 100, 80)
    assert len(cut) == 80 and cut.endswith("…(100 characters)")
