"""Groups are told apart by case and accents, as Kubernetes tells names apart: on MariaDB,
whose text columns ignore case and accents, ``alice`` and ``Alice`` (or ``jose`` and
``josé``) are two owners with their own figures, through every path of the roll-up
(whole days from ``usage_day``, the edge days and the running pods read live, the
waits) and in the statistics."""

import datetime

from jobarchive.reading.queries import rollup
from jobarchive.reading.queries.stats import stats
from jobarchive.storage.models import Job, Pod
from jobarchive.storage.store import Store
from tests.support import rows

OWNERS = ("alice", "Alice", "jose", "josé")


def at(day: int, hour: int) -> datetime.datetime:
    return datetime.datetime(2026, 11, day, hour, tzinfo=datetime.UTC)


async def test_owners_differing_by_case_or_accent_are_separate_groups(database: str) -> None:
    jobs, pods = [], []
    for n, owner in enumerate(OWNERS, start=1):
        # Owner n: a finished pod of n GPUs for 48 h (two whole days and two edges) and
        # a running pod of n GPUs since the 20th at noon; the job waited n minutes.
        created = at(20, 11)
        jobs.append(
            rows.job(
                f"j{n}",
                name=f"j{n}",
                owner=owner,
                gmt_created=created,
                gmt_job_running=created + datetime.timedelta(minutes=n),
            )
        )
        pods.append(
            rows.pod(
                f"f{n}",
                job_id=f"j{n}",
                gpus=n,
                gmt_started=at(20, 12),
                gmt_finished=at(22, 12),
                status="Succeeded",
            )
        )
        pods.append(rows.pod(f"r{n}", job_id=f"j{n}", gpus=n, gmt_started=at(20, 12)))
    await Store().upsert(Job, jobs)
    await Store().upsert(Pod, pods)
    found = await rollup("owner", since=at(20, 0), until=at(23, 0))
    assert sorted(row["owner"] for row in found) == sorted(OWNERS)
    for n, owner in enumerate(OWNERS, start=1):
        (row,) = [row for row in found if row["owner"] == owner]
        # 48 h finished and 60 h running (to the window's end), n GPUs each.
        assert (row["jobs"], row["gpu_hours"]) == (1, 108.0 * n)
        assert row["queue_wait_p50_s"] == 60 * n
    counted = {row["owner"]: row["jobs"] for row in await stats("owner")}
    assert counted == dict.fromkeys(OWNERS, 1)
