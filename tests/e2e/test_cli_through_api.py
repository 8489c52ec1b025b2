"""``jobarchive`` through the aggregated API with a kubeconfig, as a team member runs
it (decision 30): no database URL in its environment, a token in its kubeconfig, a real
``jobarchive serve`` over HTTPS reviewing it with kmock's emulated API server. Every
read command prints what the database mode prints on the same archive, and every
refusal is one line: 400 by flag (exit 2), 401, 403 naming the namespace, 404 (exit 1).
"""

import json
import pathlib
import shlex
import sys
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest
import yaml

from jobarchive.reading.params import DEFAULT_PAGE
from testbed.cluster import Cluster
from tests.support.console import at, keep_log_tail
from tests.support.history import History
from tests.support.kube import (
    ALICE,
    BOB,
    Ran,
    Server,
    jobarchive,
    kube_archive,
    serving_readers,
    write_kubeconfig,
)

pytestmark = pytest.mark.e2e


@pytest.fixture
async def uids(archive: str) -> dict[str, Any]:
    async with History() as history:
        made = await kube_archive(history)
    doomed = made["doomed"]
    job = {"metadata": {"uid": made["first"]}}
    for restart in range(3):
        await keep_log_tail(job, {"metadata": doomed}, f"attempt {restart}\n".encode(), 1, restart)
    return made


@pytest.fixture
async def server(
    uids: dict[str, Any], cluster: Cluster, archive: str, tmp_path: pathlib.Path
) -> AsyncIterator[Server]:
    async with serving_readers(tmp_path, archive, cluster) as served:
        yield served


class Modes:
    """The same command on the database and through the API with a user's kubeconfig."""

    def __init__(self, db_url: str, server: Server, workdir: pathlib.Path) -> None:
        self.db_url = db_url
        self.server = server
        self.workdir = workdir

    def kubeconfig(self, token: str) -> pathlib.Path:
        return write_kubeconfig(self.workdir / f"kubeconfig-{token}", self.server, token)

    async def database(self, *args: str) -> Ran:
        return await jobarchive(*args, JOBARCHIVE_DB_URL=self.db_url)

    async def api(self, token: str, *args: str) -> Ran:
        """Through the API, chosen by KUBECONFIG alone: no database URL is set."""
        return await jobarchive(*args, KUBECONFIG=str(self.kubeconfig(token)))

    async def same(self, token: str, *args: str) -> str:
        """What both modes print, once they print the same (a running job's duration
        may pass a minute between the two runs): a table to the character, JSON as
        JSON (an object's keys may come in another order)."""
        for _ in range(3):
            direct, through = await self.database(*args), await self.api(token, *args)
            assert direct.code == 0, direct.err
            assert through.code == 0, through.err
            if _printed(through, args) == _printed(direct, args):
                return through.out
        raise AssertionError(f"{args}:\n{direct.out}\n---\n{through.out}")


def _printed(ran: Ran, args: Sequence[str]) -> Any:
    return _settled(ran.json()) if "json" in args else ran.out


def _settled(value: Any) -> Any:
    """JSON without the one value that changes by the microsecond: how long a running
    job has run so far."""
    if isinstance(value, list):
        return [_settled(item) for item in value]
    if not isinstance(value, dict):
        return value
    running = "duration_seconds" in value and value.get("gmt_finished") is None
    return {
        key: _settled(item)
        for key, item in value.items()
        if not (running and key == "duration_seconds")
    }


@pytest.fixture
def modes(server: Server, archive: str, tmp_path: pathlib.Path) -> Modes:
    return Modes(archive, server, tmp_path)


@pytest.mark.parametrize(
    "args",
    [
        ["jobs", "-n", "team-a"],
        ["jobs", "-n", "team-a", "--limit", "2"],
        ["jobs", "-n", "team-a", "--status", "Failed", "-o", "json"],
        ["jobs", "-n", "team-a", "--name", "sweep", "--created-since", "2000-01-01"],
        ["job", "team-a/bert-finetune"],
        ["job", "team-a/sweep-1", "-o", "json"],
        ["events", "-n", "team-a"],
        ["events", "-n", "team-a", "--type", "Warning", "--limit", "1"],
        ["events", "-n", "team-a", "--since", "2026-11-20T10:31:00+00:00", "-o", "json"],
        ["jobs", "-n", "team-a", "--in-cluster", "--owner", "alice"],
        ["jobs", "-n", "team-a", "--gone"],
    ],
    ids=" ".join,
)
async def test_a_namespace_reader_sees_what_the_database_mode_prints(
    modes: Modes, args: list[str]
) -> None:
    printed = await modes.same(ALICE, *args)
    assert printed.strip()


