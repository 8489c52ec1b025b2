"""The write path on both databases: the same behaviour on MariaDB and on SQLite."""

import datetime
from typing import Any

from jobarchive.core.rows import MESSAGE_LENGTH
from jobarchive.recording.convert import mark_gone
from jobarchive.storage import database as db
from jobarchive.storage import schema
from jobarchive.storage.models import Event, Job, Pod
from jobarchive.storage.store import Store
from tests.support.rows import T0, event, job, pod
from tests.support.waiting import clock_past


async def test_a_new_job_is_inserted_whole(database: str) -> None:
    await Store().upsert(Job, [job(tenant="search", gmt_finished=T0)])
    row = await Job.get(job_id="job-1")
    assert (row.name, row.status, row.tenant, row.version) == ("mnist", "Running", "search", "10")
    assert (row.gmt_created, row.gmt_finished) == (T0, T0)
    assert (row.deleted, row.is_in_etcd) == (False, True)


async def test_a_newer_version_updates_the_one_row(database: str) -> None:
    await Store().upsert(Job, [job()])
    await Store().upsert(Job, [job(version="11", status="Succeeded")])
    rows = await Job.all()
    assert [(r.status, r.version) for r in rows] == [("Succeeded", "11")]


async def test_an_older_version_is_skipped_entirely(database: str) -> None:
    await Store().upsert(Pod, [pod(version="20", status="Succeeded")])
    before = await Pod.get(pod_id="pod-1")
    await Store().upsert(Pod, [pod(version="19", status="Running", image="other")])
    after = await Pod.get(pod_id="pod-1")
    assert (after.status, after.version, after.image) == ("Succeeded", "20", "img")
    assert after.gmt_modified == before.gmt_modified


async def test_versions_compare_as_integers_not_as_text(database: str) -> None:
    await Store().upsert(Job, [job(version="9")])
    await Store().upsert(Job, [job(version="10", status="Failed")])
    await Store().upsert(Job, [job(version="9", status="Running")])
    assert (await Job.get(job_id="job-1")).status == "Failed"


async def test_versions_beyond_64_bits_still_compare(database: str) -> None:
    await Store().upsert(Job, [job(version="184467440737095516160")])
    await Store().upsert(Job, [job(version="18446744073709551616", status="Failed")])
    assert (await Job.get(job_id="job-1")).status == "Running"


async def test_non_numeric_versions_let_the_newer_write_win(database: str) -> None:
    await Store().upsert(Job, [job(version="b")])
    await Store().upsert(Job, [job(version="a", status="Failed")])
    assert (await Job.get(job_id="job-1")).status == "Failed"


async def test_the_same_version_again_is_applied(database: str) -> None:
    await Store().upsert(Job, [job()])
    row = job()
    mark_gone(row, T0)
    await Store().upsert(Job, [row])
    stored = await Job.get(job_id="job-1")
    assert (stored.status, stored.deleted, stored.is_in_etcd) == ("Stopped", True, False)


async def test_the_same_uid_twice_in_one_batch_keeps_the_newest(database: str) -> None:
    await Store().upsert(Job, [job(version="12", status="Failed"), job(version="11")])
    await Store().upsert(
        Job, [job(uid="job-2", version="5"), job(uid="job-2", version="6", status="Failed")]
    )
    assert (await Job.get(job_id="job-1")).status == "Failed"
    assert (await Job.get(job_id="job-2")).status == "Failed"


async def test_gmt_created_is_kept_and_gmt_modified_advances_on_upserts(database: str) -> None:
    await Store().upsert(Job, [job()])
    first = await Job.get(job_id="job-1")
    await clock_past(first.gmt_modified)
    await Store().upsert(Job, [job(version="11", gmt_created=T0 + datetime.timedelta(days=1))])
    second = await Job.get(job_id="job-1")
    assert second.gmt_created == T0
    assert second.gmt_modified > first.gmt_modified


async def test_a_row_without_creation_time_is_created_now(database: str) -> None:
    before = datetime.datetime.now(tz=datetime.UTC)
    await Store().upsert(Event, [event(gmt_created=None)])
    row = await Event.get(event_id="ev-1")
    assert before <= row.gmt_created <= datetime.datetime.now(tz=datetime.UTC)
    assert row.gmt_created == row.gmt_modified


async def test_save_stamps_both_timestamps_and_advances_gmt_modified(database: str) -> None:
    fields: dict[str, Any] = {k: v for k, v in job().items() if k != "gmt_created"}
    created = await Job.create(**fields)
    assert created.gmt_created == created.gmt_modified
    first = created.gmt_modified
    await clock_past(first)
    created.status = "Succeeded"
    await created.save()
    assert created.gmt_modified > first
    await clock_past(created.gmt_modified)
    created.status = "Failed"
    await created.save(update_fields=["status"])
    stored = await Job.get(job_id="job-1")
    assert stored.status == "Failed"
    assert stored.gmt_modified == created.gmt_modified > first
    assert stored.gmt_created == created.gmt_created


