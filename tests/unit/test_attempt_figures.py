"""A job's figures from its Kueue attempts, and the GPU-hours evictions cost it, computed
by hand (decision 43)."""

import datetime
from typing import Any

from jobarchive.core.attempts import Figures, Lost, figures, lost

CREATED = datetime.datetime(2026, 11, 20, 10, 0, 0, tzinfo=datetime.UTC)


def at(clock: str) -> datetime.datetime:
    hour, minute, second = map(int, clock.split(":"))
    return CREATED.replace(hour=hour, minute=minute, second=second)


def attempt(
    reserved: str, running: str | None, ended: str | None, end: str | None, admitted: str = ""
) -> dict[str, Any]:
    return {
        "quota_reserved_at": at(reserved),
        "admitted_at": at(admitted or reserved),
        "running_at": at(running) if running else None,
        "ended_at": at(ended) if ended else None,
        "end_reason": end,
    }


def pod(gpus: int | None, started: str | None, finished: str | None) -> dict[str, Any]:
    return {
        "gpus": gpus,
        "gmt_started": at(started) if started else None,
        "gmt_finished": at(finished) if finished else None,
    }


PREEMPTED_THEN_FINISHED = [
    attempt("11:20:00", "11:21:00", "13:00:00", "Finished"),
    attempt("10:05:00", "10:06:30", "11:00:00", "Preempted"),
]


def test_preempted_then_readmitted() -> None:
    # Quota 10:00 -> 10:05; running 90 s and 60 s after each admission; requeued
    # 11:00 -> 11:20.
    assert figures(CREATED, PREEMPTED_THEN_FINISHED) == Figures(2, 1, 300.0, 150.0, 1200.0)


def test_no_attempt_no_figures_and_one_attempt_no_requeue() -> None:
    assert figures(CREATED, []) == Figures(0, 0, None, None, None)
    one = [attempt("10:05:00", None, None, None, admitted="10:05:10")]
    assert figures(CREATED, one) == Figures(1, 0, 300.0, None, 0.0)


def test_an_end_missed_leaves_its_gap_out_of_the_requeue_wait() -> None:
    rows = [attempt("10:05:00", None, None, "Preempted"), attempt("11:20:00", None, None, None)]
    assert figures(CREATED, rows).requeue_wait_s == 0.0


def test_each_pod_costs_its_attempt_its_whole_run() -> None:
    rows = [*PREEMPTED_THEN_FINISHED, attempt("14:00:00", None, "14:30:00", "PodsReadyTimeout")]
    pods = [
        # The first attempt's four one-GPU pods, stopped 20 s after the eviction.
        *(pod(1, "10:06:00", "11:00:20") for _ in range(4)),
        # The second's: finished, not lost.
        *(pod(1, "11:20:30", "13:00:00") for _ in range(4)),
        # The third's: two GPUs, never ready, stopped with the timeout.
        pod(2, "14:00:10", "14:30:00"),
        # Before any attempt, and never started: in none.
        pod(8, "09:00:00", "09:30:00"),
        pod(8, None, None),
    ]
    spent = lost(rows, pods, at("15:00:00"))
    assert spent == Lost(preempted=4 * 3260.0, evicted=2 * 1790.0)


def test_a_pod_still_running_counts_to_now() -> None:
    rows = [attempt("10:05:00", "10:06:00", "11:00:00", "Preempted")]
    assert lost(rows, [pod(None, "10:06:00", None), pod(2, "10:06:00", None)], at("11:00:00")) == (
        Lost(preempted=2 * 3240.0)
    )
