"""Usage's arithmetic (decision 33): a window cut into UTC periods, a pod's time cut to a
window, sums over pods spread into periods exactly as cutting each pod would, nearest-rank
percentiles, and CSV that a spreadsheet cannot run."""

import datetime
import math
import random
from fractions import Fraction

import pytest

from jobarchive.reading import usage
from jobarchive.reading.params import BadQuery

UTC = datetime.UTC


def at(day: int, hour: int = 0, month: int = 11) -> datetime.datetime:
    return datetime.datetime(2026, month, day, hour, tzinfo=UTC)


def test_a_window_by_day_is_cut_at_utc_midnights_its_ends_kept() -> None:
    cut = usage.periods(at(20, 6), at(22, 12), "day")
    assert [p.label for p in cut] == ["2026-11-20", "2026-11-21", "2026-11-22"]
    assert (cut[0].start, cut[0].end) == (at(20, 6), at(21))
    assert (cut[-1].start, cut[-1].end) == (at(22), at(22, 12))


def test_weeks_begin_on_monday_and_months_on_the_first() -> None:
    weeks = usage.periods(at(20), at(3, month=12), "week")
    assert [p.label for p in weeks] == ["2026-11-16", "2026-11-23", "2026-11-30"]
    months = usage.periods(at(15, month=11), datetime.datetime(2027, 1, 2, tzinfo=UTC), "month")
    assert [p.label for p in months] == ["2026-11", "2026-12", "2027-01"]
    # A time with an offset is the same UTC moment.
    east = datetime.timezone(datetime.timedelta(hours=9))
    assert (
        usage.periods(datetime.datetime(2026, 11, 21, 3, tzinfo=east), at(22), "day")[0].label
        == "2026-11-20"
    )


def test_no_period_is_the_window_itself_and_too_many_are_refused() -> None:
    [whole] = usage.periods(at(20), at(22), None)
    assert (whole.start, whole.end, whole.label) == (at(20), at(22), "2026-11-20T00:00:00Z")
    with pytest.raises(ValueError, match="periods"):
        usage.periods(at(1, month=1).replace(year=2000), at(1), "day")


def test_a_window_past_what_a_column_holds_is_cut_to_the_calendars_ends() -> None:
    # Beyond them, no bound: so no period's end and no whole day passes year 9999.
    start, end = usage.window(at(1).replace(year=1), at(1).replace(year=9999, month=12, day=31))
    assert (start, end) == (usage.FIRST, usage.LAST)
    for every in ("day", "week", "month"):
        assert usage.periods(usage.LAST - datetime.timedelta(days=40), end, every)[-1].end == end
    with pytest.raises(BadQuery, match=r"outside 1000-01-02 \.\. 9999-12-01"):
        usage.window(at(30, month=12).replace(year=9999), None)
    with pytest.raises(BadQuery, match="before now"):
        usage.window(datetime.datetime.now(UTC) + datetime.timedelta(days=1), None)


def test_an_answer_of_more_rows_than_the_bound_is_refused_before_it_is_built() -> None:
    # Per group, the periods its jobs' lives span, overlaps counted once.
    one = [{"grp": "alice", "n0": 0, "n1": 9}, {"grp": "alice", "n0": 5, "n1": 19}]
    usage.check_rows("owner", one, 30)
    groups = usage.MAX_ROWS // 30 + 1
    many = [{"grp": f"owner-{n}", "n0": -3, "n1": 99} for n in range(groups)]
    with pytest.raises(BadQuery, match=f"{groups:,} of owner over 30 periods would be"):
        usage.check_rows("owner", many, 30)
    usage.check_rows("owner", many[:-1], 30)


def test_a_pods_time_is_cut_at_the_windows_edges() -> None:
    # Across midnight: 22:00 to 02:00 counts two hours in each day.
    assert usage.overlap(at(20, 22), at(21, 2), at(20), at(21)) == 7200
    assert usage.overlap(at(20, 22), at(21, 2), at(21), at(22)) == 7200
    assert usage.overlap(at(19), at(23), at(20), at(21)) == 86400
    assert usage.overlap(at(18), at(19), at(20), at(21)) == 0
    # A pod that never started costs nothing.
    assert usage.overlap(None, at(21), at(20), at(21)) == 0


