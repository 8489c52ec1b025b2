"""The failure taxonomy's pass on both databases (decision 42): failed jobs classified
from their stored pods, log tails, Events and Kueue attempts, once they settled, again
when a tail arrives after their class, and in ``jobarchive migrate``'s step for an
archive recorded before the taxonomy; pruned with their jobs."""

import datetime
import pathlib
from typing import Any

from jobarchive.core.rows import FailureRow, PodFailureRow
from jobarchive.infra.rules import load_rules
from jobarchive.infra.scope import Scope
from jobarchive.logtails import inserts as tails
from jobarchive.logtails.text import tail
from jobarchive.maintenance import retention
from jobarchive.maintenance.classifying import CLASSIFIED, Classifier, classify_archive
from jobarchive.reading.lists import JobQuery
from jobarchive.reading.queries import jobs
from jobarchive.storage import database as db
from jobarchive.storage.failed import FailedJob, FailedPod
from jobarchive.storage.models import Event, Job, Pod
from jobarchive.storage.store import Store
from tests.support import rows

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures"
FINISHED = datetime.datetime(2026, 11, 20, 10, 30, tzinfo=datetime.UTC)
NCCL = "[rank1]:[E ProcessGroupNCCL.cpp:1316] NCCL error: unhandled system error\n"


def excerpt(name: str) -> str:
    """A log fixture's lines, without the header naming its source."""
    return (FIXTURES / "logs" / name).read_text().partition("\n")[2]


def at(minute: int) -> datetime.datetime:
    return datetime.datetime(2026, 11, 20, 10, minute, tzinfo=datetime.UTC)


def classifier(store: Store | None = None) -> Classifier:
    store = store or Store()

    async def write(written: list[FailureRow], pods: list[PodFailureRow]) -> None:
        await store.upsert(FailedJob, written)
        await store.upsert(FailedPod, pods)

    return Classifier(load_rules(), store, write)


async def failed_job(uid: str = "job-1", **fields: Any) -> None:
    row = rows.job(uid, status="Failed", gmt_finished=FINISHED, **fields)
    await Store().upsert(Job, [row])


async def failed_pod(uid: str, job: str = "job-1", **fields: Any) -> None:
    await Store().upsert(
        Pod,
        [
            rows.pod(
                uid, job_id=job, name=f"w-{uid}", status="Failed", gmt_finished=FINISHED, **fields
            )
        ],
    )


async def failed_tail(pod: str, text: str | None, job: str = "job-1", **fields: Any) -> None:
    failed = rows.failure(pod, **fields)
    read = tail(text.encode(), 100, 65536) if text is not None else None
    await rows.write_tails([tails.row(failed, job, read, None if read else "not read")])


async def test_an_oom_killed_pod_whose_tail_shows_nccl_errors_is_oom_killed(
    database: str,
) -> None:
    await failed_job()
    await failed_pod("p0")
    await failed_pod("p1")
    await failed_tail("p0", NCCL, exit_code=137, reason="OOMKilled", finished_at=at(10))
    # Its peer fails later, of the NCCL timeout the first one's death caused.
    await failed_tail("p1", NCCL, exit_code=1, reason="Error", finished_at=at(20))
    assert await classifier().round(settle=0) == 1
    [row] = await FailedJob.all()
    assert (row.failure_class, row.pod_id, row.pod_name, row.container) == (
        "OOMKilled",
        "p0",
        "w-p0",
        "pytorch",
    )
    assert (row.exit_code, row.signal, row.derived_exit_code) == (137, 9, 137)
    assert (row.version, row.namespace, row.cluster) == ("10", "kubeflow", "default")
    # Nothing left to do: classified once.
    assert await classifier().round(settle=0) == 0


async def test_a_cuda_oom_tail_is_gpu_out_of_memory_with_its_line(database: str) -> None:
    await failed_job()
    await failed_pod("p0")
    await failed_pod("p1", remark="Error (exit code 3)")
    await failed_tail("p0", excerpt("pytorch-cuda-oom.log"), finished_at=at(5))
    await failed_tail("p1", None, exit_code=3, finished_at=at(9))
    await classifier().round(settle=0)
    [row] = await FailedJob.all()
    assert (row.failure_class, row.pod_id, row.exit_code, row.derived_exit_code) == (
        "GPUOutOfMemory",
        "p0",
        1,
        3,
    )
    assert row.detail is not None and "CUDA out of memory" in row.detail
    # Every failed pod has its own class, the job's being its first failing pod's.
    classes = {pod.pod_id: (pod.failure_class, pod.exit_code) for pod in await FailedPod.all()}
    assert classes == {"p0": ("GPUOutOfMemory", 1), "p1": ("Error", 3)}
    assert {pod.job_id for pod in await FailedPod.all()} == {"job-1"}


async def test_a_job_is_classified_once_settled_and_again_when_a_tail_arrives_later(
    database: str,
) -> None:
    await failed_job()
    await failed_pod("p0")
    # Finished long ago: settled, and classified from what is there.
    assert await classifier().round() == 1
    [row] = await FailedJob.all()
    assert row.failure_class == "Unknown"
    await failed_tail("p0", excerpt("pytorch-cuda-oom.log"))
    assert await classifier().round() == 1
    [row] = await FailedJob.all()
    assert row.failure_class == "GPUOutOfMemory"


