"""A job carries nothing its reader may not list on its own: its Events, its pods and
which of them kept a log tail each come only under their own grant, on every face of a
real ``jobarchive serve`` over HTTPS, its callers reviewed by kmock's emulated API
server. What is left out is named in ``omitted`` with the grant it lacks: in the JSON
API's answer, in an ArchivedJob's status (through a real kubectl, and in a Table with
includeObject=Object), on the console's job page, and by the CLI through the API."""

import json
import pathlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
import pytest

from jobarchive.reading.api import PREFIX as API
from jobarchive.reading.kube.discovery import PREFIX as KUBE
from testbed.cluster import Cluster, Reviews
from tests.support.console import keep_log_tail
from tests.support.history import History
from tests.support.kube import (
    Kubectl,
    Server,
    jobarchive,
    kube_archive,
    kubectls,
    serving,
    write_kubeconfig,
)

pytestmark = pytest.mark.e2e
ARCHIVE = "archive.jobarchive.io"
# alice reads all of team-a; carol its archived jobs only; dave its archived jobs, pods
# and Events, not their logs; frank may get team-a's jobs.jobarchive.io, not list them.
ALICE, CAROL, DAVE, FRANK = "alice-token", "carol-token", "dave-token", "frank-token"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
FORBIDDEN_EVENTS = f"forbidden: list archivedevents.{ARCHIVE} in namespace team-a"
FORBIDDEN_PODS = f"forbidden: list archivedpods.{ARCHIVE} in namespace team-a"
FORBIDDEN_LOGS = f"forbidden: get archivedjobs/log.{ARCHIVE} in namespace team-a"
FORBIDDEN_LIST = "forbidden: list jobs.jobarchive.io in namespace team-a"
OOM_MESSAGE = "Memory cgroup out of memory"


@pytest.fixture
async def uids(archive: str) -> dict[str, Any]:
    """kube_archive's jobs; the OOM-killed pod of the first bert-finetune kept a log tail."""
    async with History() as history:
        made = await kube_archive(history)
    job = {"metadata": {"uid": made["first"]}}
    await keep_log_tail(job, {"metadata": made["doomed"]}, b"CUDA out of memory\n")
    return made


@pytest.fixture
def reviews(cluster: Cluster) -> Reviews:
    table = Reviews(cluster)
    for token, name in ((CAROL, "carol"), (DAVE, "dave"), (FRANK, "frank")):
        table.user(token, name)
    table.user(ALICE, "alice", "ml-team-a")
    table.grant("group:ml-team-a", "team-a")
    table.grant("user:carol", "team-a", frozenset({(ARCHIVE, "archivedjobs", "")}))
    lists = {(ARCHIVE, resource, "") for resource in ("archivedjobs", "archivedpods")}
    table.grant("user:dave", "team-a", frozenset({*lists, (ARCHIVE, "archivedevents", "")}))
    table.grant("user:frank", "team-a", frozenset({("jobarchive.io", "jobs", "")}), ("get",))
    return table


@pytest.fixture
async def server(
    uids: dict[str, Any], reviews: Reviews, cluster: Cluster, archive: str, tmp_path: pathlib.Path
) -> AsyncIterator[Server]:
    async with serving(tmp_path, archive, cluster.url) as served:
        yield served


async def fetched(server: Server, path: str, token: str, accept: str = "*/*") -> tuple[int, str]:
    """A GET of ``path`` on the served archive as the token's user: status and body."""
    headers = {"Authorization": f"Bearer {token}", "Accept": accept}
    connector = aiohttp.TCPConnector(ssl=server.context())
    async with (
        aiohttp.ClientSession(connector=connector) as session,
        session.get(server.url + path, headers=headers) as response,
    ):
        return response.status, await response.text()


async def test_the_json_api_and_the_console_at_root_leave_out_what_may_not_be_listed(
    server: Server, uids: dict[str, Any], reviews: Reviews
) -> None:
    path = f"{API}/jobs/{uids['first']}"
    before = len(reviews.asked)
    status, body = await fetched(server, path, FRANK)
    assert status == 200, body
    asked = [tuple(sorted(each.items())) for each in reviews.asked[before:]]
    assert len(asked) == len(set(asked)), "a review made twice in one request"
    detail = json.loads(body)
    assert detail["job_id"] == uids["first"] and detail["replicas"]
    for left_out in ("events", "events_next_cursor", "pods", "pods_next_cursor"):
        assert left_out not in detail
    assert detail["omitted"] == [
        {"field": "events", "reason": FORBIDDEN_LIST},
        {"field": "pods", "reason": FORBIDDEN_LIST},
    ]
    assert OOM_MESSAGE not in body and "OOMKilled" not in body

    status, body = await fetched(server, path, ALICE)
    whole = json.loads(body)
    assert status == 200 and "omitted" not in whole
    assert OOM_MESSAGE in body and any(pod["has_log_tail"] for pod in whole["pods"])

    status, page = await fetched(server, f"/job?uid={uids['first']}", FRANK)
    assert status == 200, page
    said = "Not shown, here nor on the timeline: you may not list <code>jobs.jobarchive.io</code>"
    assert page.count(f"{said} in namespace team-a.") == 2
    assert OOM_MESSAGE not in page and "OOMKilled" not in page
    status, page = await fetched(server, f"/job?uid={uids['first']}", ALICE)
    assert status == 200 and "Not shown" not in page and OOM_MESSAGE in page


