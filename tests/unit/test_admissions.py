"""A Workload's successive versions, as Kueue v0.19 writes them, accumulated into its
job's attempts and waits: what one version no longer says, the ones before did."""

import datetime
from collections.abc import Mapping
from typing import Any

from jobarchive.recording.admissions import Remembered, attempt_rows, wait_rows
from jobarchive.recording.convert import workloads as wl
from testbed import objects as o

NOW = datetime.datetime(2026, 11, 21, tzinfo=datetime.UTC)
LIFE = ["pending", "admitted", "running", "preempted", "requeued", "readmitted", "finished"]


def at(clock: str) -> datetime.datetime:
    hour, minute, second = map(int, clock.split(":"))
    return datetime.datetime(2026, 11, 20, hour, minute, second, tzinfo=datetime.UTC)


def replay(names: list[str], remembered: Remembered | None = None) -> dict[str, dict[str, Any]]:
    """The rows each key is left with, the last written winning as the store's guard
    lets the newest version win (and keeps the earliest first_seen)."""
    remembered = remembered if remembered is not None else Remembered()
    rows: dict[str, dict[str, Any]] = {}
    for name in names:
        observed = wl.observe(o.fixture(f"kueue/{name}.yaml"), NOW)
        written: list[Mapping[str, Any]] = [*attempt_rows(observed, remembered)]
        written += wait_rows(observed, remembered)
        for row in written:
            key = str(row.get("attempt_id") or row.get("wait_id"))
            first = rows.get(key, {}).get("first_seen")
            rows[key] = dict(row)
            if first is not None:
                rows[key]["first_seen"] = min(first, row["first_seen"])
    return rows


def test_a_preempted_then_readmitted_job_has_two_attempts_and_its_waits() -> None:
    rows = replay(LIFE)
    attempts = sorted(
        (row for row in rows.values() if "attempt_id" in row),
        key=lambda row: row["quota_reserved_at"],
    )
    assert [
        (a["quota_reserved_at"], a["running_at"], a["ended_at"], a["end_reason"]) for a in attempts
    ] == [
        (at("10:05:00"), at("10:06:30"), at("11:00:00"), "Preempted"),
        (at("11:20:00"), at("11:21:00"), at("13:00:00"), "Finished"),
    ]
    waits = sorted(
        (row for row in rows.values() if "wait_id" in row), key=lambda row: row["first_seen"]
    )
    # Waiting for quota from its first pending version until the reservation; waiting
    # again from the quota's release until the next reservation.
    assert [(w["reason"], w["first_seen"], w["last_seen"]) for w in waits] == [
        ("Pending", at("10:00:02"), at("10:05:00")),
        ("Pending", at("11:00:40"), at("11:20:00")),
    ]


def test_an_eviction_seen_only_once_the_quota_was_released_still_ends_its_attempt() -> None:
    rows = replay(["pending", "running", "requeued", "readmitted"])
    first = rows[
        f"{wl.attempt_key(o.fixture('kueue/running.yaml')['metadata']['uid'], at('10:05:00'))}"
    ]
    assert (first["ended_at"], first["end_reason"]) == (at("11:00:00"), "Preempted")
    assert first["preemptor_job_id"] == "7d3b1f9a-0000-4000-8000-00000000cafe"


def test_an_eviction_never_seen_is_told_by_the_next_reservation_and_the_counts() -> None:
    rows = replay(["running", "readmitted"])
    uid = o.fixture("kueue/running.yaml")["metadata"]["uid"]
    first = rows[wl.attempt_key(uid, at("10:05:00"))]
    assert (first["ended_at"], first["end_reason"]) == (None, "Preempted")
    assert first["message"] is not None and first["message"].startswith("Preempted to")
    assert first["version"] == "88180"


def test_after_a_restart_the_stored_attempt_is_what_is_remembered() -> None:
    stored = wl.observe(o.fixture("kueue/running.yaml"), NOW).attempt
    rows = replay(["requeued"], Remembered(stored))
    [closed] = [row for row in rows.values() if "attempt_id" in row]
    assert (closed["end_reason"], closed["version"]) == ("Preempted", "88170")
