"""The soak's own parts that decide a verdict: its command line, the fault plan, and the
checker against rows known to be wrong. The soak itself (minutes of workload and every
fault, then the archive against the ground truth) is ``make soak``, not a test: it
fails when a row is wrong or a fault type was never injected."""

import datetime
import itertools
import random
import subprocess
import sys
from typing import Any, cast

import pytest

from soak import faults
from soak.checker import Checker
from soak.timeline import Timeline
from soak.truth import EVENTS, JOBS, PODS, Row, State, Tracked, Truth
from testbed.cluster import EVENTS as EVENT_RESOURCE
from testbed.cluster import PODS as POD_RESOURCE
from testbed.cluster import resource_of
from testbed.operator import REPO

SEED = 20261130
FINISHED = datetime.datetime(2026, 11, 30, 6, 0, 0)
TFJOBS = resource_of("kubeflow.org", "TFJob")


def test_bad_arguments_exit_with_status_2() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "soak", "--minutes", "0"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert (result.returncode, "--minutes" in result.stderr) == (2, True)


@pytest.mark.parametrize("seed", range(40))
def test_a_plan_of_three_faults_or_more_holds_every_type(seed: int) -> None:
    plan = faults.plan(random.Random(seed), 120, 6)
    assert {fault.type for fault in plan} == set(faults.TYPES)
    for kind in faults.TYPES:
        mine = sorted((f.at, f.at + f.duration) for f in plan if f.type == kind)
        assert all(end < start for (_, end), (start, _) in itertools.pairwise(mine))
    assert all(f.at >= 10 and f.at + f.duration <= 105 for f in plan)


class Clock:
    """A clock the test sets, in seconds from the soak's start."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def tracked(
    table: str | None,
    name: str,
    states: list[tuple[float, Row]],
    deleted_at: float | None = None,
    subject: Tracked | None = None,
    resource: Any = POD_RESOURCE,
) -> Tracked:
    """An object of the truth, its states given as (since, row)."""
    return Tracked(
        table=table,
        resource=resource,
        namespace="team-a",
        name=name,
        uid=f"uid-{name}",
        label=name,
        body={},
        states=[State(since, row) for since, row in states],
        subject=subject,
        deleted_at=deleted_at,
    )


def job(status: str, **fields: Any) -> Row:
    """A TFJob's expected row."""
    return {"kind": "TFJob", "status": status, "gmt_finished": None, **fields}


def pod(status: str, **fields: Any) -> Row:
    """A worker's expected row."""
    row = {"job_id": "uid-mnist", "status": status, "remark": None, "gmt_finished": None}
    return {**row, "replica_type": "worker", "image": "tf:2", **fields}


def stored(item: Tracked, row: Row, gone: bool = False) -> Row:
    """The row as the database holds it."""
    uid_column = {JOBS: "job_id", PODS: "pod_id", EVENTS: "event_id"}[item.table or PODS]
    identity: Row = {uid_column: item.uid, "name": item.name}
    if item.table != EVENTS:
        identity.update(namespace=item.namespace, deleted=int(gone), is_in_etcd=int(not gone))
    return {**row, **identity}


@pytest.fixture
def world() -> tuple[Truth, Timeline, Clock]:
    """A soak's truth and timeline: the operator down from 50 s to 120 s (healthy again
    from 140 s), the check at 300 s."""
    clock = Clock()
    timeline = Timeline(lag=10, catch_up=20, clock=clock)
    clock.now = 50
    down = timeline.disrupted("operator killed")
    clock.now = 120
    timeline.restored(down)
    clock.now = 300
    return Truth(cast(Any, None), clock), timeline, clock


def check(world: tuple[Truth, Timeline, Clock], *objects: Tracked, rows: list[Row]) -> list[str]:
    """The checker's violations for these objects and rows, at the world's clock."""
    truth, timeline, clock = world
    for item in objects:
        truth.objects[item.uid] = item
    tables: dict[str, list[Row]] = {JOBS: [], PODS: [], EVENTS: []}
    for row in rows:
        table = JOBS if "kind" in row and "obj_uid" not in row else EVENTS
        tables[PODS if "pod_id" in row else table].append(row)
    return Checker(truth, timeline).check(tables, clock.now)


