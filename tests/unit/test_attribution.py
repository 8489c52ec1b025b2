from jobarchive.recording.attribution import UNRELATED, Attribution, Expired


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_pod_waiting_for_its_job_is_released_when_the_job_is_seen() -> None:
    attribution = Attribution()
    attribution.wait_for_job("ns", "pi", "pod-1", None, {"v": 1})
    attribution.wait_for_job("ns", "pi", "pod-1", "MODIFIED", {"v": 2})
    released = attribution.job_seen("ns", "pi", "job-uid", gone=False)
    assert [(w.event_type, w.body) for w in released] == [("MODIFIED", {"v": 2})]
    assert attribution.job_uid("ns", "pi") == "job-uid"
    assert attribution.job_seen("ns", "pi", "job-uid", gone=False) == []


def test_a_deletion_while_waiting_is_not_forgotten() -> None:
    attribution = Attribution()
    attribution.wait_for_job("ns", "pi", "pod-1", "DELETED", {"v": 1})
    attribution.wait_for_job("ns", "pi", "pod-1", None, {"v": 1})
    [released] = attribution.job_seen("ns", "pi", "job-uid", gone=False)
    assert released.event_type == "DELETED"


def test_events_waiting_for_a_pod_follow_its_attribution() -> None:
    attribution = Attribution()
    attribution.wait_for_pod("pod-1", "ev-1", None, {"e": 1})
    attribution.wait_for_pod("pod-2", "ev-2", None, {"e": 2})
    assert [w.body for w in attribution.pod_tracked("pod-1", "job-uid")] == [{"e": 1}]
    assert attribution.pod_unrelated("pod-2") == 1
    assert attribution.pod_job("pod-1") == "job-uid"
    assert attribution.pod_job("pod-2") == UNRELATED
    assert attribution.pod_job("pod-3") is None
    assert attribution.waiting_counts() == (0, 0)


def test_a_gone_job_is_forgotten_by_name_unless_a_newer_one_took_it() -> None:
    attribution = Attribution()
    attribution.job_seen("ns", "pi", "old", gone=False)
    attribution.job_seen("ns", "pi", "new", gone=False)
    attribution.job_seen("ns", "pi", "old", gone=True)
    assert attribution.job_uid("ns", "pi") == "new"
    attribution.job_seen("ns", "pi", "new", gone=True)
    assert attribution.job_uid("ns", "pi") is None


def test_what_waits_too_long_expires_in_a_sweep() -> None:
    clock = Clock()
    attribution = Attribution(ttl=60, clock=clock)
    attribution.wait_for_pod("pod-1", "ev-1", None, {})
    clock.now = 30
    attribution.wait_for_job("ns", "pi", "pod-2", None, {})
    assert attribution.sweep(every=10) == Expired()
    clock.now = 61
    assert attribution.sweep(every=10) == Expired(events=1)
    assert attribution.sweep(every=10) is None
    clock.now = 100
    assert attribution.sweep(every=10) == Expired(pods=1)
    assert attribution.waiting_counts() == (0, 0)


def test_memory_of_pods_is_bounded() -> None:
    attribution = Attribution(capacity=3)
    for index in range(5):
        attribution.pod_unrelated(f"pod-{index}")
    assert attribution.pod_job("pod-0") is None
    assert attribution.pod_job("pod-4") == UNRELATED


def test_after_loading_what_is_missing_is_known_to_be_missing() -> None:
    attribution = Attribution(capacity=3)
    assert not attribution.knows_all
    attribution.load([("ns", "pi", "job-uid")], [("pod-1", "job-uid")])
    assert attribution.knows_all
    assert (attribution.job_uid("ns", "pi"), attribution.pod_job("pod-1")) == ("job-uid", "job-uid")
    for index in range(3):
        attribution.pod_unrelated(f"other-{index}")
    assert not attribution.knows_all


def test_an_intermediate_object_releases_what_waited_for_it_and_is_remembered() -> None:
    attribution = Attribution()
    attribution.wait_for_owner("raycluster-1", "pod-1", "ADDED", {"metadata": {"uid": "pod-1"}})
    attribution.wait_for_owner("jobset-1", "batch-1", None, {"kind": "Job"}, intermediate=True)
    attribution.wait_for_pod("raycluster-1", "event-1", "ADDED", {"reason": "Created"})
    assert attribution.owner_job("raycluster-1") is None
    assert attribution.waiting_counts() == (1, 1)
    pods, intermediates, events = attribution.intermediate_seen("raycluster-1", "rayjob-1")
    assert ([p.body for p in pods], intermediates, [e.body for e in events]) == (
        [{"metadata": {"uid": "pod-1"}}],
        [],
        [{"reason": "Created"}],
    )
    _, waiting, _ = attribution.intermediate_seen("jobset-1", "trainjob-1")
    assert [w.body for w in waiting] == [{"kind": "Job"}]
    assert attribution.owner_job("raycluster-1") == "rayjob-1"
    assert attribution.waiting_counts() == (0, 0)


def test_pods_and_intermediates_waiting_for_an_owner_expire() -> None:
    now = [0.0]
    attribution = Attribution(ttl=10, clock=lambda: now[0])
    attribution.wait_for_owner("cronjob-job", "pod-1", None, {})
    attribution.wait_for_owner("unknown-jobset", "batch-1", None, {}, intermediate=True)
    now[0] = 100.0
    assert attribution.sweep(every=0) == Expired(pods=1, intermediates=1)
