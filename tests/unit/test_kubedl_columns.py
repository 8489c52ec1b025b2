"""The columns KubeDL >= 0.4 reads: when a job first ran, when it finished (in step with
the seed's ``gmt_finished``), and owner and tenant as ``''`` rather than NULL; and the
pure rules of ``jobarchive migrate`` (which row of a uid is kept, which column widened)."""

import copy
import datetime

from tortoise import fields

from jobarchive.config import load
from jobarchive.recording.convert import job_row, mark_gone
from jobarchive.storage.introspection import Column
from jobarchive.storage.migration.merging import merged, newest_first
from jobarchive.storage.migration.widening import definition
from jobarchive.storage.models import Job
from testbed import objects as o
from testbed.objects import Body

KINDS = load({}).kinds
T1 = "2026-11-20T10:05:00Z"
T2 = "2026-11-20T11:00:00Z"


def at(text: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


def running_time(body: Body) -> datetime.datetime | None:
    return job_row(body, o.job_kind(KINDS, body), None)["gmt_job_running"]


def tfjob(*conditions: Body, completion: str | None = None) -> Body:
    body = o.with_meta(o.example("tfjob-simple.yaml"), uid="u1", resourceVersion="5")
    body["status"] = o.job_status(*conditions, completion=completion)
    return body


def test_a_kubeflow_job_runs_from_its_running_condition_only_while_it_is_true() -> None:
    running = tfjob(o.condition("Created"), o.condition("Running", at=T1))
    assert running_time(running) == at(T1)
    # The training operator rewrites the time when the condition turns False: it is
    # then the finish, not the start (the store keeps the time seen while True).
    done = tfjob(
        o.condition("Created"),
        o.condition("Running", "False", at=T2),
        o.condition("Succeeded", at=T2),
        completion=T2,
    )
    assert running_time(done) is None
    assert running_time(tfjob(o.condition("Created"))) is None


def test_a_rayjob_ran_from_its_start_time_once_past_created() -> None:
    body = o.fixture("rayjob.yaml")
    assert running_time(body) == at("2026-11-20T10:00:02Z")
    pending = copy.deepcopy(body)
    pending["status"]["jobDeploymentStatus"] = "New"
    assert running_time(pending) is None


def test_a_volcano_job_ran_when_it_first_entered_the_running_phase() -> None:
    body = copy.deepcopy(o.fixture("volcano-job.yaml"))
    body["status"]["conditions"] = [
        {"status": "Pending", "lastTransitionTime": "2026-11-20T10:00:05Z"},
        {"status": "Running", "lastTransitionTime": "2026-11-20T10:00:20Z"},
        {"status": "Running", "lastTransitionTime": "2026-11-20T10:30:00Z"},
    ]
    assert running_time(body) == at("2026-11-20T10:00:20Z")


def test_a_trainjob_states_no_running_time() -> None:
    assert running_time(o.fixture("trainjob-torch.yaml")) is None


def test_without_a_tenancy_owner_and_tenant_are_empty_strings_as_kubedl_writes_them() -> None:
    row = job_row(tfjob(o.condition("Created")), o.job_kind(KINDS, tfjob()), None)
    assert (row["owner"], row["tenant"], row["deploy_region"]) == ("", "", None)


def test_stamping_keeps_kubedls_finish_column_in_step_with_the_seeds() -> None:
    body = tfjob(o.condition("Created"), o.condition("Succeeded", at=T2), completion=T2)
    # The store stamps a copy of each row, as here.
    stamped = dict(job_row(body, o.job_kind(KINDS, body), None))
    Job.stamp(stamped)
    assert (stamped["gmt_finished"], stamped["gmt_job_finished"]) == (at(T2), at(T2))
    running = job_row(tfjob(o.condition("Running")), o.job_kind(KINDS, body), None)
    now = at("2026-11-21T00:00:00Z")
    mark_gone(running, now)
    gone = dict(running)
    Job.stamp(gone, now)
    assert (gone["status"], gone["gmt_job_finished"]) == ("Stopped", now)


def test_of_a_uids_rows_the_newest_version_is_kept_then_the_later_write_then_the_last_row() -> None:
    early, late = datetime.datetime(2026, 1, 1), datetime.datetime(2026, 1, 2)
    rows = [
        {"id": 1, "version": "99", "gmt_modified": late},
        {"id": 2, "version": "100", "gmt_modified": early},
        {"id": 3, "version": "opaque", "gmt_modified": late},
    ]
    assert [row["id"] for row in newest_first(rows)] == [2, 1, 3]
    tied = [
        {"id": 4, "version": "7", "gmt_modified": late},
        {"id": 5, "version": "7", "gmt_modified": early},
        {"id": 6, "version": "7", "gmt_modified": early},
    ]
    assert [row["id"] for row in newest_first(tied)] == [4, 6, 5]


def test_the_kept_row_takes_what_it_lacks_from_the_older_rows_newest_first() -> None:
    rows = [
        {"id": 1, "version": "1", "gmt_modified": None, "running": "first", "owner": "a"},
        {"id": 2, "version": "2", "gmt_modified": None, "running": "second", "owner": None},
        {"id": 3, "version": "3", "gmt_modified": None, "running": None, "owner": None},
    ]
    assert merged(rows) == {
        "id": 3,
        "version": "3",
        "gmt_modified": None,
        "running": "second",
        "owner": "a",
    }


def column(data_type: str, length: int | None, nullable: bool = True) -> Column:
    declared = f"{data_type}({length})" if length else data_type
    return Column(data_type, length, nullable, declared)


def test_a_narrower_column_is_widened_and_a_wider_one_kept() -> None:
    name = Job._meta.fields_map["name"]
    assert definition(name, column("varchar", 128), "mysql") == "VARCHAR(253) NOT NULL"
    assert definition(name, column("varchar", 300, nullable=False), "mysql") is None
    # Wide enough, but NULL where jobarchive writes none: the type stays, the rule changes.
    assert definition(name, column("varchar", 300), "mysql") == "varchar(300) NOT NULL"


def test_flags_dates_and_text_take_jobarchives_types_and_defaults() -> None:
    owner, deleted = Job._meta.fields_map["owner"], Job._meta.fields_map["deleted"]
    running = Job._meta.fields_map["gmt_job_running"]
    assert definition(owner, column("varchar", 255), "mysql") == "varchar(255) NOT NULL DEFAULT ''"
    assert definition(deleted, column("tinyint", None), "mysql") == ("tinyint NOT NULL DEFAULT 0")
    assert definition(running, column("datetime", 0), "mysql") == "DATETIME(6) NULL"
    assert definition(running, column("datetime", 6), "mysql") is None
    remark = Job._meta.fields_map["remark"]
    assert isinstance(remark, fields.TextField)
    assert definition(remark, column("text", 65535), "mysql") == "LONGTEXT NULL"