def test_the_checker_accepts_rows_of_the_last_states(world) -> None:
    mnist = tracked(JOBS, "mnist", [(0, job("Running"))], resource=TFJOBS)
    # Deleted unseen while the operator was down: any state from the last one held in
    # healthy time (Running, 30 s to 60 s) may be the one the reconciliation marked gone.
    worker = tracked(PODS, "worker", [(0, pod("Pending")), (30, pod("Running"))], deleted_at=100)
    worker.states.append(State(60, pod("Succeeded", gmt_finished=FINISHED)))
    # Created and deleted while the operator was down: no row is owed.
    ghost = tracked(PODS, "ghost", [(60, pod("Running"))], deleted_at=110)
    rows = [
        stored(mnist, job("Running")),
        stored(worker, pod("Stopped", gmt_finished=FINISHED), gone=True),
    ]
    assert check(world, mnist, worker, ghost, rows=rows) == []


def test_the_checker_reports_each_wrong_row(world) -> None:
    mnist = tracked(JOBS, "mnist", [(0, job("Running")), (200, job("Failed"))], resource=TFJOBS)
    oom = pod("Failed", remark="OOMKilled (exit code 137)", gmt_finished=FINISHED)
    # Deleted at 200 s, in healthy time: its deletion must be seen with its last state.
    killed = tracked(PODS, "killed", [(0, pod("Running")), (190, oom)], deleted_at=200)
    repeated = {"obj_uid": "uid-killed", "job_id": "uid-mnist", "kind": "Pod", "reason": "BackOff"}
    backoff = tracked(
        EVENTS,
        "backoff",
        [(150, {**repeated, "count": 1}), (180, {**repeated, "count": 4})],
        subject=killed,
        resource=EVENT_RESOURCE,
    )
    web = tracked(None, "web", [(0, {})])
    # A launcher of the second job of a name, stored under the first.
    first = tracked(JOBS, "first", [(0, job("Running"))], deleted_at=20, resource=TFJOBS)
    launcher = tracked(PODS, "launcher", [(30, pod("Running"))])
    missing = tracked(JOBS, "missing", [(10, job("Created"))], resource=TFJOBS)
    rows = [
        stored(mnist, job("Running")),
        stored(killed, pod("Stopped", gmt_finished=FINISHED), gone=True),
        stored(backoff, {**repeated, "count": 3}),
        stored(web, pod("Running")),
        stored(first, job("Stopped", gmt_finished=FINISHED), gone=True),
        stored(launcher, pod("Running", job_id="uid-first")),
        {"pod_id": "uid-never-made", "name": "stray", "status": "Running"},
    ]
    violations = check(world, mnist, killed, backoff, web, missing, first, launcher, rows=rows)
    assert sorted(violations) == sorted(
        [
            "mnist (uid uid-mnist): status 'Running' (expected 'Failed') (live)",
            "killed (uid uid-killed): status 'Stopped' (expected 'Failed'); remark None "
            "(expected 'OOMKilled (exit code 137)') (deleted at +200.0 s, in healthy time)",
            "backoff (uid uid-backoff): count 3 (expected 4) (live)",
            "web (uid uid-web): stored in replica_info, but no job of a tracked kind owns it",
            "launcher (uid uid-launcher): job_id 'uid-first' (expected 'uid-mnist') "
            "(live; uid-first is first (deleted, created at +0.0 s))",
            "replica_info row uid-never-made (stray): no object of the soak had this uid",
            "missing (uid uid-missing): no row; expected name='missing', namespace='team-a', "
            "kind='TFJob', status='Created', gmt_finished=None, deleted=0, is_in_etcd=1 (live)",
        ]
    )


def test_the_checker_wants_a_deleted_object_marked_gone(world) -> None:
    # Running from 0 s to 45 s in healthy time, deleted while the operator was down:
    # the reconciliation must mark it gone once the operator is back.
    worker = tracked(PODS, "worker", [(0, pod("Running"))], deleted_at=70)
    violations = check(world, worker, rows=[stored(worker, pod("Running"))])
    assert violations == [
        "worker (uid uid-worker): status 'Running' (expected 'Stopped'); gmt_finished None "
        "(expected a time); deleted 0 (expected 1); is_in_etcd 1 (expected 0) "
        "(deleted at +70.0 s unseen; state 1 of 1 was held in healthy time)"
    ]
