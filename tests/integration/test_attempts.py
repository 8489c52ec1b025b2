"""Kueue's attempts and waits on both databases (decision 43): upserted by their key
with the stale-write guard and the cluster's, the earliest admission, start and first
sighting kept, several versions in one batch settled as the database would, the latest
attempt looked up after a restart, pruned with their job, read back as figures."""

import asyncio
import datetime
from typing import Any

from jobarchive.core.attempts import Figures
from jobarchive.core.rows import AttemptRow, WaitRow
from jobarchive.maintenance import retention
from jobarchive.reading import queries
from jobarchive.reading.queries.preemptions import ATTEMPTS_SHOWN, FIGURES, kueue_facts
from jobarchive.recording.convert import workloads as wl
from jobarchive.storage.kueue import Attempt, Wait
from jobarchive.storage.models import Job, Pod
from jobarchive.storage.store import Store
from jobarchive.storage.writer import Writer
from testbed import objects as o
from tests.support import rows

NOW = datetime.datetime(2026, 11, 21, tzinfo=datetime.UTC)
JOB = "5b0c7d2e-8a41-4f0b-9d1e-2c3f4a5b6c7d"


def at(clock: str) -> datetime.datetime:
    hour, minute, second = map(int, clock.split(":"))
    return datetime.datetime(2026, 11, 20, hour, minute, second, tzinfo=datetime.UTC)


def attempt(state: str, **fields: Any) -> AttemptRow:
    """The attempt a fixture's Workload names, the job's."""
    row = wl.observe(o.fixture(f"kueue/{state}.yaml"), NOW).attempt
    assert row is not None
    row.update({"job_id": JOB, **fields})  # type: ignore[typeddict-item]
    return row


def wait(state: str = "pending", **fields: Any) -> WaitRow:
    row = wl.observe(o.fixture(f"kueue/{state}.yaml"), NOW).wait
    assert row is not None
    row.update({"job_id": JOB, **fields})  # type: ignore[typeddict-item]
    return row


async def test_an_attempt_is_upserted_by_its_key_newer_versions_winning(database: str) -> None:
    await Store().upsert(Attempt, [attempt("admitted")])
    await Store().upsert(Attempt, [attempt("preempted")])
    # An older version after the newer one changes nothing.
    await Store().upsert(Attempt, [attempt("running", version="88000")])
    [row] = await Attempt.all()
    assert (row.version, row.end_reason, row.ended_at) == ("88160", "Preempted", at("11:00:00"))
    assert (row.admitted_at, row.running_at) == (at("10:05:00"), at("10:06:30"))
    assert (row.cluster, row.gmt_created) == ("default", at("10:05:00"))


async def test_a_start_once_known_is_never_forgotten_nor_made_later(database: str) -> None:
    await Store().upsert(Attempt, [attempt("running")])
    recovering = attempt("running", version="88155", running_at=None, admitted_at=at("10:09:00"))
    await Store().upsert(Attempt, [recovering])
    [row] = await Attempt.all()
    assert (row.version, row.running_at, row.admitted_at) == (
        "88155",
        at("10:06:30"),
        at("10:05:00"),
    )


async def test_a_wait_keeps_its_first_sighting_and_is_seen_longer(database: str) -> None:
    await Store().upsert(Wait, [wait()])
    await Store().upsert(
        Wait, [wait(version="88135", first_seen=at("10:02:00"), last_seen=at("10:02:00"))]
    )
    [row] = await Wait.all()
    assert (row.first_seen, row.last_seen, row.version) == (at("10:00:02"), at("10:02:00"), "88135")
    assert row.message.endswith("4 more needed") and row.reason == "Pending"


async def test_another_clusters_attempt_is_not_overwritten(database: str) -> None:
    await Store(cluster="east").upsert(Attempt, [attempt("admitted")])
    kept = await Store(cluster="west").upsert(Attempt, [attempt("preempted")])
    [row] = await Attempt.all()
    assert (kept, row.cluster, row.end_reason) == (1, "east", None)


