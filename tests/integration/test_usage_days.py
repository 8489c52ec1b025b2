"""The daily usage roll-up on both databases (decision 33): kept by the write path from a
job's pods, the same rows when the same pods are written again, pruned with its job,
filled for an archive from before at start; and its answers equal to the pods' own,
whatever the window's edges."""

import datetime
import random
from typing import Any

import pytest

from jobarchive.core.rows import JobRow, PodRow
from jobarchive.maintenance import retention
from jobarchive.reading.queries import rollup
from jobarchive.storage import daily, migration, schema
from jobarchive.storage import database as db
from jobarchive.storage.models import Job, Pod, UsageDay
from jobarchive.storage.store import Store
from tests.support import rows
from tests.support.failures import classify, failure

T0 = datetime.datetime(2026, 11, 20, 0, 0, tzinfo=datetime.UTC)
HOUR = datetime.timedelta(hours=1)


def at(hours: float) -> datetime.datetime:
    """Whole seconds, as Kubernetes' times are."""
    return T0 + datetime.timedelta(seconds=round(hours * 3600))


async def days() -> dict[tuple[str, str], tuple[float, float, datetime.datetime]]:
    found = await UsageDay.all().values("job_id", "day", "gpu_seconds", "cpu_milli_seconds")
    stamped = await UsageDay.all().values_list("gmt_modified", flat=True)
    assert all(stamp is not None for stamp in stamped)
    return {
        (row["job_id"], daily.midnight(row["day"]).date().isoformat()): (
            row["gpu_seconds"],
            row["cpu_milli_seconds"],
            row["day"],
        )
        for row in found
    }


async def write(jobs: list[JobRow], pods: list[PodRow]) -> None:
    """As the writer commits: one transaction of both tables' rows."""
    await Store().write_batch({"jobs": (Job, jobs), "pods": (Pod, pods)})


async def test_a_job_s_days_follow_its_pods_and_a_relist_writes_the_same(database: str) -> None:
    job = rows.job("j", status="Running", gmt_created=at(20))
    first = rows.pod("p0", job_id="j", gpus=2, cpu_millis=500, gmt_started=at(22))
    second = rows.pod("p1", job_id="j", gpus=1, gmt_started=at(23))
    await write([job], [first, second])
    assert await days() == {}
    # The first pod finishes across midnight: 2 h on the 20th, 1 h on the 21st.
    first_done: PodRow = {**first, "version": "11", "gmt_finished": at(25), "status": "Succeeded"}
    await write([job], [first_done])
    found = await days()
    assert {key: value[:2] for key, value in found.items()} == {
        ("j", "2026-11-20"): (2 * 7200, 500 * 7200),
        ("j", "2026-11-21"): (2 * 3600, 500 * 3600),
    }
    await write([job], [first_done, second])
    assert {key: value[:2] for key, value in (await days()).items()} == {
        key: value[:2] for key, value in found.items()
    }
    second_done: PodRow = {**second, "version": "12", "gmt_finished": at(24), "status": "Succeeded"}
    await write([job], [second_done])
    assert (await days())[("j", "2026-11-20")][0] == 2 * 7200 + 3600


async def copies(job: str) -> set[tuple[Any, ...]]:
    """The job's columns as its days hold them."""
    columns = tuple(daily.JOB_COLUMNS)
    return set(await UsageDay.filter(job_id=job).values_list(*columns))


async def test_a_day_holds_its_job_s_columns_whichever_is_written_last(database: str) -> None:
    pod = rows.pod("p0", job_id="j", gpus=1, gmt_started=at(1), gmt_finished=at(3))
    await write([], [{**pod, "status": "Failed", "remark": None}])
    assert await copies("j") == {(None,) * len(daily.JOB_COLUMNS)}
    job = rows.job("j", namespace="team-a", owner="alice", status="Running", gmt_created=at(0))
    await write([job], [])
    [running] = await copies("j")
    assert running[:6] == ("team-a", "alice", job["tenant"], job["queue"], job["kind"], "Running")
    # The job fails once its pods have: its days follow, its reason with them.
    failed: JobRow = {
        **job,
        "version": "11",
        "status": "Failed",
        "gmt_finished": at(4),
        "remark": "BackoffLimitExceeded: a pod failed",
    }
    await write([failed], [])
    [row] = await copies("j")
    assert row[5:7] == ("Failed", "BackoffLimitExceeded")
    assert [daily.moment(value) for value in row[7:]] == [at(0), at(4)]
    window: dict[str, Any] = {"since": T0, "until": T0 + 2 * daily.DAY}
    found = await rollup("namespace", **window)
    assert found == await rollup("namespace", **window, from_pods=True)
    # Its GPU-hours under its failure class, read when the days are: none yet.
    assert found[0]["top_failure_reasons"] == [
        {"reason": "Unclassified", "gpu_hours": 2.0, "jobs": 1}
    ]
    await classify(failure("j", "BackoffLimitExceeded", "team-a"))
    found = await rollup("namespace", **window)
    assert found[0]["top_failure_reasons"] == [
        {"reason": "BackoffLimitExceeded", "gpu_hours": 2.0, "jobs": 1}
    ]


