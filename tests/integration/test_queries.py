"""Reading the history on both databases, over rows written by the real write path:
every filter, keyset pages under concurrent inserts, one job's detail and timeline,
statistics, and bad input refused with a message."""

import datetime
from typing import Any

import pytest

from jobarchive.reading import queries
from jobarchive.reading.queries import BadQuery, EventQuery, JobQuery
from testbed import objects as o
from tests.support.history import History


def names(page: queries.Page) -> list[str]:
    return [item["name"] for item in page.items]


@pytest.fixture
async def history(database: str) -> History:
    async with History() as recorded:
        await recorded.job(
            "mnist",
            created="2026-11-01T08:00:00Z",
            status="Succeeded",
            finished="2026-11-01T09:30:00Z",
            owner="alice",
            tenant="search",
            region="eu-west-1",
            gone=True,
        )
        await recorded.job(
            "mnist-large",
            created="2026-11-02T08:00:00Z",
            status="Failed",
            finished="2026-11-02T08:10:00Z",
            owner="bob",
            tenant="ads",
        )
        await recorded.job(
            "bert",
            kind="PyTorchJob",
            namespace="team-b",
            created="2026-11-03T08:00:00Z",
            owner="alice",
            region="us-east-1",
        )
        await recorded.job(
            "resnet",
            kind="PyTorchJob",
            namespace="team-b",
            created="2026-11-04T08:00:00Z",
            status="Created",
            owner="carol",
        )
    return recorded


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        (JobQuery(), ["resnet", "bert", "mnist-large", "mnist"]),
        (JobQuery(namespace="team-a"), ["mnist-large", "mnist"]),
        (JobQuery(name_prefix="mnist"), ["mnist-large", "mnist"]),
        (JobQuery(name_prefix="nist"), []),
        (JobQuery(name_prefix="MNIST"), ["mnist-large", "mnist"]),
        (JobQuery(namespace="team-a", name_contains="nist"), ["mnist-large", "mnist"]),
        (JobQuery(name_prefix="mnist_"), []),
        (JobQuery(kind="PyTorchJob"), ["resnet", "bert"]),
        (JobQuery(status="failed"), ["mnist-large"]),
        (JobQuery(status="Created"), ["resnet"]),
        (JobQuery(namespace="team-a", region="eu-west-1"), ["mnist"]),
        (JobQuery(tenant="ads"), ["mnist-large"]),
        (JobQuery(owner="alice"), ["bert", "mnist"]),
        (
            JobQuery(created_since=queries.parse_time("2026-11-02", "t")),
            ["resnet", "bert", "mnist-large"],
        ),
        (JobQuery(created_until=queries.parse_time("2026-11-02T08:00:00Z", "t")), ["mnist"]),
        (JobQuery(finished_since=queries.parse_time("2026-11-02", "t")), ["mnist-large"]),
        (JobQuery(finished_until=queries.parse_time("2026-11-02", "t")), ["mnist"]),
        (JobQuery(in_cluster=False), ["mnist"]),
        (JobQuery(in_cluster=True, owner="alice"), ["bert"]),
    ],
    ids=lambda value: repr(value) if not isinstance(value, list) else "",
)
async def test_every_filter_of_the_job_list(
    history: History, query: JobQuery, expected: list[str]
) -> None:
    assert names(await queries.list_jobs(query)) == expected


async def test_a_job_row_reads_as_the_seed_names_it(history: History) -> None:
    [mnist] = (await queries.list_jobs(JobQuery(name_prefix="mnist", status="Succeeded"))).items
    assert mnist["gmt_created"] == "2026-11-01T08:00:00Z"
    assert mnist["gmt_finished"] == "2026-11-01T09:30:00Z"
    assert mnist["duration_seconds"] == 5400
    assert (mnist["is_in_etcd"], mnist["deleted"], mnist["owner"]) == (0, 1, "alice")
    assert mnist["resources"]["Worker"]["replicas"] == 2
    running = (await queries.list_jobs(JobQuery(name_prefix="bert"))).items[0]
    assert running["gmt_finished"] is None and running["duration_seconds"] > 0