async def test_versions_of_one_attempt_in_a_batch_settle_as_the_database_would(
    database: str,
) -> None:
    store = Store()
    writer = Writer(store, batch_size=50, max_delay=0.05, queue_size=100, flushers=1)
    writer.start()
    try:
        written = await asyncio.gather(
            writer.write(Attempt, [attempt("running")]),
            writer.write(Attempt, [attempt("preempted", running_at=None)]),
            writer.write(Wait, [wait(), wait(version="88135", first_seen=at("10:02:00"))]),
        )
    finally:
        await writer.stop()
    assert all(error is None for errors in written for error in errors)
    [row] = await Attempt.all()
    assert (row.end_reason, row.running_at) == ("Preempted", at("10:06:30"))
    [kept] = await Wait.all()
    assert (kept.first_seen, kept.version) == (at("10:00:02"), "88135")


async def test_the_latest_attempt_of_a_workload_is_looked_up_with_aware_times(
    database: str,
) -> None:
    store = Store()
    assert await store.latest_attempt("9c1e7a52-3b6d-4e8f-a1c2-7d9e0f1a2b3c") is None
    await store.upsert(Attempt, [attempt("preempted"), attempt("readmitted")])
    latest = await store.latest_attempt("9c1e7a52-3b6d-4e8f-a1c2-7d9e0f1a2b3c")
    assert latest is not None and latest == {**attempt("readmitted"), **latest}
    assert latest["quota_reserved_at"] == at("11:20:00")
    assert latest["quota_reserved_at"].tzinfo is not None
    assert await Store(cluster="other").latest_attempt(latest["workload_id"]) is None


async def test_a_jobs_attempts_and_waits_are_pruned_with_it(database: str) -> None:
    long_ago = datetime.datetime(2026, 3, 1, tzinfo=datetime.UTC)
    gone: dict[str, Any] = {"is_in_etcd": False, "status": "Succeeded", "gmt_finished": long_ago}
    await Store().upsert(Job, [rows.job(JOB, **gone), rows.job("kept")])
    await Store().upsert(Attempt, [attempt("preempted"), attempt("readmitted", job_id="kept")])
    await Store().upsert(Wait, [wait(), wait("requeued", job_id="kept")])
    pruned = await retention.prune(retention.cutoff(90, NOW))
    assert (pruned.jobs, pruned.attempts, pruned.waits) == (1, 1, 1)
    assert [row.job_id for row in await Attempt.all()] == ["kept"]
    assert [row.job_id for row in await Wait.all()] == ["kept"]


async def test_the_figures_read_back_are_the_hand_computed_ones(database: str) -> None:
    await Store().upsert(Job, [rows.job(JOB, gmt_created=at("10:00:00"))])
    await Store().upsert(Attempt, [attempt("preempted"), attempt("finished")])
    pods = [
        rows.pod(f"p{index}", job_id=JOB, gpus=2, gmt_started=at(start), gmt_finished=at(end))
        for index, (start, end) in enumerate([("10:06:00", "11:00:20"), ("11:20:30", "13:00:00")])
    ]
    await Store().upsert(Pod, pods)
    facts = (await kueue_facts([JOB, "no-such-job"]))[JOB]
    assert facts.figures == Figures(2, 1, 300.0, 150.0, 1200.0)
    # One two-GPU pod of the preempted attempt: 2 x 3,260 s.
    assert (facts.preempted_gpu_hours, facts.evicted_gpu_hours) == (1.811, 0.0)
    assert await kueue_facts([]) == {} and await kueue_facts(["no-such-job"]) == {}


