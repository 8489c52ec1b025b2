"""The console's drawings as pure geometry: a job's timeline (bars per pod, groups for a
large role, Event marks, the axis) and the statistics' charts."""

import datetime

import pytest

from jobarchive.core.times import duration
from jobarchive.reading.console import axis, charts, formats, gantt

T0 = datetime.datetime(2026, 11, 20, 10, 0, tzinfo=datetime.UTC)


def minutes(n: float) -> datetime.datetime:
    return T0 + datetime.timedelta(minutes=n)


def row(
    name: str,
    status: str,
    created: float,
    started: float | None,
    ended: float | None,
    remark: str | None = None,
    role: str = "worker",
    in_cluster: bool = True,
) -> dict:
    return {
        "name": name,
        "replica_type": role,
        "status": status,
        "is_in_etcd": in_cluster,
        "remark": remark,
        "gmt_created": minutes(created),
        "gmt_started": None if started is None else minutes(started),
        "gmt_finished": None if ended is None else minutes(ended),
        "restarts": 0,
        "gmt_restarted": None,
    }


def event(reason: str, at: float, type: str = "Normal") -> dict:
    return {
        "type": type,
        "reason": reason,
        "message": "m",
        "kind": "Pod",
        "obj_name": "p",
        "count": 1,
        "first_timestamp": minutes(at),
        "last_timestamp": minutes(at),
    }


def test_each_pod_of_a_small_job_has_its_bar_from_creation_through_start_to_finish() -> None:
    rows = [
        row("w-0", "Succeeded", 0, 1, 30),
        row("w-1", "Failed", 0, 2, 20, "OOMKilled (exit code 137): Memory cgroup out of memory"),
        row("ps-0", "Running", 0, 1, None, role="ps"),
        row("w-2", "Pending", 25, None, None),
    ]
    pods = gantt.pods_of(rows, minutes(40))
    assert [pod.outcome for pod in pods] == ["succeeded", "failed", "running", "pending"]
    drawing = gantt.layout(pods, [event("OOMKilling", 20, "Warning")], T0, minutes(40))
    assert [heading.role for heading in drawing.headings] == ["ps", "worker"]
    assert [bar.label for bar in drawing.bars] == ["ps-0", "w-0", "w-1", "w-2"]
    failed = drawing.bars[2]
    assert failed.reason == "OOMKilled (exit code 137)" and failed.outcome == "failed"
    assert failed.x_started is not None
    assert drawing.left <= failed.x < failed.x_started < failed.x_end <= drawing.right
    assert drawing.bars[3].x_started is None  # never started: waiting only
    running = drawing.bars[0]
    scale = axis.Scale(drawing.start, drawing.end, drawing.left, drawing.right)
    assert running.x_end == scale.x(minutes(40))  # still running: until now
    assert [mark.warning for mark in drawing.marks] == [True]
    assert drawing.bars[1].y < drawing.bars[2].y  # one row each, in order
    assert drawing.height > drawing.bars[-1].y


def test_a_role_of_two_thousand_pods_is_drawn_in_bounded_rows_that_count_every_pod() -> None:
    rows = []
    for index in range(2000):
        wave = index % 10
        if index % 40 == 7:
            rows.append(
                row(
                    f"w-{index}",
                    "Failed",
                    wave,
                    wave + 1,
                    30 + wave,
                    "OOMKilled (exit code 137): out of memory",
                )
            )
        elif index % 97 == 3:
            rows.append(
                row(f"w-{index}", "Failed", wave, wave + 1, 31, f"Error (exit code {index})")
            )
        else:
            rows.append(row(f"w-{index}", "Succeeded", wave, wave + 1, 60 + index % 50))
    rows.append(row("launcher", "Succeeded", 0, 1, 70, role="launcher"))
    pods = gantt.pods_of(rows, minutes(80))
    drawing = gantt.layout(pods, [], T0, minutes(80))
    workers = [bar for bar in drawing.bars if bar.y > drawing.headings[1].y]
    assert len(workers) <= gantt.BARS_PER_ROLE
    assert sum(bar.pods for bar in workers) == 2000
    assert drawing.grouped_roles == ["worker"] and drawing.headings[1].grouped
    assert any(bar.reason == "OOMKilled (exit code 137)" and bar.pods > 1 for bar in workers)
    assert drawing.bars[0].pods == 1 and drawing.bars[0].label == "launcher"


