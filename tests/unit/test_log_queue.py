"""The fair queue of failures waiting for their read: namespaces served in turn, each
in its order, and the caps per namespace and in all."""

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