async def test_pages_neither_repeat_nor_skip_while_jobs_are_recorded(database: str) -> None:
    async with History() as history:
        for index in range(25):
            await history.job(f"job-{index:02d}", created=f"2026-11-10T10:{index:02d}:00Z")
        seen: list[str] = []
        cursor = None
        for page_number in range(10):
            page = await queries.list_jobs(JobQuery(), limit=7, cursor=cursor)
            seen += names(page)
            # Newer jobs, and one as old as the page boundary, arrive between pages.
            await history.job(f"new-{page_number}", created="2026-11-29T10:00:00Z")
            await history.job(f"tie-{page_number}", created="2026-11-10T10:00:00Z")
            cursor = page.next_cursor
            if cursor is None:
                break
    originals = [f"job-{index:02d}" for index in reversed(range(25))]
    assert [name for name in seen if name.startswith("job-")] == originals
    assert len(seen) == len(set(seen))


async def test_one_job_with_its_pods_replica_summary_and_merged_timeline(database: str) -> None:
    async with History() as history:
        job = await history.job("mnist", status="Failed", finished="2026-11-20T10:20:00Z")
        running = o.running_status("tensorflow", "img", "10.0.0.12", "172.16.0.12")
        chief = await history.pod(
            job, "Worker", 0, o.terminated_status(running, 137, "OOMKilled", "2026-11-20T10:20:00Z")
        )
        await history.pod(job, "Worker", 1, running)
        await history.pod(job, "Worker", 2, running, gone=True)
        await history.event(job, "SuccessfulCreatePod", "Created pod", first="2026-11-20T10:00:01Z")
        await history.event(chief, "Scheduled", "Assigned", first="2026-11-20T10:00:02Z")
        await history.event(
            chief, "OOMKilling", "Out of memory", type="Warning", first="2026-11-20T10:19:59Z"
        )
        await history.event(
            job, "JobFailed", "Job failed", type="Warning", first="2026-11-20T10:20:01Z"
        )
    detail = await queries.job_detail(job["metadata"]["uid"])
    assert detail is not None and detail["replicas"] == {
        "worker": {"active": 1, "succeeded": 0, "failed": 1, "stopped": 1}
    }
    failed = next(pod for pod in detail["pods"] if pod["status"] == "Failed")
    assert (failed["host_ip"], failed["gmt_finished"]) == ("10.0.0.12", "2026-11-20T10:20:00Z")
    assert "OOMKilled" in failed["remark"]
    timeline = [(event["kind"], event["reason"]) for event in detail["events"]]
    assert timeline == [
        ("TFJob", "SuccessfulCreatePod"),
        ("Pod", "Scheduled"),
        ("Pod", "OOMKilling"),
        ("TFJob", "JobFailed"),
    ]
    assert len((await queries.find_jobs("team-a/mnist")).items) == 1
    assert (await queries.find_jobs(job["metadata"]["uid"])).items != []
    assert await queries.job_detail("no-such-uid") is None


async def test_a_name_used_twice_finds_both_jobs_newest_first(database: str) -> None:
    async with History() as history:
        await history.job(
            "mnist",
            created="2026-11-01T00:00:00Z",
            status="Succeeded",
            finished="2026-11-01T01:00:00Z",
            gone=True,
        )
        await history.job("mnist", created="2026-11-02T00:00:00Z")
    found = await queries.find_jobs("team-a/mnist")
    assert [job["gmt_created"] for job in found.items] == [
        "2026-11-02T00:00:00Z",
        "2026-11-01T00:00:00Z",
    ]