def test_marks_close_together_of_one_reason_are_one_mark_with_their_count() -> None:
    events = [event("BackOff", 10, "Warning") for _ in range(30)] + [event("Pulled", 10)]
    events.append(event("BackOff", 50, "Warning"))
    drawing = gantt.layout([], events, T0, minutes(60))
    assert sorted((mark.warning, mark.count) for mark in drawing.marks) == [
        (False, 1),
        (True, 1),
        (True, 30),
    ]
    assert drawing.marks[-1].warning  # Warnings drawn last, on top


def test_the_axis_has_round_ticks_in_utc() -> None:
    assert axis.nice_step(30 * 60) == 300
    assert axis.nice_step(10) == 2
    assert axis.nice_step(40 * 86400) == 604800
    start, end = axis.axis([T0, minutes(60), None])
    assert start < T0 and end > minutes(60)
    scale = axis.Scale(start, end, 100, 1100)
    ticks = axis.ticks(start, end, scale)
    assert [tick.label for tick in ticks][:2] == ["10:00", "10:10"]
    assert all(100 <= tick.x <= 1100 for tick in ticks)
    assert scale.x(minutes(-1000)) == 100 and scale.x(minutes(1000)) == 1100


def test_the_charts_stack_days_by_status_and_scale_bars_to_the_largest() -> None:
    midnight = T0.replace(hour=0)
    days = charts.days_between(midnight, midnight + datetime.timedelta(days=3))
    assert days == ["2026-11-20", "2026-11-21", "2026-11-22"]
    rows = [
        {"day": "2026-11-20", "status": "Succeeded", "jobs": 3},
        {"day": "2026-11-20", "status": "Failed", "jobs": 1},
        {"day": "2026-11-22", "status": "Running", "jobs": 2},
        {"day": "2027-01-01", "status": "Failed", "jobs": 9},  # outside: ignored
    ]
    chart = charts.day_chart(rows, days)
    assert chart.total == 6 and chart.statuses == ["Succeeded", "Failed", "Running"]
    succeeded, failed = chart.segments[0], chart.segments[1]
    assert failed.y + failed.height == succeeded.y  # stacked
    assert succeeded.height == pytest.approx(3 * failed.height)
    # At most 4 a day: the scale is 5, and its half (2.5 jobs) is not labelled.
    assert [label.text for label in chart.y_labels] == ["0", "5"]
    bars = charts.bar_chart([("a", 10, "10", None), ("b", 5, "5", 20.0)])
    assert bars.bars[0].width == 2 * bars.bars[1].width
    assert bars.bars[1].whisker_x is not None and bars.bars[1].whisker_x > bars.left
    assert charts.nice_ceiling(7) == 10 and charts.nice_ceiling(0) == 1
    # A window of no job, or of one a day: the scale is 1, and nothing breaks.
    for few in ([], [{"day": "2026-11-20", "status": "Failed", "jobs": 1}]):
        quiet = charts.day_chart(few, days)
        assert [label.text for label in quiet.y_labels] == ["0", "1"]
    assert charts.counted(1, "pod") == "1 pod" and charts.counted(3, "job") == "3 jobs"


def test_durations_and_times_are_written_short_and_in_utc() -> None:
    assert duration(None) == "-"
    assert duration(45) == "45s"
    assert duration(3 * 3600 + 23 * 60 + 5) == "3h 23m"
    assert duration(2 * 86400 + 3600) == "2d 1h"
    # The unit after the largest, never one further down past a zero.
    assert duration(13 * 86400 + 39) == "13d"
    assert duration(3600 + 5) == "1h"
    assert duration(3600 + 60 + 5) == "1h 1m"
    assert duration(0.4) == "0s"
    assert formats.utc("2026-11-20T10:00:00Z") == "2026-11-20 10:00:00 UTC"
    assert formats.iso(minutes(1)) == "2026-11-20T10:01:00Z"
    assert formats.utc(None) == "-" and formats.iso(None) == ""


