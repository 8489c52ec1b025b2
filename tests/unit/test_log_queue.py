"""The fair queue of failures waiting for their read, and the intake that fills it:
namespaces served in turn, the caps per pod and per namespace, and the rows that say
what is not read."""

import logging
from typing import Any

import pytest

from jobarchive.config import load
from jobarchive.logtails.intake import NOTES_HELD, Intake
from jobarchive.logtails.queue import PER_NAMESPACE, QUEUE_FULL, FairQueue


def drain(queue: FairQueue[str, int]) -> list[str]:
    taken = []
    while (entry := queue.take()) is not None:
        taken.append(entry[0])
    return taken


def test_each_namespace_keeps_its_order_and_the_namespaces_are_served_in_turn() -> None:
    queue: FairQueue[str, int] = FairQueue(total=100, per_namespace=10)
    for index in range(5):
        assert queue.put("attacker", f"a{index}", index) is None
    assert queue.put("team-a", "t0", 0) is None
    assert queue.put("team-b", "b0", 0) is None
    assert queue.put("team-a", "t1", 1) is None
    assert drain(queue) == ["a0", "t0", "b0", "a1", "t1", "a2", "a3", "a4"]
    assert len(queue) == 0
    assert queue.take() is None


def test_a_namespace_that_comes_late_waits_one_turn_at_most() -> None:
    queue: FairQueue[str, int] = FairQueue(total=1000, per_namespace=500)
    for index in range(500):
        queue.put("attacker", f"a{index}", index)
    assert [queue.take() for _ in range(3)] == [("a0", 0), ("a1", 1), ("a2", 2)]
    queue.put("team-a", "victim", 7)
    assert [queue.take() for _ in range(2)] == [("a3", 3), ("victim", 7)]


def test_a_namespace_past_its_cap_is_refused_while_others_are_queued() -> None:
    queue: FairQueue[str, int] = FairQueue(total=10, per_namespace=4)
    assert [queue.put("attacker", f"a{i}", i) for i in range(6)] == [None] * 4 + [PER_NAMESPACE] * 2
    assert queue.waiting("attacker") == 4
    assert [queue.put(f"team-{i}", f"t{i}", i) for i in range(7)] == [None] * 6 + [QUEUE_FULL]
    assert len(queue) == 10
    queue.take()
    # Room again in the namespace taken from, and in the whole queue.
    assert queue.put("attacker", "a6", 6) is None
    assert queue.waiting("team-6") == 0


def test_a_key_queued_again_takes_the_new_value_and_keeps_its_place() -> None:
    queue: FairQueue[str, int] = FairQueue(total=2, per_namespace=2)
    queue.put("ml", "x", 1)
    queue.put("ml", "y", 2)
    assert queue.put("ml", "x", 3) is None
    assert "x" in queue and queue.get("x") == 3
    assert drain(queue) == ["x", "y"]


def pod(name: str, containers: int, namespace: str = "attacker", restarts: int = 0) -> Any:
    terminated = {"terminated": {"exitCode": 1, "reason": "Error"}}
    statuses = [
        {"name": f"c{index}", "restartCount": restarts, "state": terminated}
        for index in range(containers)
    ]
    return {
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"},
        "status": {"phase": "Failed", "containerStatuses": statuses},
    }


def intake(**env: str) -> Intake:
    return Intake(
        load({f"JOBARCHIVE_LOG_TAILS_{key.upper()}": value for key, value in env.items()})
    )


def hand_over(into: Intake, body: Any) -> None:
    into.noted(body)
    into.recorded(body["metadata"]["uid"], "job-uid")


def test_a_pod_past_its_cap_is_read_no_further_and_one_row_says_how_many_are_not() -> None:
    into = intake(per_pod="20")
    hand_over(into, pod("huge", 10_000))
    assert into.depth == 20
    [row] = into.notes
    assert (row["pod_name"], row["container"], row["restart_count"]) == ("huge", "c20", 0)
    assert not row["captured"] and row["log_tail"] is None
    assert row["note"] == (
        "the pod's first 20 failed containers are read (JOBARCHIVE_LOG_TAILS_PER_POD); "
        "not read: this one and 9,979 more of the pod's failed containers"
    )
    # The same failures again (another update, a re-listing): nothing new.
    hand_over(into, pod("huge", 10_000))
    assert (into.depth, len(into.notes)) == (20, 1)
    # A restart is a new instance of each container: set aside, in one row again.
    hand_over(into, pod("huge", 3, restarts=1))
    note = into.notes[-1]["note"]
    assert note is not None
    assert note.endswith("not read: this one and 2 more of the pod's failed containers")
    assert (into.notes[-1]["container"], into.notes[-1]["restart_count"]) == ("c0", 1)


def test_a_namespace_past_its_cap_is_set_aside_while_another_is_read_next() -> None:
    into = intake(per_pod="3", per_namespace="5")
    for name in ("first", "second", "third"):
        hand_over(into, pod(name, 3))
    hand_over(into, pod("victim", 1, namespace="team-a"))
    assert into.depth == 6
    notes = {(row["pod_name"], row["container"]): row["note"] for row in into.notes}
    why = "5 failed containers of namespace attacker wait to be read already"
    assert notes == {
        ("second", "c2"): f"{why} (JOBARCHIVE_LOG_TAILS_PER_NAMESPACE); not read: this one",
        ("third", "c0"): f"{why} (JOBARCHIVE_LOG_TAILS_PER_NAMESPACE); not read: this one "
        "and 2 more of the pod's failed containers",
    }
    taken = into.take(2)
    assert [key[0] for key in taken] == ["uid-first", "uid-victim"]
    assert into.depth == 6
    into.release(taken[0])
    assert into.depth == 5


def test_a_failure_taken_but_not_yet_read_still_takes_the_newer_facts() -> None:
    into = intake()
    hand_over(into, pod("restarted", 1))
    [key] = into.take(1)
    # Restarted before its read: the dead instance is now lastState, read with previous.
    restarted = pod("restarted", 1, restarts=1)
    status = restarted["status"]["containerStatuses"][0]
    status["lastState"] = status.pop("state")
    status["state"] = {"running": {}}
    into.noted(restarted)
    pending = into.release(key)
    assert (pending.failure.restart_count, pending.failure.previous) == (0, True)


def test_rows_set_aside_are_bounded_and_past_the_bound_the_log_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    into = intake(per_namespace="1")
    with caplog.at_level(logging.WARNING):
        for index in range(NOTES_HELD + 2):
            hand_over(into, pod(f"p{index}", 1))
    assert (into.depth, len(into.notes)) == (1, NOTES_HELD)
    assert f"no row says so: {NOTES_HELD} such rows wait to be written already" in caplog.text
    assert "attacker/p1001 container c0 (restart 0)" in caplog.text
