"""KubeDL's reads of job_info and replica_info, statement for statement, over a
MariaDB database that jobarchive's real write path filled with jobs of every
tracked kind; each row read is scanned into KubeDL's Go types and converted as its
console converts it (tests.support.kubedl).

The statements are gorm v1.9.12's SQL for KubeDL's chains (kubedl-io/kubedl at
b93a2b4), with its '?' placeholders; LIMIT and OFFSET are inlined by gorm's MySQL
dialect, as here. Parameters go as go-sql-driver sends them: times as naive UTC.
"""

import asyncio
import collections
import dataclasses
import datetime
from collections.abc import Iterator
from typing import Any

import pytest

from testbed.mariadb import Databases
from tests.support import kubedl
from tests.support.kubedl import DMO_JOB, DMO_POD
from tests.support.kubedl_estate import WINDOW, Estate, at, build_estate, record_estate

# pkg/storage/backends/objects/mysql/mysql.go ListJobs, Pagination set (/job/list with
# current_page and page_size, console/backend/pkg/routers/api/job.go ListJobs): gorm's
# Count runs first, without the ORDER BY.
LIST_JOBS_COUNT = "SELECT count(*) FROM `job_info` WHERE (gmt_created < ?) AND (gmt_created > ?)"
# pkg/storage/backends/objects/mysql/mysql.go ListJobs, the same query's second page of 5.
LIST_JOBS_PAGE_2_OF_5 = (
    "SELECT * FROM `job_info` WHERE (gmt_created < ?) AND (gmt_created > ?) "
    "ORDER BY gmt_created DESC LIMIT 5 OFFSET 5"
)
# pkg/storage/backends/objects/mysql/mysql.go ListJobs with only the time window:
# /job/statistics (handlers/job.go GetJobStatisticsFromBackend).
LIST_JOBS_IN_WINDOW = (
    "SELECT * FROM `job_info` WHERE (gmt_created < ?) AND (gmt_created > ?) "
    "ORDER BY gmt_created DESC"
)
# pkg/storage/backends/objects/mysql/mysql.go ListJobs with Status "Running":
# /job/running-jobs (handlers/job.go GetRunningJobsFromBackend).
LIST_RUNNING_JOBS = (
    "SELECT * FROM `job_info` WHERE (gmt_created < ?) AND (gmt_created > ?) "
    "AND (status = ?) ORDER BY gmt_created DESC"
)
# pkg/storage/backends/objects/mysql/mysql.go ListJobs with Name and Namespace, as
# /job/detail?job_name= looks a job up (routers/api/job.go GetJobDetail).
LIST_JOBS_BY_NAME = (
    "SELECT * FROM `job_info` WHERE (gmt_created < ?) AND (gmt_created > ?) "
    "AND (name LIKE ?) AND (namespace LIKE ?) ORDER BY gmt_created DESC"
)
# pkg/storage/backends/objects/mysql/mysql.go GetJob(ns, name, jobID, kind, ""):
# handlers/job.go GetDetailedJobFromBackend for a job without a region.
GET_JOB = (
    "SELECT * FROM `job_info` WHERE (`job_info`.`name` = ?) AND (`job_info`.`namespace` = ?) "
    "AND (`job_info`.`job_id` = ?) AND (`job_info`.`kind` = ?) "
    "ORDER BY `job_info`.`id` ASC LIMIT 1"
)
# pkg/storage/backends/objects/mysql/mysql.go GetJob(ns, name, jobID, kind, region):
# the same, for a job listed with a deploy_region.
GET_JOB_IN_REGION = (
    "SELECT * FROM `job_info` WHERE (`job_info`.`name` = ?) AND (`job_info`.`namespace` = ?) "
    "AND (`job_info`.`job_id` = ?) AND (`job_info`.`kind` = ?) "
    "AND (`job_info`.`deploy_region` = ?) ORDER BY `job_info`.`id` ASC LIMIT 1"
)
# pkg/storage/backends/objects/mysql/mysql.go GetJob(ns, "", jobID, kind, ""):
# /job/detail?job_id= (routers/api/job.go GetJobDetail, then GetDetailedJobFromBackend).
GET_JOB_FOR_DETAIL = (
    "SELECT * FROM `job_info` WHERE (`job_info`.`namespace` = ?) AND (`job_info`.`job_id` = ?) "
    "AND (`job_info`.`kind` = ?) ORDER BY `job_info`.`id` ASC LIMIT 1"
)
# pkg/storage/backends/objects/mysql/mysql.go GetJob(ns, "", jobID, kind, region): the
# same for a job the list showed with a deploy_region.
GET_JOB_FOR_DETAIL_IN_REGION = (
    "SELECT * FROM `job_info` WHERE (`job_info`.`namespace` = ?) AND (`job_info`.`job_id` = ?) "
    "AND (`job_info`.`kind` = ?) AND (`job_info`.`deploy_region` = ?) "
    "ORDER BY `job_info`.`id` ASC LIMIT 1"
)
# pkg/storage/backends/objects/mysql/mysql.go GetJob("", "", jobID, "", ""): StopJob and
# DeleteJob as controllers/persist/object/job/*_persist_controller.go call them for a
# job that is gone (its namespace, name and kind are empty then).
GET_JOB_BY_ID = (
    "SELECT * FROM `job_info` WHERE (`job_info`.`job_id` = ?) ORDER BY `job_info`.`id` ASC LIMIT 1"
)
# pkg/storage/backends/objects/mysql/mysql.go ListPods(ns, "", jobID): the pods of
# /job/detail?job_id= (handlers/job.go GetDetailedJobFromBackend).
LIST_PODS = (
    "SELECT * FROM `replica_info` WHERE (`replica_info`.`namespace` = ?) "
    "AND (`replica_info`.`job_id` = ?) "
    "ORDER BY replica_type,CAST(SUBSTRING_INDEX(name, '-', -1) AS SIGNED),gmt_created DESC"
)


