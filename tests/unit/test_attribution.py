from jobarchive.recording.attribution import ABSENT_FOR, UNRELATED, Attribution, Waiting


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def pod(uid: str, namespace: str = "ns") -> Waiting:
    return Waiting("Pod", uid, namespace, f"name-of-{uid}")


def event(uid: str, namespace: str = "ns") -> Waiting:
    return Waiting("Event", uid, namespace, f"name-of-{uid}")


def test_a_pod_waiting_for_its_job_is_released_when_the_job_is_seen() -> None:
    attribution = Attribution()
    attribution.wait(("ns", "pi"), pod("pod-1"))
    newer = pod("pod-1")
    attribution.wait(("ns", "pi"), newer)
    assert attribution.job_seen("ns", "pi", "job-uid", gone=False) == [newer]
    assert attribution.job_uid("ns", "pi") == "job-uid"
    assert attribution.job_namespace("job-uid") == "ns"
    assert attribution.job_seen("ns", "pi", "job-uid", gone=False) == []


def test_what_waits_for_a_job_by_uid_is_released_even_by_its_deletion() -> None:
    attribution = Attribution()
    owned, about = pod("pod-1"), event("ev-1")
    attribution.wait("job-uid", owned)
    attribution.wait("job-uid", about)
    attribution.wait(("ns", "pi"), pod("pod-2"))
    assert attribution.job_seen("ns", "pi", "job-uid", gone=True) == [owned, about]
    # A gone job's namespace is kept: its pods' last updates come after it.
    assert attribution.job_namespace("job-uid") == "ns"
    assert attribution.waiting_counts() == (1, 0)


def test_events_waiting_for_a_pod_follow_its_attribution() -> None:
    attribution = Attribution()
    first, second = event("ev-1"), event("ev-2")
    attribution.wait("pod-1", first)
    attribution.wait("pod-2", second)
    assert attribution.pod_tracked("pod-1", "job-uid") == [first]
    assert attribution.pod_unrelated("pod-2") == [second]
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
    first = event("ev-1")
    attribution.wait("pod-1", first)
    clock.now = 30
    second = pod("pod-2")
    attribution.wait(("ns", "pi"), second)
    assert attribution.sweep(every=10) == []
    clock.now = 61
    assert attribution.sweep(every=10) == [first]
    assert attribution.sweep(every=10) is None
    clock.now = 100
    assert attribution.sweep(every=10) == [second]
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
    assert attribution.job_namespace("job-uid") == "ns"
    for index in range(3):
        attribution.pod_unrelated(f"other-{index}")
    assert not attribution.knows_all


def test_an_intermediate_object_releases_what_waited_for_it_and_is_remembered() -> None:
    attribution = Attribution()
    head, created = pod("pod-1"), event("event-1")
    submitter = Waiting("Job", "batch-1", "ns", "submitter")
    attribution.wait("raycluster-1", head)
    attribution.wait("jobset-1", submitter)
    attribution.wait("raycluster-1", created)
    assert attribution.owner_job("raycluster-1") is None
    assert attribution.waiting_counts() == (1, 1)
    assert attribution.intermediate_seen("raycluster-1", "rayjob-1") == [head, created]
    assert attribution.intermediate_seen("jobset-1", "trainjob-1") == [submitter]
    assert attribution.owner_job("raycluster-1") == "rayjob-1"
    assert attribution.waiting_counts() == (0, 0)


def test_pods_and_intermediates_waiting_for_an_owner_expire() -> None:
    clock = Clock()
    attribution = Attribution(ttl=10, clock=clock)
    attribution.wait("cronjob-job", pod("pod-1"))
    attribution.wait("unknown-jobset", Waiting("Job", "batch-1", "ns", "nightly"))
    clock.now = 100.0
    assert [item.uid for item in attribution.sweep(every=0) or []] == ["pod-1", "batch-1"]


def test_a_job_the_database_lacks_is_believed_absent_briefly_and_until_seen() -> None:
    clock = Clock()
    attribution = Attribution(clock=clock)
    attribution.job_looked_up("j1", None)
    attribution.job_looked_up("j2", None)
    clock.now = ABSENT_FOR - 1
    assert attribution.recently_absent("j1")
    attribution.job_seen("ns", "one", "j1", gone=False)
    assert not attribution.recently_absent("j1")
    clock.now = ABSENT_FOR + 1
    # A peer may have stored it since: asked again.
    assert not attribution.recently_absent("j2")
    attribution.job_looked_up("j3", None)
    attribution.job_looked_up("j3", "ns")
    assert not attribution.recently_absent("j3")
    # Seen while the database was asked: the database's "no" is already out of date.
    attribution.job_seen("ns", "four", "j4", gone=False)
    attribution.job_looked_up("j4", None)
    assert not attribution.recently_absent("j4")