async def test_the_days_go_with_their_job_when_it_is_pruned(database: str) -> None:
    gone: dict[str, Any] = {"is_in_etcd": False, "status": "Succeeded", "gmt_finished": at(2)}
    job = rows.job("old", gmt_created=at(0), **gone)
    pod = rows.pod("old0", job_id="old", gpus=1, gmt_started=at(0), **gone)
    orphan = rows.pod("lost0", job_id="lost", gpus=1, gmt_started=at(0), **gone)
    await write([job], [pod, orphan])
    assert {job for job, _ in await days()} == {"old", "lost"}
    await retention.prune(at(24 * 30))
    assert await days() == {}


def archive(seed: int) -> tuple[list[JobRow], list[PodRow]]:
    """Jobs over four days: pods across midnights, some running, some never started,
    failed jobs among them."""
    rng = random.Random(seed)
    jobs, pods = [], []
    for n in range(40):
        created = at(rng.uniform(0, 90))
        running = rng.random() < 0.2
        finished = None if running else at(rng.uniform(0.1, 30)) - T0 + created
        status = "Running" if running else rng.choice(("Succeeded", "Failed"))
        jobs.append(
            rows.job(
                f"j{n}",
                name=f"j{n}",
                namespace=rng.choice(("team-a", "team-b")),
                owner=rng.choice(("alice", "bob")),
                status=status,
                gmt_created=created,
                gmt_job_running=created + HOUR / 4,
                gmt_finished=finished,
                remark=rng.choice((None, "BackoffLimitExceeded: a pod failed")),
            )
        )
        for k in range(rng.randrange(1, 4)):
            started = None if rng.random() < 0.1 else created + HOUR / 4
            pods.append(
                rows.pod(
                    f"j{n}-{k}",
                    job_id=f"j{n}",
                    namespace=jobs[-1]["namespace"],
                    gpus=rng.choice((0, 1, 2, 8)),
                    cpu_millis=rng.choice((250, 4000)),
                    gmt_started=started,
                    gmt_finished=finished if started else None,
                    status="Failed" if status == "Failed" else "Succeeded",
                    remark=rng.choice((None, "OOMKilled (exit code 137)", "Error (exit code 1)"))
                    if status == "Failed"
                    else None,
                )
            )
    return jobs, pods


WINDOWS: list[dict[str, Any]] = [
    {"since": at(0), "until": at(96)},
    {"since": at(5.5), "until": at(77.25)},
    {"since": at(30), "until": at(40)},
    {"since": at(49), "until": at(50)},
    {"since": at(23.5), "until": at(24.5)},
]


@pytest.mark.parametrize("window", WINDOWS)
@pytest.mark.parametrize(("by", "every"), [("namespace", None), ("owner", "day"), ("kind", "week")])
async def test_the_roll_up_answers_as_the_pods_do(
    database: str, window: dict[str, Any], by: str, every: str | None
) -> None:
    jobs, pods = archive(7)
    await write(jobs, pods)
    assert alike(
        await rollup(by, every, **window), await rollup(by, every, **window, from_pods=True)
    )


def alike(found: Any, expected: Any) -> bool:
    """Equal, hours to their last digit: SQLite's julianday differences are floats, so a
    figure that is exactly half a thousandth of an hour may round either way there."""
    if isinstance(found, float) and isinstance(expected, float):
        return abs(found - expected) <= 0.0011
    if isinstance(found, dict) and isinstance(expected, dict):
        same_keys = found.keys() == expected.keys()
        return same_keys and all(alike(found[key], expected[key]) for key in found)
    if isinstance(found, list) and isinstance(expected, list):
        same_length = len(found) == len(expected)
        return same_length and all(alike(a, b) for a, b in zip(found, expected, strict=True))
    return bool(found == expected)


async def test_an_archive_from_before_is_filled_at_start_and_by_migrate(
    database: str, db_url: str
) -> None:
    jobs, pods = archive(3)
    await write(jobs, pods)
    kept = await days()
    conn = db.connection()
    await conn.execute_script("DELETE FROM usage_day")
    assert await daily.left(conn)
    steps = await migration.upgrade(conn, [])
    assert [step.table for step in steps] == ["usage_day"]
    assert {k: v[:2] for k, v in (await days()).items()} == {k: v[:2] for k, v in kept.items()}
    assert not await daily.left(conn)
    assert await migration.upgrade(conn, []) == []
    await conn.execute_script("DELETE FROM usage_day")
    found = await migration.Migration(conn).run(dry_run=False, report=lambda step: None)
    assert "usage_day" in {step.table for step in found}
    assert {k: v[:2] for k, v in (await days()).items()} == {k: v[:2] for k, v in kept.items()}


async def test_days_from_before_their_job_columns_are_filled_again_at_start(
    database: str,
) -> None:
    jobs, pods = archive(5)
    await write(jobs, pods)
    window: dict[str, Any] = {"since": T0, "until": T0 + 4 * daily.DAY}
    expected = await rollup("owner", "day", **window, from_pods=True)
    conn = db.connection()
    for column in daily.JOB_COLUMNS:
        await conn.execute_script(f"ALTER TABLE usage_day DROP COLUMN {column}")
    added = await schema.ensure_schema(conn)
    assert {f"usage_day.{column}" for column in daily.JOB_COLUMNS} <= set(added)
    steps = await migration.upgrade(conn, added)
    assert [step.what for step in steps] == [
        "empty, to fill with the jobs' columns",
        "fill from the finished pods",
    ]
    assert alike(await rollup("owner", "day", **window), expected)
    assert await migration.upgrade(conn, []) == []