# ListJobs binds EndTime first ("gmt_created < ?"), then StartTime.
BOUNDS = (WINDOW[1], WINDOW[0])


def like(text: str) -> str:
    """A name or namespace filter as ListJobs binds it: "%" + text + "%"."""
    return f"%{text}%"


@dataclasses.dataclass(frozen=True)
class Recorded:
    """The filled database, KubeDL's connection to it, and when it was filled."""

    conn: Any
    estate: Estate
    since: datetime.datetime
    until: datetime.datetime


def utcnow() -> datetime.datetime:
    """Now, naive UTC, as KubeDL's console's time.Now() in Local = UTC."""
    return datetime.datetime.now(datetime.UTC).replace(tzinfo=None)


@pytest.fixture(scope="module")
def recorded(mysql_databases: Databases) -> Iterator[Recorded]:
    """One database for the module, filled once through jobarchive's write path; the
    tests only read it."""
    db_url = mysql_databases.create("kubedl_reads")
    estate = build_estate()
    since = utcnow()
    asyncio.run(record_estate(db_url, estate))
    until = utcnow()
    conn = kubedl.connect(db_url)
    try:
        yield Recorded(conn, estate, since, until)
    finally:
        conn.close()


def list_jobs(recorded: Recorded) -> list[dict[str, Any]]:
    """Every job of the console's window, scanned."""
    return kubedl.scan_all(DMO_JOB, kubedl.select(recorded.conn, LIST_JOBS_IN_WINDOW, *BOUNDS))