async def test_a_job_none_of_whose_pods_failed_is_read_from_its_events(database: str) -> None:
    await failed_job()
    await Store().upsert(Pod, [rows.pod("p0", status="Running")])
    event = rows.event("e1", obj_uid="job-1", kind="TFJob", reason="DeadlineExceeded")
    await Store().upsert(Event, [{**event, "message": "Job was active longer than specified"}])
    await classifier().round(settle=0)
    [row] = await FailedJob.all()
    assert (row.failure_class, row.pod_id, row.pod_name) == ("DeadlineExceeded", "", "")
    assert await FailedPod.all().count() == 0


async def test_an_old_archives_pod_is_classified_from_its_remark(database: str) -> None:
    # Recorded before the tails: the pod's remark is all that is kept of its end.
    await failed_job()
    await failed_pod("p0", remark="OOMKilled (exit code 137)")
    await failed_pod("p1", remark="Evicted: The node was low on resource: memory.")
    await classifier().round(settle=0)
    [row] = await FailedJob.all()
    # Neither pod's finish time is known apart from the pod's: the first by name.
    assert (row.failure_class, row.pod_id, row.container, row.signal) == (
        "OOMKilled",
        "p0",
        None,
        9,
    )


async def test_only_the_stores_clusters_jobs_are_classified(database: str) -> None:
    await Store(cluster="east").upsert(Job, [rows.job("job-e", status="Failed")])
    await failed_job()
    assert await classifier().round(settle=0) == 1
    assert [row.job_id for row in await FailedJob.all()] == ["job-1"]


async def test_a_jobs_class_is_pruned_with_it(database: str) -> None:
    await failed_job(is_in_etcd=False)
    await classifier().round(settle=0)
    assert await FailedJob.all().count() == 1
    await retention.prune(FINISHED + datetime.timedelta(days=1))
    assert await FailedJob.all().count() == 0


async def test_the_migrate_step_classifies_every_clusters_old_failed_jobs(database: str) -> None:
    await failed_job()
    await failed_pod("p0", remark="OOMKilled (exit code 137)")
    await Store(cluster="east").upsert(Job, [rows.job("job-e", status="Failed")])
    counted = await classify_archive(db.connection(), load_rules(), dry_run=True)
    assert counted is not None and (counted.table, counted.what, counted.count) == (
        "job_failure",
        CLASSIFIED,
        2,
    )
    assert await FailedJob.all().count() == 0
    done = await classify_archive(db.connection(), load_rules(), dry_run=False)
    assert done is not None and done.count == 2
    classes = (
        await FailedJob.all().order_by("job_id").values_list("job_id", "cluster", "failure_class")
    )
    assert classes == [("job-1", "default", "OOMKilled"), ("job-e", "east", "Unknown")]
    # A second run finds nothing to do.
    assert await classify_archive(db.connection(), load_rules(), dry_run=False) is None


async def test_the_jobs_detail_shows_its_failure_and_the_list_filters_by_class(
    database: str,
) -> None:
    await failed_job()
    await failed_job("job-2")
    await failed_pod("p0")
    await failed_tail("p0", excerpt("pytorch-cuda-oom.log"), finished_at=at(5))
    await failed_pod("q0", job="job-2", remark="OOMKilled (exit code 137)")
    await classifier().round(settle=0)
    detail = await jobs.job_detail("job-1")
    assert detail is not None
    failure = detail["failure"]
    assert {k: v for k, v in failure.items() if k != "detail"} == {
        "class": "GPUOutOfMemory",
        "pod": "w-p0",
        "container": "pytorch",
        "exit_code": 1,
        "signal": None,
        "derived_exit_code": 1,
    }
    assert "CUDA out of memory" in failure["detail"]
    page = await jobs.list_jobs(JobQuery(failure="GPUOutOfMemory"))
    assert [row["job_id"] for row in page.items] == ["job-1"]
    page = await jobs.list_jobs(JobQuery(failure="OOMKilled"))
    assert [row["job_id"] for row in page.items] == ["job-2"]
    assert (await jobs.list_jobs(JobQuery(failure="NCCLError"))).items == []
    # A job not failed, or not classified yet, has none.
    await Store().upsert(Job, [rows.job("job-3")])
    running = await jobs.job_detail("job-3")
    assert running is not None and "failure" not in running
    # Failed, classified, then run again (a newer version): not failed any more.
    await Store().upsert(Job, [rows.job("job-2", version="11")])
    rerun = await jobs.job_detail("job-2")
    assert rerun is not None and "failure" not in rerun


async def test_a_shard_classifies_only_its_own_namespaces_jobs(database: str) -> None:
    await failed_job("job-k", namespace="kubeflow")
    await failed_job("job-a", namespace="team-a")
    await failed_job("job-b", namespace="team-b")
    store = Store()

    async def write(written: list[FailureRow], pods: list[PodFailureRow]) -> None:
        await store.upsert(FailedJob, written)
        await store.upsert(FailedPod, pods)

    named = Classifier(load_rules(), store, write, Scope(("team-a",)))
    assert await named.round(settle=0) == 1
    patterned = Classifier(load_rules(), store, write, Scope(("team-*",)))
    assert await patterned.round(settle=0) == 1
    assert await named.round(settle=0) == 0
    classified = [row.job_id for row in await FailedJob.all().order_by("job_id")]
    assert classified == ["job-a", "job-b"]