async def test_an_archived_job_leaves_out_each_list_its_reader_may_not_list(
    server: Server, uids: dict[str, Any], tmp_path: pathlib.Path
) -> None:
    kubectl: Callable[[str], Kubectl] = kubectls(server, tmp_path)
    first = ("get", "archivedjob", uids["first"], "-n", "team-a")
    got = await kubectl(CAROL)(*first, "-o", "json")
    assert got.code == 0, got.err
    status = got.json()["status"]
    assert status["replicas"] and status["phase"] == "Failed"
    for left_out in ("events", "eventsContinue", "pods", "podsContinue"):
        assert left_out not in status
    assert status["omitted"] == [
        {"field": "status.events", "reason": FORBIDDEN_EVENTS},
        {"field": "status.pods", "reason": FORBIDDEN_PODS},
    ]
    assert OOM_MESSAGE not in got.out
    wide = await kubectl(CAROL)(*first, "-o", "wide", "--sort-by=.metadata.name")
    assert wide.code == 0, wide.err
    assert wide.out.splitlines()[1].split()[:2] == ["bert-finetune", "TFJob"]

    # The Table kubectl asks with --sort-by carries each object: left out there too.
    table_path = f"{KUBE}/namespaces/team-a/archivedjobs/{uids['first']}?includeObject=Object"
    code, body = await fetched(server, table_path, CAROL, TABLE)
    assert code == 200, body
    [row] = json.loads(body)["rows"]
    assert "events" not in row["object"]["status"] and "pods" not in row["object"]["status"]
    assert [each["field"] for each in row["object"]["status"]["omitted"]] == [
        "status.events",
        "status.pods",
    ]
    assert OOM_MESSAGE not in body

    pods = await kubectl(DAVE)(*first, "-o", "json")
    status = pods.json()["status"]
    assert OOM_MESSAGE in pods.out and len(status["pods"]) == 2
    assert all("hasLogTail" not in pod["status"] for pod in status["pods"])
    assert status["omitted"] == [
        {"field": "status.pods[].status.hasLogTail", "reason": FORBIDDEN_LOGS}
    ]

    every = await kubectl(ALICE)(*first, "-o", "json")
    status = every.json()["status"]
    assert "omitted" not in status and OOM_MESSAGE in every.out
    assert sorted(pod["status"]["hasLogTail"] for pod in status["pods"]) == [False, True]


async def test_the_cli_through_the_api_says_what_was_left_out(
    server: Server, uids: dict[str, Any], tmp_path: pathlib.Path
) -> None:
    def config(token: str) -> str:
        return str(write_kubeconfig(tmp_path / f"kubeconfig-{token}", server, token))

    reference = f"team-a/{uids['first']}"
    carol = await jobarchive("--kubeconfig", config(CAROL), "job", reference)
    assert carol.code == 0, carol.err
    titles = [line for line in carol.out.splitlines() if line in ("job", "replicas", "pods")]
    assert titles == ["job", "replicas"] and "events" not in carol.out.splitlines()
    assert carol.err.splitlines() == [
        f"Not shown: events ({FORBIDDEN_EVENTS})",
        f"Not shown: pods ({FORBIDDEN_PODS})",
    ]
    as_json = await jobarchive("--kubeconfig", config(CAROL), "job", reference, "-o", "json")
    assert as_json.code == 0, as_json.err
    detail = as_json.json()
    assert "events" not in detail and "pods" not in detail
    assert detail["omitted"] == [
        {"field": "events", "reason": FORBIDDEN_EVENTS},
        {"field": "pods", "reason": FORBIDDEN_PODS},
    ]

    dave = await jobarchive("--kubeconfig", config(DAVE), "job", reference)
    assert dave.code == 0, dave.err
    assert "log tail" not in dave.out and "bert-finetune-worker-1" in dave.out
    assert OOM_MESSAGE in dave.out
    assert dave.err.splitlines() == [f"Not shown: pods[].has_log_tail ({FORBIDDEN_LOGS})"]

    alice = await jobarchive("--kubeconfig", config(ALICE), "job", reference)
    assert alice.code == 0 and alice.err == ""
    assert "log tail" in alice.out and OOM_MESSAGE in alice.out