async def test_a_repeated_event_updates_its_one_row(database: str) -> None:
    later = T0 + datetime.timedelta(minutes=5)
    await Store().upsert(Event, [event()])
    await Store().upsert(Event, [event(version="11", count=5, last_timestamp=later)])
    rows = await Event.all()
    assert [(r.count, r.last_timestamp) for r in rows] == [(5, later)]


async def test_hostile_text_is_stored_within_its_bound(database: str) -> None:
    message = (
        "'; DROP TABLE job_info; -- \\ \" \U0001d518\U0001d52b\U0001d526 🚀 中文 \x00 " * 25_000
    )[:1_048_576]
    name = "n" * 253
    await Store().upsert(Event, [event(message=message, obj_name=name, name="e" * 512)])
    row = await Event.get(event_id="ev-1")
    cut = message[: MESSAGE_LENGTH - 1] + "…"
    assert (row.message, row.obj_name, row.name) == (cut, name, "e" * 512)
    assert await Job.all().count() == 0


async def test_many_rows_go_in_chunks(database: str) -> None:
    await Store().upsert(Pod, [pod(uid=f"pod-{i}", name=f"p-{i}") for i in range(1203)])
    assert await Pod.all().count() == 1203


async def test_lookups_find_live_jobs_and_stored_pods(database: str) -> None:
    store = Store()
    await store.upsert(Job, [job(uid="old", is_in_etcd=False), job(uid="new")])
    await store.upsert(Pod, [pod(job_id="new")])
    assert await store.live_job_uid("kubeflow", "mnist") == "new"
    assert await store.live_job_uid("kubeflow", "other") is None
    assert await store.pod_job_uid("pod-1") == "new"
    assert await store.pod_job_uid("pod-2") is None


async def test_what_attribution_starts_from_live_jobs_and_recent_pods(database: str) -> None:
    store = Store()
    old = T0 - datetime.timedelta(days=30)
    await store.upsert(Job, [job(uid="gone", is_in_etcd=False), job(uid="live")])
    await store.upsert(Pod, [pod(uid="live-pod"), pod(uid="gone-pod", is_in_etcd=False)])
    assert await store.live_jobs() == [("kubeflow", "mnist", "live")]
    recent = await store.recent_pods(since=old, limit=10)
    assert sorted(recent) == [("gone-pod", "job-1"), ("live-pod", "job-1")]
    future = datetime.datetime.now(tz=datetime.UTC) + datetime.timedelta(hours=1)
    assert await store.recent_pods(since=future, limit=10) == [("live-pod", "job-1")]


async def test_upsert_returns_how_many_rows_the_guard_kept(database: str) -> None:
    store = Store()
    assert await store.upsert(Job, [job(uid="a"), job(uid="b")]) == 0
    newer_and_older = [job(uid="a", version="9"), job(uid="b", version="11"), job(uid="c")]
    assert await store.upsert(Job, newer_and_older) == 1
    # The same version again is rewritten, not skipped: gone-marks reuse the stored one.
    assert await store.upsert(Job, [job(uid="a", status="Failed")]) == 0
    assert await store.upsert(Pod, [pod(uid=f"p{i}", version="5") for i in range(600)]) == 0
    assert await store.upsert(Pod, [pod(uid=f"p{i}", version="4") for i in range(600)]) == 600
    statuses = dict(await Job.all().values_list("job_id", "status"))
    assert statuses == {"a": "Failed", "b": "Running", "c": "Running"}


async def test_a_fresh_schema_has_every_index_the_models_declare(database: str) -> None:
    assert await schema.ensure_indexes(db.connection()) == []


async def test_a_fresh_schema_has_every_column_the_models_declare(database: str) -> None:
    assert await schema.ensure_columns(db.connection()) == []


async def test_rows_in_etcd_are_chosen_by_group_and_kind_for_reconciliation(database: str) -> None:
    store = Store()
    await store.upsert(
        Job,
        [
            job(uid="kubeflow-tf"),
            job(uid="kubedl-tf", api_version="training.kubedl.io/v1alpha1"),
            job(uid="volcano", kind="Job", api_version="batch.volcano.sh/v1alpha1"),
            job(uid="plain-batch", kind="Job", api_version="batch/v1"),
            job(uid="legacy-tf", api_version=None),
        ],
    )
    later = datetime.datetime.now(datetime.UTC) + datetime.timedelta(minutes=1)
    listed = {("kubeflow.org", "TFJob"), ("batch.volcano.sh", "Job")}
    chosen = await store.uids_in_etcd(Job, later, listed)
    assert sorted(chosen) == ["kubeflow-tf", "volcano"]
    with_legacy = await store.uids_in_etcd(Job, later, listed, ["TFJob"])
    assert sorted(with_legacy) == ["kubeflow-tf", "legacy-tf", "volcano"]
    assert len(await store.uids_in_etcd(Job, later)) == 5