def infos(jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The console's JobInfo of each scanned job."""
    return [kubedl.console_job_info(job, utcnow()) for job in jobs]


def list_pods(recorded: Recorded, name: str) -> list[dict[str, Any]]:
    """The scanned pods of a planned job, in KubeDL's order."""
    job = recorded.estate[name]
    return kubedl.scan_all(DMO_POD, kubedl.select(recorded.conn, LIST_PODS, job.namespace, job.uid))


def test_every_job_in_the_window_scans_into_kubedls_job_and_converts_for_the_console(
    recorded: Recorded,
) -> None:
    jobs = list_jobs(recorded)
    assert sorted(job["job_id"] for job in jobs) == sorted(job.uid for job in recorded.estate)
    assert len(infos(jobs)) == len(recorded.estate)


def test_every_pod_of_every_job_scans_into_kubedls_pod_and_converts_for_the_console(
    recorded: Recorded,
) -> None:
    for job in recorded.estate:
        pods = list_pods(recorded, job.name)
        assert sorted(pod["pod_id"] for pod in pods) == sorted(
            pod["metadata"]["uid"] for pod in job.pods
        ), job.name
        assert len([kubedl.console_pod_spec(pod) for pod in pods]) == len(job.pods)


def test_the_job_list_counts_every_job_and_pages_newest_first(recorded: Recorded) -> None:
    (count,) = kubedl.select(recorded.conn, LIST_JOBS_COUNT, *BOUNDS)
    page = kubedl.scan_all(DMO_JOB, kubedl.select(recorded.conn, LIST_JOBS_PAGE_2_OF_5, *BOUNDS))
    newest_first = sorted(recorded.estate, key=lambda job: job.created, reverse=True)
    assert count["count(*)"] == len(recorded.estate)
    assert [job["name"] for job in page] == [job.name for job in newest_first[5:10]]


def test_the_time_bounds_hold_only_jobs_created_strictly_between_them(recorded: Recorded) -> None:
    start, end = at("2026-11-20T08:00:00Z"), at("2026-11-20T08:30:00Z")
    found = kubedl.select(recorded.conn, LIST_JOBS_IN_WINDOW, end, start)
    # tf-mnist was created at the start and resnet at the end: both bounds are strict.
    assert [row["name"] for row in found] == ["xgb-iris", "pt-bert"]


def test_the_name_and_namespace_filters_match_substrings(recorded: Recorded) -> None:
    found = kubedl.select(recorded.conn, LIST_JOBS_BY_NAME, *BOUNDS, like("sweep"), like("team-"))
    assert [row["name"] for row in found] == ["rl-sweep-oom", "rl-sweep"]


def test_running_jobs_are_the_jobs_whose_status_is_running(recorded: Recorded) -> None:
    rows = kubedl.select(recorded.conn, LIST_RUNNING_JOBS, *BOUNDS, "Running")
    running = infos(kubedl.scan_all(DMO_JOB, rows))
    expected = {job.name for job in recorded.estate if job.status == "Running"}
    assert {info["name"] for info in running} == expected
    assert len(expected) == 7


def test_the_console_counts_the_jobs_of_each_status(recorded: Recorded) -> None:
    shown = collections.Counter(info["jobStatus"] for info in infos(list_jobs(recorded)))
    assert shown == collections.Counter(job.status for job in recorded.estate)
    assert shown == {
        "Running": 7,
        "Succeeded": 4,
        "Failed": 3,
        "Stopped": 2,
        "Created": 2,
        "Restarting": 1,
    }


def test_statistics_count_jobs_per_owner_and_jobs_without_one_as_anonymous(
    recorded: Recorded,
) -> None:
    per_user = kubedl.jobs_per_user(infos(list_jobs(recorded)))
    assert per_user == {
        "alice": 2,
        "bob": 2,
        "carol": 1,
        "dave": 1,
        "erin": 1,
        kubedl.ANONYMOUS: len(recorded.estate) - 7,
    }


def test_finished_jobs_show_their_finish_as_end_time_and_duration(recorded: Recorded) -> None:
    shown = {info["name"]: info for info in infos(list_jobs(recorded))}
    finished = [job for job in recorded.estate if job.finished is not None]
    assert len(finished) == 7
    for job in finished:
        assert job.finished is not None
        assert (shown[job.name]["endTime"], shown[job.name]["durationTime"]) == (
            job.finished.strftime(kubedl.CONSOLE_TIME_FORMAT),
            kubedl.get_time_differ(job.created, job.finished),
        ), job.name


def test_unfinished_jobs_show_no_end_time(recorded: Recorded) -> None:
    shown = {info["name"]: info for info in infos(list_jobs(recorded))}
    for job in recorded.estate:
        if job.finished is None and not job.gone:
            assert shown[job.name]["endTime"] == "", job.name


def test_gone_jobs_show_stopped_and_finished_when_they_were_deleted(recorded: Recorded) -> None:
    jobs = {job["name"]: job for job in list_jobs(recorded)}
    shown = {info["name"]: info for info in infos(list(jobs.values()))}
    for name in ("resnet", "kdl-mpi"):
        finished = jobs[name]["gmt_job_finished"]
        assert recorded.since <= finished <= recorded.until, name
        assert (shown[name]["jobStatus"], shown[name]["endTime"]) == (
            "Stopped",
            finished.strftime(kubedl.CONSOLE_TIME_FORMAT),
        )


def test_the_console_shows_owner_and_region_from_the_tenancy_annotation(
    recorded: Recorded,
) -> None:
    shown = {info["name"]: info for info in infos(list_jobs(recorded))}
    for job in recorded.estate:
        assert (shown[job.name]["jobUserName"], shown[job.name]["deployRegion"]) == (
            job.owner,
            job.region or "",
        ), job.name


def test_get_job_finds_each_job_by_name_namespace_id_and_kind(recorded: Recorded) -> None:
    for job in recorded.estate:
        if job.region:
            args = (job.name, job.namespace, job.uid, job.kind, job.region)
            rows = kubedl.select(recorded.conn, GET_JOB_IN_REGION, *args)
        else:
            rows = kubedl.select(recorded.conn, GET_JOB, job.name, job.namespace, job.uid, job.kind)
        assert [kubedl.scan(DMO_JOB, row)["job_id"] for row in rows] == [job.uid], job.name


def test_the_detail_page_by_job_name_finds_the_job_with_the_region_it_listed(
    recorded: Recorded,
) -> None:
    listed = kubedl.select(recorded.conn, LIST_JOBS_BY_NAME, *BOUNDS, like("mnist"), like("kubedl"))
    first = kubedl.console_job_info(kubedl.scan(DMO_JOB, listed[0]), utcnow())
    args = ("mnist", "kubedl", first["id"], "TFJob", first["deployRegion"])
    (found,) = kubedl.select(recorded.conn, GET_JOB_IN_REGION, *args)
    assert (found["job_id"], found["deploy_region"]) == (
        recorded.estate["mnist"].uid,
        "cn-hangzhou",
    )


def test_get_job_by_id_alone_finds_each_job_as_the_delete_flow_looks_it_up(
    recorded: Recorded,
) -> None:
    for job in recorded.estate:
        rows = kubedl.select(recorded.conn, GET_JOB_BY_ID, job.uid)
        assert [kubedl.scan(DMO_JOB, row)["name"] for row in rows] == [job.name]


def test_pods_come_by_replica_type_then_by_their_index_as_a_number(recorded: Recorded) -> None:
    names = [pod["name"] for pod in list_pods(recorded, "pt-bert")]
    assert names == ["pt-bert-master-0"] + [f"pt-bert-worker-{i}" for i in range(11)]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("tf-mnist", {"worker": (0, 2, 0, 0)}),
        ("pt-bert", {"master": (1, 0, 0, 0), "worker": (11, 0, 0, 0)}),
        ("xgb-iris", {"master": (0, 0, 1, 0), "worker": (0, 1, 1, 0)}),
        ("resnet", {"worker": (0, 0, 0, 1)}),
        ("pi", {"launcher": (0, 1, 0, 0)}),
        ("mnist", {"ps": (1, 0, 0, 0), "worker": (3, 0, 0, 0)}),
    ],
)
def test_the_detail_page_counts_each_replica_types_pods_by_status(
    recorded: Recorded, name: str, expected: dict[str, tuple[int, int, int, int]]
) -> None:
    job = recorded.estate[name]
    if job.region:
        args = (job.namespace, job.uid, job.kind, job.region)
        (found,) = kubedl.select(recorded.conn, GET_JOB_FOR_DETAIL_IN_REGION, *args)
    else:
        (found,) = kubedl.select(
            recorded.conn, GET_JOB_FOR_DETAIL, job.namespace, job.uid, job.kind
        )
    assert kubedl.console_job_info(kubedl.scan(DMO_JOB, found), utcnow())["id"] == job.uid
    counts = kubedl.replica_statuses(list_pods(recorded, name))
    assert {
        replica: (count["active"], count["succeeded"], count["failed"], count["stopped"])
        for replica, count in counts.items()
    } == expected