def test_sums_spread_into_periods_as_each_pod_cut_alone() -> None:
    rng = random.Random(3)
    since, cut = at(1), usage.periods(at(1), at(15), "day")
    bounds = [((p.start - since).total_seconds(), (p.end - since).total_seconds()) for p in cut]
    pods = []
    for _ in range(200):
        a = rng.uniform(0, 14 * 86400)
        pods.append((a, min(a + rng.uniform(0, 4 * 86400), 14 * 86400), rng.choice((1, 2, 8))))
    expected: dict[int, float] = {}
    groups: dict[tuple[int, int], dict[str, float]] = {}
    for a, b, g in pods:
        for n, (s, e) in enumerate(bounds):
            expected[n] = expected.get(n, 0.0) + g * max(0.0, min(b, e) - max(a, s))
        key = (int(a // 86400), int(b // 86400))
        sums = groups.setdefault(key, {"g": 0.0, "ga": 0.0, "gb": 0.0, "c": 0, "ca": 0, "cb": 0})
        sums["g"] += g
        sums["ga"] += g * a
        sums["gb"] += g * b
    spread: dict[int, float] = {}
    for (n0, n1), sums in groups.items():
        for n, gpu_s, _ in usage.spread({"n0": n0, "n1": n1, **sums}, bounds):
            spread[n] = spread.get(n, 0.0) + gpu_s
    for n in expected:
        assert spread.get(n, 0.0) == pytest.approx(expected[n], abs=1e-3)


@pytest.mark.parametrize("count", [1, 2, 3, 19, 20, 21, 60, 99, 100, 101, 10**6 + 7])
@pytest.mark.parametrize("percent", usage.WAIT_PERCENTS)
def test_percentiles_are_nearest_ranks_in_integers(count: int, percent: int) -> None:
    k = usage.rank(count, percent)
    # The least rank holding at least ``percent`` of the values, as the SQL's test.
    assert 100 * (k - 1) < percent * count <= 100 * k
    assert usage.rank(count, percent) == max(1, math.ceil(Fraction(percent * count, 100)))


def test_a_wait_fills_each_percentile_its_rank_is() -> None:
    row = usage.empty_row()
    usage.add_wait(row, 1, 1, 30.04)
    assert row["waits"] == {50: 30.0, 95: 30.0}
    row = usage.empty_row()
    usage.add_wait(row, 10, 20, 300)
    usage.add_wait(row, 19, 20, 600)
    assert row["waits"] == {50: 300.0, 95: 600.0}


def test_groups_and_windows_are_checked_before_any_query() -> None:
    assert usage.group_of(None) == "namespace"
    assert usage.group_of("QUEUE") == "queue"
    assert usage.group_of("cluster") == "cluster"
    with pytest.raises(BadQuery, match="not one of"):
        usage.group_of("pod")
    with pytest.raises(BadQuery, match="before"):
        usage.window(at(22), at(20))
    start, end = usage.window(None, at(22))
    assert end - start == datetime.timedelta(days=usage.DEFAULT_DAYS)


def test_csv_quotes_what_a_spreadsheet_would_run() -> None:
    row = {
        "owner": '=HYPERLINK("http://x")',
        **dict.fromkeys(usage.COUNTS, 1),
        **dict.fromkeys(usage.FIGURES, None),
        "top_failure_reasons": [{"reason": "@SUM(A1)", "gpu_hours": 2.5, "jobs": 1}],
    }
    text = usage.to_csv([row], usage.columns("owner", None))
    header, line = text.splitlines()
    assert header.startswith('"owner","jobs","succeeded","failed","gpu_hours"')
    assert line.startswith('"\'=HYPERLINK(""http://x"")",1,1,1,,,,,,')
    # The efficiency's columns come last: unknown here, so empty.
    assert line.endswith('"\'@SUM(A1)=2.5"' + "," * len(usage.EFFICIENCY))


def test_a_failed_jobs_hours_go_to_its_class_or_unclassified() -> None:
    row = usage.empty_row()
    usage.add_hours(row, "j1", 7200.0, 0.0, {"j1": "OOMKilled"})
    usage.add_hours(row, "j2", 3600.0, 0.0, {})
    usage.add_hours(row, "j3", 3600.0, 0.0, {})
    usage.add_days(row, "OOMKilled", 3600.0, 0.0, 2)
    usage.add_hours(row, "", 3600.0, 0.0, {})
    found = usage.finished_row("queue", "research", None, row)
    assert (found["gpu_hours"], found["failed_gpu_hours"]) == (6.0, 5.0)
    assert found["top_failure_reasons"] == [
        {"reason": "OOMKilled", "gpu_hours": 3.0, "jobs": 3},
        {"reason": usage.UNCLASSIFIED, "gpu_hours": 2.0, "jobs": 2},
    ]
    # By failure class, the row is the class: no column of classes.
    by_class = usage.finished_row(usage.FAILURE, "OOMKilled", "2026-11-20", row)
    assert list(by_class) == list(usage.columns(usage.FAILURE, "day"))
    assert usage.REASONS not in usage.columns(usage.FAILURE, None)
    assert usage.group_of("failure") == usage.FAILURE