async def test_a_cluster_reader_reads_every_namespace_job_logs_and_stats(
    modes: Modes, uids: dict[str, Any]
) -> None:
    first = uids["first"]
    assert "team-b/bert-finetune" in await modes.same(BOB, "jobs")
    detail = await modes.same(BOB, "job", first, "--limit", "1")
    assert "Showing 1 of 2 pods; more: jobarchive job " in detail
    assert "OOMKilled" in await modes.same(BOB, "job", first)
    tails = await modes.same(BOB, "logs", first, "--limit", "2")
    assert "attempt 2" in tails and tails.splitlines()[-1].startswith("Showing 2 log tails")
    assert '"jobs": ' in await modes.same(BOB, "stats", "--by", "owner", "-o", "json")
    await modes.same(BOB, "stats")
    window = ("--since", "2020-01-01", "--until", "2030-01-01")
    assert '"gpu_hours": ' in await modes.same(BOB, "usage", *window, "-o", "json")
    await modes.same(BOB, "usage", "--by", "owner", "--every", "month", *window, "-o", "csv")
    # A team's reader has its own namespace's statistics and usage.
    own = await modes.api(ALICE, "usage", "-n", "team-a", *window, "-o", "json")
    assert own.code == 0, own.err
    assert {row["namespace"] for row in own.json()["items"]} == {"team-a"}
    assert (await modes.api(ALICE, "stats", "-n", "team-a")).code == 0


async def test_the_kubeconfig_named_on_the_command_line_with_its_context(
    modes: Modes, uids: dict[str, Any]
) -> None:
    config = modes.kubeconfig(ALICE)
    named = await jobarchive(
        "--kubeconfig", str(config), "--context", "archive", "jobs", "-n", "team-a"
    )
    assert named.code == 0, named.err
    assert "team-a/bert-finetune" in named.out
    unknown = await jobarchive("--kubeconfig", str(config), "--context", "elsewhere", "jobs")
    assert unknown.code == 2 and "elsewhere" in unknown.err
    assert len(unknown.err.strip().splitlines()) == 1
    missing = await jobarchive("--kubeconfig", str(modes.workdir / "none"), "jobs")
    assert missing.code == 2 and "no such file" in missing.err
    both = await jobarchive("--kubeconfig", str(config), "--db-url-file", str(config), "jobs")
    assert both.code == 2 and "keep one" in both.err
    serve = await jobarchive("--kubeconfig", str(config), "serve")
    assert serve.code == 2 and "for the read commands" in serve.err
    # A database named in the environment outranks KUBECONFIG: the made-up token is
    # never sent, and team-b's jobs are listed as the database holds them.
    outranked = await jobarchive(
        "jobs", KUBECONFIG=str(modes.kubeconfig("made-up")), JOBARCHIVE_DB_URL=modes.db_url
    )
    assert outranked.code == 0, outranked.err
    assert "team-b/bert-finetune" in outranked.out


@pytest.mark.parametrize(
    ("token", "args", "code", "said"),
    [
        (ALICE, ["jobs"], 1, "403 Forbidden in all namespaces: "),
        (ALICE, ["jobs", "-n", "team-b"], 1, "403 Forbidden in namespace team-b: "),
        (ALICE, ["stats"], 1, "403 Forbidden in all namespaces: "),
        (ALICE, ["usage"], 1, "403 Forbidden in all namespaces: "),
        (ALICE, ["usage", "-n", "team-b"], 1, "403 Forbidden in namespace team-b: "),
        (BOB, ["usage", "--by", "pod"], 2, "--by: 'pod' is not one"),
        ("made-up", ["jobs", "-n", "team-a"], 1, "401 Unauthorized: the credentials of "),
        (ALICE, ["events", "-n", "team-a", "--type", "Bogus"], 2, "--type: 'Bogus' is not one"),
        (BOB, ["jobs", "--name-contains", "x"], 2, "--name-contains: no index serves it"),
        (BOB, ["jobs", "--limit", "0"], 2, "--limit: 0 is outside 1..500"),
        (BOB, ["events", "--limit", "501"], 2, "--limit: 501 is outside 1..500"),
        (BOB, ["logs", "team-a/sweep-0", "--limit", "101"], 2, "--limit: 101 is outside 1..100"),
        (BOB, ["jobs", "--created-since", "yesterday"], 2, "--created-since: 'yesterday'"),
        (ALICE, ["job", "team-a/nothing"], 1, "no job team-a/nothing"),
        (BOB, ["events", "-n", ""], 2, "--namespace: '' cannot be asked of the API through"),
        (BOB, ["jobs", "-n", "Team-A"], 2, "--namespace: 'Team-A' is not a namespace's name"),
    ],
)
async def test_a_refusal_is_one_line(
    modes: Modes, token: str, args: list[str], code: int, said: str
) -> None:
    refused = await modes.api(token, *args)
    assert refused.code == code, refused.err
    assert said in refused.err
    assert "Traceback" not in refused.err
    assert len([line for line in refused.err.splitlines() if line.startswith("Error")]) == 1


