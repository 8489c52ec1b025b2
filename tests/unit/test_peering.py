"""Kopf's peering rule, as the reconciliation reads it: who is alive, who outranks whom."""

import datetime

from jobarchive.maintenance.peering import outranked

NOW = datetime.datetime(2026, 11, 29, 12, 0, tzinfo=datetime.UTC)


def peer(priority: object, seconds_ago: int, lifetime: object = 60) -> dict[str, object]:
    lastseen = (NOW - datetime.timedelta(seconds=seconds_ago)).isoformat()
    return {"priority": priority, "lifetime": lifetime, "lastseen": lastseen}


def test_a_live_peer_of_higher_priority_outranks() -> None:
    status = {"me": peer(100, 1), "other": peer(200, 30)}
    assert outranked(status, 100, NOW)
    assert not outranked(status, 200, NOW)


def test_a_peer_past_its_lifetime_is_dead_and_outranks_nobody() -> None:
    assert not outranked({"other": peer(200, 61)}, 100, NOW)
    assert not outranked({"other": peer(200, 5, lifetime=4)}, 100, NOW)
    assert outranked({"other": peer(200, 3, lifetime=4)}, 100, NOW)


def test_equal_priority_does_not_outrank() -> None:
    assert not outranked({"me": peer(100, 1), "twin": peer(100, 1)}, 100, NOW)


def test_malformed_entries_count_as_nobody_and_a_missing_lifetime_is_kopfs_60_s() -> None:
    status: dict[str, object] = {
        "removed": None,
        "junk": "text",
        "no-time": {"priority": 500},
        "bad-time": {"priority": 500, "lastseen": "yesterday"},
        "bad-priority": peer("high", 1),
    }
    assert not outranked(status, 1, NOW)
    no_lifetime = {"priority": 200, "lastseen": (NOW - datetime.timedelta(seconds=59)).isoformat()}
    assert outranked({"old-kopf": no_lifetime}, 100, NOW)
