"""Usage's efficiency arithmetic (decision 47), without a database, against figures
computed by hand: a pod's weights cut at midnight by the daily roll-up and at the
periods' edges by the live sums, a group mixing measured and unknown pods, and a group
of one job equal to the job's own figures."""

import datetime
import json
from typing import Any

from jobarchive.core.efficiency import (
    MEASURED,
    NO_DATA,
    RATES,
    Allocated,
    PodEfficiency,
    figures,
    weigh,
)
from jobarchive.reading import usage
from jobarchive.storage import daily

GIB = 2**30
DAY = 86400.0


def at(day: int, hour: int) -> datetime.datetime:
    return datetime.datetime(2026, 11, day, hour, tzinfo=datetime.UTC)


def stored(uid: str, start: datetime.datetime, end: datetime.datetime, **fields: Any) -> Any:
    """A pod as the daily roll-up's rewrite reads it, its summary's columns beside."""
    pod: dict[str, Any] = {
        "pod_id": uid,
        "job_id": "j",
        "gpus": 2,
        "cpu_millis": 4000,
        "memory_bytes": GIB,
        "resources": None,
        "gmt_started": start,
        "gmt_finished": end,
        "outcome": None,
        "gpu_activity_mean": None,
        "unused_gpus": None,
        "energy_joules": None,
        "cpu_efficiency": None,
        "memory_peak_ratio": None,
    }
    return {**pod, **fields}


MEASURED_POD = {
    "outcome": MEASURED,
    "gpu_activity_mean": 0.25,
    "unused_gpus": 1,
    "energy_joules": 8000.0,
    "cpu_efficiency": 0.5,
    "memory_peak_ratio": 0.5,
    # The limit, 4 GiB, weighs the memory peak, not the 1 GiB request.
    "resources": json.dumps({"limits": {"memory": "4Gi"}}),
}


def test_a_pod_across_midnight_weighs_in_each_day_by_its_seconds_there() -> None:
    # 18:00 to 02:00: 6 h on the 20th, 2 h on the 21st.
    days = daily.days_of([stored("p", at(20, 18), at(21, 2), **MEASURED_POD)])
    first, second = days[("j", at(20, 0))], days[("j", at(21, 0))]
    six, two = 6 * 3600.0, 2 * 3600.0
    assert first == {
        "gpu_seconds": 2 * six,
        "cpu_milli_seconds": 4000 * six,
        "measured_gpu_s": 2 * six,
        "active_gpu_s": 2 * six * 0.25,
        "unused_gpu_s": 1 * six,
        "energy_j": 6000.0,
        "measured_cpu_ms": 4000 * six,
        "used_cpu_ms": 4000 * six * 0.5,
        "measured_mem_bs": 4 * GIB * six,
        "peak_mem_bs": 4 * GIB * six * 0.5,
    }
    assert second["energy_j"] == 2000.0 and second["unused_gpu_s"] == two
    # Each day's figures: the pod's own, whatever its share.
    for day in (first, second):
        assert figures(day)["gpu_activity_mean"] == 0.25
    assert figures(first)["idle_gpu_hours"] == 2 * 6 * 0.75


def test_an_unsummarised_or_unmeasured_pod_weighs_nothing_never_zero() -> None:
    days = daily.days_of(
        [
            stored("p", at(20, 10), at(20, 12)),
            stored("q", at(20, 10), at(20, 12), outcome=NO_DATA),
        ]
    )
    day = days[("j", at(20, 0))]
    assert day["gpu_seconds"] == 2 * 2 * 2 * 3600.0
    assert all(day[name] is None for name in RATES)
    assert set(figures(day).values()) == {None}


def test_live_sums_are_cut_into_periods_as_each_pod_would_be() -> None:
    # Two pods from the window's start (0) cut into days: one of 2 GPUs from 20 h to
    # 28 h (8 h), one of 1 GPU from 30 h to 80 h. Their measured GPUs' weights: 2 and 1.
    bounds = [(0.0, DAY), (DAY, 2 * DAY), (2 * DAY, 3 * DAY), (3 * DAY, 4 * DAY)]
    h = 3600.0
    first = {"n0": 0, "n1": 1, "measured_gpu_s": 2, "measured_gpu_sa": 2 * 20 * h}
    first["measured_gpu_sb"] = 2 * 28 * h
    second = {"n0": 1, "n1": 3, "measured_gpu_s": 1, "measured_gpu_sa": 30 * h}
    second["measured_gpu_sb"] = 80 * h
    assert usage.cut(first, bounds, "measured_gpu_s") == [(0, 2 * 4 * h), (1, 2 * 4 * h)]
    assert usage.cut(second, bounds, "measured_gpu_s") == [(1, 18 * h), (2, 24 * h), (3, 8 * h)]
    # None measured: nothing cut, not zero.
    assert usage.cut({**first, "measured_gpu_s": None}, bounds, "measured_gpu_s") == []


def test_a_group_mixing_measured_and_unknown_jobs() -> None:
    row = usage.empty_row()
    # Job 1: 4 GPUs for 1 h at 0.5 activity, 2 never used, 2 CPUs at 0.75.
    usage.add_rates(
        row,
        {
            "measured_gpu_s": 4 * 3600,
            "active_gpu_s": 4 * 3600 * 0.5,
            "unused_gpu_s": 2 * 3600,
            "measured_cpu_ms": 2000 * 3600,
            "used_cpu_ms": 2000 * 3600 * 0.75,
        },
    )
    # Job 2: 4 GPUs for 3 h, measured, always busy, no CPU figure.
    usage.add_rates(row, {"measured_gpu_s": 4 * 3 * 3600, "active_gpu_s": 4 * 3 * 3600})
    # Jobs 3 and 4: no pod measured, so no weight: counted as unknown.
    usage.add_rates(row, {})
    row[usage.UNKNOWN_JOBS] += 2
    assert usage.efficiency_figures(row) == {
        "gpu_activity_mean": (4 * 0.5 + 12 * 1.0) / 16,
        "idle_gpu_hours": 2.0,
        "unused_gpu_hours": 2.0,
        "cpu_efficiency": 0.75,
        "mem_peak_ratio": None,
        "energy_kwh": None,
        "efficiency_unknown_jobs": 2,
    }


def test_a_group_of_one_job_has_the_jobs_own_figures() -> None:
    pods = [
        stored("p", at(20, 18), at(21, 2), **MEASURED_POD),
        stored("q", at(21, 0), at(21, 5), **{**MEASURED_POD, "gpu_activity_mean": 0.9}),
        stored("r", at(20, 20), at(20, 21)),
    ]
    days = daily.days_of(pods)
    row = usage.empty_row()
    for day in days.values():
        usage.add_rates(row, day)
    given = [
        Allocated(
            run_seconds=(pod["gmt_finished"] - pod["gmt_started"]).total_seconds(),
            gpus=pod["gpus"],
            cpu_millis=pod["cpu_millis"],
            memory_bytes=4 * GIB if pod["resources"] else GIB,
        )
        for pod in pods
    ]
    found = [
        PodEfficiency(
            MEASURED,
            gpu_activity_mean=pod["gpu_activity_mean"],
            unused_gpus=1,
            energy_joules=8000.0,
            cpu_efficiency=0.5,
            memory_peak_ratio=0.5,
        )
        if pod["outcome"]
        else None
        for pod in pods
    ]
    job = weigh(list(zip(given, found, strict=True)))
    group = figures(row["rates"])
    for name, value in group.items():
        assert value is not None and abs(value - getattr(job, name)) < 1e-9, name
