"""The soak's checker holds the archive to what the operator could have seen: an Event
about a job that was made and deleted while no operator could see it is not owed a row
(the operator never learns that job, so its Events wait for it and expire), while one
about a job seen in healthy time is."""

from typing import cast

from soak.checker import Checker
from soak.timeline import Timeline
from soak.truth import EVENTS, JOBS, Row, State, Tracked, Truth
from testbed.cluster import EVENTS as EVENT_RESOURCE
from testbed.cluster import Cluster, resource_of

TFJOBS = resource_of("kubeflow.org", "TFJob")
NOW = 300.0


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def job(uid: str, created: float, deleted: float | None = None) -> Tracked:
    row = {"kind": "TFJob", "status": "Running", "gmt_finished": None}
    return Tracked(
        JOBS,
        TFJOBS,
        "research",
        f"resnet-{uid}",
        uid,
        f"TFJob research/resnet-{uid}",
        {},
        [State(created, row)],
        deleted_at=deleted,
    )


def event(uid: str, subject: Tracked, created: float) -> Tracked:
    row = {"obj_uid": subject.uid, "job_id": subject.uid, "reason": "SuccessfulCreatePod"}
    return Tracked(
        EVENTS,
        EVENT_RESOURCE,
        "research",
        f"{subject.name}.{uid}",
        uid,
        f"Event SuccessfulCreatePod about {subject.label}",
        {},
        [State(created, row)],
        subject=subject,
    )


def checker(*objects: Tracked) -> Checker:
    clock = Clock()
    timeline = Timeline(lag=10.0, catch_up=20.0, clock=clock)
    # The operator is down from the start until 100 s: healthy from 120 s on.
    down = timeline.disrupted("operator killed")
    clock.now = 100.0
    timeline.restored(down)
    clock.now = NOW
    truth = Truth(cast(Cluster, None), clock)
    truth.objects = {tracked.uid: tracked for tracked in objects}
    return Checker(truth, timeline)


def test_an_event_about_a_job_no_operator_could_see_is_not_owed_a_row() -> None:
    unseen = job("j1", created=10.0, deleted=50.0)
    about = event("e1", unseen, created=11.0)

    assert checker(unseen, about).check({JOBS: [], EVENTS: []}, NOW) == []


def test_an_event_about_a_job_seen_in_healthy_time_is_owed_a_row() -> None:
    seen = job("j2", created=150.0)
    about = event("e2", seen, created=151.0)
    stored_job: Row = {"job_id": "j2", "name": seen.name, "namespace": "research"}
    stored_job |= {"kind": "TFJob", "status": "Running", "gmt_finished": None}
    stored_job |= {"deleted": 0, "is_in_etcd": 1}

    violations = checker(seen, about).check({JOBS: [stored_job], EVENTS: []}, NOW)

    assert len(violations) == 1
    assert violations[0].startswith("Event SuccessfulCreatePod about TFJob research/resnet-j2")
    assert "no row" in violations[0]