def test_a_failed_pod_shows_its_times_addresses_and_why_it_failed(recorded: Recorded) -> None:
    specs = {
        spec["name"]: spec for spec in map(kubedl.console_pod_spec, list_pods(recorded, "xgb-iris"))
    }
    master = specs["xgb-iris-master-0"]
    assert master["jobStatus"] == "Failed"
    assert (master["createTime"], master["startTime"], master["endTime"]) == (
        "2026-11-20 08:20:05",
        "2026-11-20 08:20:30",
        "2026-11-20 08:49:50",
    )
    assert master["durationTime"] == "29m45s"
    assert master["hostIp"] and master["containerIp"]
    assert "OOMKilled" in master["remark"] and "137" in master["remark"]


def test_the_console_model_panics_on_a_null_owner_as_go_does() -> None:
    row: dict[str, Any] = {field.column: None for field in DMO_JOB.fields if field.pointer}
    row |= {"id": 1, "name": "j", "namespace": "n", "job_id": "u", "version": "1"}
    row |= {"status": "Running", "kind": "TFJob", "resources": "{}"}
    row |= {"gmt_created": at("2026-11-20T08:00:00Z"), "gmt_modified": utcnow()}
    with pytest.raises(kubedl.NilPointerDereference, match="owner is NULL"):
        kubedl.console_job_info(kubedl.scan(DMO_JOB, row), utcnow())


def test_the_scanner_refuses_a_null_in_a_non_pointer_field_and_a_version_go_cannot_parse() -> None:
    row: dict[str, Any] = {field.column: None for field in DMO_POD.fields}
    row |= {"id": 1, "version": "v2"}
    with pytest.raises(kubedl.ScanError) as failure:
        kubedl.scan(DMO_POD, row)
    assert "replica_info.name (dmo.Pod.Name string): NULL in a non-pointer field" in str(
        failure.value
    )
    assert "'v2' fails strconv.ParseInt" in str(failure.value)