async def test_an_exec_plugin_gives_the_token(modes: Modes) -> None:
    config = modes.kubeconfig(ALICE)
    written = yaml.safe_load(config.read_text())
    credential = {
        "apiVersion": "client.authentication.k8s.io/v1",
        "kind": "ExecCredential",
        "status": {"token": ALICE},
    }
    written["users"][0]["user"] = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": sys.executable,
            "args": ["-c", f"print({json.dumps(json.dumps(credential))})"],
            "interactiveMode": "Never",
        }
    }
    config.write_text(yaml.safe_dump(written))
    listed = await jobarchive("--kubeconfig", str(config), "jobs", "-n", "team-a", "-o", "json")
    assert listed.code == 0, listed.err
    assert {job["namespace"] for job in json.loads(listed.out)["items"]} == {"team-a"}


async def test_a_uid_alone_needs_every_namespace_and_with_one_does_not(
    modes: Modes, uids: dict[str, Any]
) -> None:
    refused = await modes.api(ALICE, "job", uids["first"])
    assert refused.code == 1 and "403 Forbidden in all namespaces" in refused.err
    named = await modes.same(ALICE, "job", f"team-a/{uids['first']}")
    assert "OOMKilled" in named
    theirs = await modes.api(ALICE, "job", f"team-b/{uids['theirs']}")
    assert theirs.code == 1 and "403 Forbidden in namespace team-b" in theirs.err
    assert "jobarchive job team-a/UID" in await modes.same(ALICE, "job", "team-a/bert-finetune")


async def test_a_cluster_without_the_archives_api_is_a_404_that_says_so(
    cluster: Cluster, modes: Modes
) -> None:
    # The emulator speaks http://, where no credential is sent: an anonymous user.
    config = write_kubeconfig(modes.workdir / "bare", Server(cluster.url), None)
    answered = await jobarchive("jobs", KUBECONFIG=str(config))
    assert answered.code == 1
    assert "404" in answered.err and "APIService" in answered.err


async def test_a_name_recreated_past_a_page_says_so_and_the_job_list_shows_the_rest(
    modes: Modes,
) -> None:
    async with History() as history:
        for index in range(DEFAULT_PAGE + 1):
            await history.job("nightly", namespace="team-a", created=at(100 + index))
        # A name that starts like it, which the exact name leaves out.
        await history.job("nightly-2", namespace="team-a", created=at(99))
    for command in ("job", "logs"):
        printed = await modes.same(ALICE, command, "team-a/nightly")
        assert printed.startswith(f"{DEFAULT_PAGE} jobs named team-a/nightly\n")
        hint = printed.splitlines()[-1]
        assert hint.startswith(f"Showing {DEFAULT_PAGE} jobs named team-a/nightly; more: ")
    rest = shlex.split(hint.partition("; more: ")[2])
    assert rest[:6] == ["jobarchive", "jobs", "--namespace", "team-a", "--exact-name", "nightly"]
    listed = await modes.same(ALICE, *rest[1:], "-o", "wide")
    # The oldest incarnation alone, and nothing after it (its creation time: -o wide's).
    assert listed.splitlines()[0] == "1 jobs" and "Showing" not in listed
    assert "nightly-2" not in listed
    assert at(100).replace("T", " ").removesuffix("Z") in listed
    # JSON says the same with the cursor the list takes.
    page = json.loads(await modes.same(ALICE, "job", "team-a/nightly", "-o", "json"))
    assert len(page["items"]) == DEFAULT_PAGE and page["next_cursor"] == rest[-1]
    whole = await modes.same(
        ALICE, "jobs", "-n", "team-a", "--exact-name", "nightly", "--limit", "60"
    )
    assert whole.splitlines()[0] == f"{DEFAULT_PAGE + 1} jobs" and "Showing" not in whole
    assert "nightly-2" not in whole