async def test_a_jobs_detail_has_its_attempts_waits_and_figures(database: str) -> None:
    await Store().upsert(Job, [rows.job(JOB, gmt_created=at("10:00:00"))])
    await Store().upsert(Attempt, [attempt("preempted"), attempt("finished")])
    pod = rows.pod("p0", job_id=JOB, gpus=2, gmt_started=at("10:06:00"))
    await Store().upsert(Pod, [{**pod, "gmt_finished": at("11:00:20")}])
    again = wait(first_seen=at("11:00:40"), last_seen=at("11:20:00"), wait_id="w2")
    await Store().upsert(Wait, [wait(last_seen=at("10:05:00")), again])
    detail = await queries.job_detail(JOB)
    assert detail is not None
    assert [
        (a["quota_reserved_at"], a["ended_at"], a["end_reason"], a["preemptor_job_id"])
        for a in detail["attempts"]
    ] == [
        (
            "2026-11-20T10:05:00Z",
            "2026-11-20T11:00:00Z",
            "Preempted",
            "7d3b1f9a-0000-4000-8000-00000000cafe",
        ),
        ("2026-11-20T11:20:00Z", "2026-11-20T13:00:00Z", "Finished", None),
    ]
    assert detail["attempts"][0]["flavors"]["worker"]["nvidia.com/gpu"] == "a100"
    assert detail["attempts_truncated"] is False and detail["waits_truncated"] is False
    # One reason, one message: 10:00:02 to 10:05:00, then 11:00:40 to 11:20:00.
    [waited] = detail["waits"]
    assert (waited["reason"], waited["first_seen"], waited["last_seen"], waited["held_s"]) == (
        "Pending",
        "2026-11-20T10:00:02Z",
        "2026-11-20T11:20:00Z",
        298.0 + 1160.0,
    )
    assert {name: detail[name] for name in FIGURES} == {
        "preemptions": 1,
        "preempted_gpu_hours": 1.811,
        "evicted_gpu_hours": 0.0,
        "quota_wait_s": 300.0,
        "start_wait_s": 150.0,
        "requeue_wait_s": 1200.0,
    }


async def test_a_job_kueue_never_admitted_has_no_attempts_and_null_figures(database: str) -> None:
    await Store().upsert(Job, [rows.job(JOB)])
    await Store().upsert(Wait, [wait()])
    detail = await queries.job_detail(JOB)
    assert detail is not None and detail["attempts"] == []
    assert [w["reason"] for w in detail["waits"]] == ["Pending"]
    assert all(detail[name] is None for name in FIGURES)


async def test_a_jobs_attempts_past_the_bound_are_cut_and_said_so(database: str) -> None:
    await Store().upsert(Job, [rows.job(JOB, gmt_created=at("00:00:00"))])
    many = [
        attempt(
            "preempted",
            attempt_id=f"a{index}",
            quota_reserved_at=at("10:05:00") + datetime.timedelta(minutes=index),
        )
        for index in range(ATTEMPTS_SHOWN + 1)
    ]
    await Store().upsert(Attempt, many)
    detail = await queries.job_detail(JOB)
    assert detail is not None and detail["attempts_truncated"] is True
    assert len(detail["attempts"]) == ATTEMPTS_SHOWN
    assert detail["attempts"][0]["quota_reserved_at"] == "2026-11-20T10:05:00Z"
    # The figures count every attempt, not only those shown.
    assert detail["preemptions"] == ATTEMPTS_SHOWN + 1


async def test_a_job_never_evicted_costs_nothing_its_pods_unread(database: str) -> None:
    await Store().upsert(Job, [rows.job(JOB, gmt_created=at("11:00:00"))])
    await Store().upsert(Attempt, [attempt("finished")])
    pod = rows.pod("p0", job_id=JOB, gpus=8, gmt_started=at("11:21:00"))
    await Store().upsert(Pod, [{**pod, "gmt_finished": at("13:00:00")}])
    facts = (await kueue_facts([JOB]))[JOB]
    assert facts.figures == Figures(1, 0, 1200.0, 60.0, 0.0)
    assert (facts.preempted_gpu_hours, facts.evicted_gpu_hours) == (0.0, 0.0)