async def test_events_by_object_type_reason_and_time_in_pages(database: str) -> None:
    async with History() as history:
        job = await history.job("mnist")
        pod = await history.pod(job, "Worker", 0)
        for minute in range(12):
            await history.event(
                pod,
                "BackOff",
                "Back-off restarting",
                type="Warning",
                first=f"2026-11-20T10:{minute:02d}:00Z",
            )
        await history.event(pod, "Scheduled", "Assigned", first="2026-11-20T09:59:00Z")
        await history.event(job, "SuccessfulCreatePod", "Created", first="2026-11-20T09:58:00Z")

    async def reasons(query: EventQuery, limit: int = 50) -> list[str]:
        collected, cursor = [], None
        while True:
            page = await queries.list_events(query, limit=limit, cursor=cursor)
            collected += [item["reason"] for item in page.items]
            if page.next_cursor is None:
                return collected
            cursor = page.next_cursor

    warnings = EventQuery(namespace="team-a", type="Warning")
    assert await reasons(warnings, limit=5) == ["BackOff"] * 12
    assert await reasons(EventQuery(namespace="team-a", object_kind="TFJob")) == [
        "SuccessfulCreatePod"
    ]
    pod_name = pod["metadata"]["name"]
    by_name = EventQuery(namespace="team-a", object_name=pod_name)
    assert (await reasons(by_name, limit=4))[-1] == "Scheduled"
    window = EventQuery(
        since=queries.parse_time("2026-11-20T10:05:00Z", "t"),
        until=queries.parse_time("2026-11-20T10:07:00Z", "t"),
    )
    assert await reasons(window) == ["BackOff", "BackOff"]
    assert await reasons(EventQuery(object_uid=pod["metadata"]["uid"], reason="Scheduled")) == [
        "Scheduled"
    ]


async def test_stats_count_jobs_and_time_the_finished_ones(history: History) -> None:
    by_status = {row["status"]: row for row in await queries.stats("status")}
    assert by_status["Succeeded"]["jobs"] == 1
    assert by_status["Succeeded"]["avg_duration_seconds"] == 5400
    assert by_status["Failed"]["max_duration_seconds"] == 600
    assert by_status["Running"]["finished"] == 0
    by_owner = {row["owner"]: row["jobs"] for row in await queries.stats("owner")}
    assert by_owner == {"alice": 2, "bob": 1, "carol": 1}
    since = queries.parse_time("2026-11-03", "t")
    assert {row["kind"]: row["jobs"] for row in await queries.stats("kind", since)} == {
        "PyTorchJob": 2
    }


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: queries.list_jobs(JobQuery(status="Exploded")), "status: 'Exploded'"),
        (lambda: queries.list_jobs(JobQuery(), cursor="garbage!"), "cursor"),
        (lambda: queries.list_jobs(JobQuery(), cursor="WzEsMl0"), "cursor"),
        (lambda: queries.list_jobs(JobQuery(), limit=0), "limit"),
        (lambda: queries.list_events(EventQuery(), limit=10_000), "limit"),
        (lambda: queries.stats("colour"), "by: 'colour'"),
    ],
)
async def test_bad_input_is_refused_with_a_message(
    database: str, call: object, message: str
) -> None:
    with pytest.raises(BadQuery, match=message):
        await call()  # type: ignore[operator]


def test_dates_parse_as_utc_and_garbage_is_named() -> None:
    assert queries.parse_time("2026-11-29", "x") == datetime.datetime(
        2026, 11, 29, tzinfo=datetime.UTC
    )
    assert queries.parse_time("2026-11-29T12:00:00+02:00", "x").hour == 10
    with pytest.raises(BadQuery, match="--since: 'yesterday'"):
        queries.parse_time("yesterday", "--since")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0001-01-01T00:00:00+05:00", queries.EARLIEST),
        ("0001-01-01", queries.EARLIEST),
        ("9999-12-31T23:00:00-05:00", queries.LATEST),
        ("2026-11-29T10:00:00+14:00", datetime.datetime(2026, 11, 28, 20, tzinfo=datetime.UTC)),
    ],
)
def test_any_year_and_any_offset_is_a_bound_the_database_can_hold(
    text: str, expected: datetime.datetime
) -> None:
    assert queries.parse_time(text, "since") == expected


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: queries.decode_cursor(queries.encode_cursor("events", None, 3), "jobs"), "jobs"),
        (lambda: queries.decode_cursor("W" * 5000, "jobs"), "cursor"),
        (lambda: queries.decode_cursor("WwpbWwpbWwpb" * 10, "jobs"), "cursor"),
        (lambda: queries.one_of("kind", "tfjob\nINFO forged", ("TFJob",)), r"'tfjob\\nINFO"),
        (lambda: queries.fits("namespace", "n" * 129, 128), "129 characters"),
    ],
)
def test_bad_input_is_refused_with_one_escaped_line(call: Any, message: str) -> None:
    with pytest.raises(BadQuery, match=message) as refused:
        call()
    assert "\n" not in str(refused.value)
