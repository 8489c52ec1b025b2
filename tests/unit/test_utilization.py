"""Usage by cluster queue's arithmetic (decision 44), by hand: a quota integrated across
a change mid-period, GPUs held beyond it, percentiles of waits."""

from jobarchive.reading import usage, utilization

HOUR = 3600.0
# Two periods of 24 hours.
DAYS = [(0.0, 24 * HOUR), (24 * HOUR, 48 * HOUR)]


def test_a_quota_is_integrated_across_a_change_mid_period() -> None:
    # 8 GPUs until noon of the first day, 4 after, to the window's end.
    granted = [(0.0, 12 * HOUR, 8.0), (12 * HOUR, 48 * HOUR, 4.0)]
    hours = [seconds / HOUR for seconds in utilization.per_period(granted, DAYS)]
    assert hours == [8 * 12 + 4 * 12, 4 * 24]


def test_gpus_held_beyond_the_quota_in_force_are_borrowed_moment_by_moment() -> None:
    granted = [(0.0, 12 * HOUR, 8.0), (12 * HOUR, 48 * HOUR, 4.0)]
    # 6 GPUs 10:00-16:00: within 8 until noon, 2 beyond 4 for 4 hours; another 3 GPUs
    # across midnight 23:00-01:00: 5 beyond for an hour each day, then nothing.
    held = [(10 * HOUR, 16 * HOUR, 6.0), (23 * HOUR, 25 * HOUR, 3.0), (23 * HOUR, 25 * HOUR, 6.0)]
    borrowed = utilization.borrowed(held, granted, DAYS)
    assert [seconds / HOUR for seconds in borrowed] == [2 * 4 + 5 * 1, 5 * 1]


def test_nothing_is_borrowed_while_no_quota_is_recorded() -> None:
    held = [(0.0, 48 * HOUR, 2.0)]
    granted = [(24 * HOUR, 36 * HOUR, 1.0)]
    assert [s / HOUR for s in utilization.borrowed(held, granted, DAYS)] == [0.0, 12.0]


def test_a_row_without_a_quota_has_no_utilization_nor_borrowing() -> None:
    figures = {"allocated": 2 * HOUR, "quota": None, "borrowed": 0.0, "preempted": HOUR}
    waits = utilization.percentiles({"queue_wait": [600.0, 60.0, 6.0], "start_wait": []})
    row = utilization.queue_row("gpu-b", None, figures, waits)
    assert list(row) == list(usage.columns("clusterqueue", None))
    assert (row["allocated_gpu_hours"], row["quota_gpu_hours"], row["utilization"]) == (
        2.0,
        None,
        None,
    )
    assert (row["borrowed_gpu_hours"], row["preempted_gpu_hours"]) == (None, 1.0)
    # Nearest rank: the 2nd of 3 at p50, the 3rd at p95.
    assert (row["queue_wait_p50_s"], row["queue_wait_p95_s"], row["quota_wait_p50_s"]) == (
        60.0,
        600.0,
        None,
    )


def test_utilization_is_allocated_over_quota() -> None:
    figures = {"allocated": 46 * HOUR, "quota": 144 * HOUR, "borrowed": 8 * HOUR, "preempted": 0.0}
    row = utilization.queue_row("gpu-a", "2026-11-20", figures, {})
    assert (row["period"], row["utilization"], row["borrowed_gpu_hours"]) == (
        "2026-11-20",
        0.3194,
        8.0,
    )