def test_numbers_are_written_with_separators_and_a_cluster_uid_shortened() -> None:
    assert formats.number(5.0) == "5" and formats.number(1234567) == "1,234,567"
    assert formats.number(12345.6) == "12,346" and formats.number(123.45) == "123.5"
    assert formats.number(2.5) == "2.5" and formats.number(0.5333) == "0.533"
    assert formats.number(None) == "-"
    uid = "1f0c3a9e-7b2d-4c1e-9f3a-5d6e7f8a9b0c"
    assert formats.cluster(uid) == "1f0c3a9e" and formats.cluster("west") == "west"
    assert formats.cluster(None) == "-"


def test_a_restarted_pods_bar_is_marked_where_its_container_last_ended() -> None:
    restarted = {**row("w-1", "Running", 0, 1, None), "restarts": 2}
    restarted["gmt_restarted"] = minutes(20)
    pods = gantt.pods_of([row("w-0", "Running", 0, 1, None), restarted], minutes(40))
    drawing = gantt.layout(pods, [], minutes(0), minutes(40))
    quiet, marked = drawing.bars
    assert (quiet.restarts, quiet.x_restarted) == (0, None)
    scale = axis.Scale(drawing.start, drawing.end, drawing.left, drawing.right)
    assert (marked.restarts, marked.x_restarted) == (2, scale.x(minutes(20)))
    assert "restarted 2 times, the last at 2026-11-20 10:20:00" in marked.title
    many = [{**restarted, "name": f"w-{n}"} for n in range(50)]
    grouped = gantt.layout(gantt.pods_of(many, minutes(40)), [], minutes(0), minutes(40))
    assert all(bar.x_restarted is None for bar in grouped.bars)
    assert sum(bar.restarts for bar in grouped.bars) == 100


def attempt(reserved: float, ended: float | None, end: str | None) -> dict:
    def moment(n: float | None) -> str | None:
        return None if n is None else minutes(n).strftime("%Y-%m-%dT%H:%M:%SZ")

    return {
        "quota_reserved_at": moment(reserved),
        "ended_at": moment(ended),
        "end_reason": end,
        "cluster_queue": "cq-a100",
        "message": "Preempted to accommodate a workload" if end == "Preempted" else None,
    }


def test_kueues_attempts_are_bands_in_a_lane_of_their_own_a_preemption_marked() -> None:
    pods = gantt.pods_of([row("w-0", "Succeeded", 0, 5, 40)], minutes(40))
    attempts = [attempt(2, 20, "Preempted"), attempt(25, None, None)]
    drawing = gantt.layout(pods, [], T0, minutes(40), attempts=attempts)
    plain = gantt.layout(pods, [], T0, minutes(40))
    assert plain.band_y is None and plain.bands == [] and plain.preemptions == []
    # The lane sits between the Events' and the pods', which move down by its height.
    assert drawing.band_y == gantt.AXIS + gantt.LANE
    assert drawing.rows_y == plain.rows_y + 26
    first, second = drawing.bands
    assert (first.number, first.ended, second.ended) == (1, "Preempted", None)
    assert first.x < first.x_end < second.x and second.x_end == drawing.right
    [mark] = drawing.preemptions
    assert mark.x == first.x_end
    assert mark.title == (
        "Attempt 1 in cq-a100: reserved 2026-11-20 10:02:00, ended 2026-11-20 10:20:00 UTC, "
        "Preempted: Preempted to accommodate a workload"
    )
    assert second.title == "Attempt 2 in cq-a100: reserved 2026-11-20 10:25:00, holding still"
