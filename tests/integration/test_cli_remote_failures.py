"""``jobarchive`` through the API when the API fails (decision 30): a server answering
503 (its database away) or a Status without a message, and no server at all, are each
one line with exit status 1; the token goes only where the kubeconfig says, and only
over TLS; a redirect is not followed."""

import asyncio
import os
import pathlib
import ssl
from collections.abc import AsyncIterator

import pytest
import yaml
from aiohttp import web

from jobarchive.reading.kube.discovery import PREFIX
from testbed.ports import free_port
from tests.support.certificates import make_ca, make_server_certificate
from tests.support.commands import DATABASE_VARIABLES, JOBARCHIVE
from tests.support.kube import Ran, Server, write_kubeconfig

TOKEN = "a-team-token"


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> tuple[ssl.SSLContext, str]:
    """A server's TLS context for 127.0.0.1, and the PEM of the CA a kubeconfig trusts."""
    folder = tmp_path_factory.mktemp("tls")
    signed = make_server_certificate(folder, make_ca(folder, "ca"), "127.0.0.1")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(signed.cert, signed.key)
    return context, signed.ca.read_text()


async def serve(
    app: web.Application, context: ssl.SSLContext | None, ca: str | None
) -> AsyncIterator[Server]:
    """``app`` on a free port of 127.0.0.1, over TLS when given a context."""
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port, ssl_context=context).start()
    try:
        yield Server(f"{'https' if context else 'http'}://127.0.0.1:{port}", ca)
    finally:
        await runner.cleanup()


@pytest.fixture
async def failing(
    tls: tuple[ssl.SSLContext, str],
) -> AsyncIterator[tuple[Server, list[web.Request]]]:
    """A server that answers every GET as the archive's API does with its database away."""
    seen: list[web.Request] = []

    async def away(request: web.Request) -> web.Response:
        seen.append(request)
        if request.path.endswith("/stats"):
            return web.Response(status=502, text="<html>bad gateway</html>")
        if request.path.endswith("/archivedevents"):
            # A hostile server's words: a forged second line, the terminal recoloured.
            forged = {"kind": "Status", "code": 500, "message": "boom\nError: forged\x1b[31m"}
            return web.json_response(forged, status=500)
        status = {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "message": "the archive's database cannot be reached; retry later",
            "reason": "ServiceUnavailable",
            "code": 503,
        }
        return web.json_response(status, status=503)

    app = web.Application()
    app.router.add_get("/{path:.*}", away)
    async for server in serve(app, *tls):
        yield server, seen


async def jobarchive(kubeconfig: pathlib.Path, *args: str) -> Ran:
    inherited = {k: v for k, v in os.environ.items() if k not in DATABASE_VARIABLES}
    process = await asyncio.create_subprocess_exec(
        str(JOBARCHIVE),
        "--kubeconfig",
        str(kubeconfig),
        *args,
        env=inherited,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode is not None
    return Ran(process.returncode, out.decode(), err.decode())


async def test_a_503_is_one_line_with_the_servers_words(
    failing: tuple[Server, list[web.Request]], tmp_path: pathlib.Path
) -> None:
    server, seen = failing
    config = write_kubeconfig(tmp_path / "kubeconfig", server, TOKEN)
    answered = await jobarchive(config, "jobs", "-n", "team-a")
    assert answered.code == 1
    assert answered.err.strip().splitlines() == [
        "Error: 503 from the archive's API: the archive's database cannot be reached; retry later"
    ]
    [request] = seen
    assert request.path == f"{PREFIX}/namespaces/team-a/archivedjobs"
    assert request.query["limit"] == "50"
    assert request.headers["Authorization"] == f"Bearer {TOKEN}"
    other = await jobarchive(config, "stats")
    assert other.code == 1 and "502 from the archive's API: <html>bad gateway</html>" in other.err
    hostile = await jobarchive(config, "events", "-n", "team-a")
    assert hostile.code == 1
    assert hostile.err.splitlines() == [
        "Error: 500 from the archive's API: boom\\nError: forged\\x1b[31m"
    ]


async def test_no_server_is_one_line_naming_it(tmp_path: pathlib.Path) -> None:
    nowhere = Server(f"https://127.0.0.1:{free_port()}")
    config = write_kubeconfig(tmp_path / "kubeconfig", nowhere, TOKEN)
    answered = await jobarchive(config, "events", "-n", "team-a")
    assert answered.code == 1
    [line] = answered.err.strip().splitlines()
    assert line.startswith(f"Error: no answer from {nowhere.url}")


@pytest.fixture
async def listener() -> AsyncIterator[tuple[str, list[bytes]]]:
    """A plain TCP port that keeps every byte sent to it; its http:// URL."""
    received: list[bytes] = []

    async def keep(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        received.append(await reader.read(65536))
        writer.write(b"HTTP/1.1 503 Away\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(keep, "127.0.0.1", free_port())
    port = server.sockets[0].getsockname()[1]
    async with server:
        yield f"http://127.0.0.1:{port}", received


def credentialed(path: pathlib.Path, server: str, user: dict[str, object]) -> pathlib.Path:
    """A kubeconfig of one context: ``server`` and a user holding ``user``'s fields."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "archive", "cluster": {"server": server}}],
        "users": [{"name": "reader", "user": user}],
        "contexts": [{"name": "archive", "context": {"cluster": "archive", "user": "reader"}}],
        "current-context": "archive",
    }
    path.write_text(yaml.safe_dump(config))
    return path


async def test_no_credential_goes_to_an_http_server_and_no_plugin_runs(
    listener: tuple[str, list[bytes]], tmp_path: pathlib.Path
) -> None:
    url, received = listener
    ran = tmp_path / "the-plugin-ran"
    plugin = tmp_path / "plugin.sh"
    plugin.write_text(f'#!/bin/sh\ntouch {ran}\necho \'{{"status": {{"token": "{TOKEN}"}}}}\'\n')
    plugin.chmod(0o755)
    (tmp_path / "token").write_text(TOKEN)
    exec_plugin = {"apiVersion": "client.authentication.k8s.io/v1", "command": str(plugin)}
    users: dict[str, dict[str, object]] = {
        "token": {"token": TOKEN},
        "tokenFile": {"tokenFile": str(tmp_path / "token")},
        "exec": {"exec": exec_plugin},
        "username": {"username": "alice", "password": TOKEN},
    }
    for field, user in users.items():
        config = credentialed(tmp_path / f"kubeconfig-{field}", url, user)
        answered = await jobarchive(config, "jobs", "-n", "team-a")
        assert answered.code == 2, answered.err
        assert answered.err.splitlines() == [
            f"Error: --kubeconfig {config}: the server {url} is http://, and the user 'reader' "
            f"holds a {field}: credentials go only over TLS (client-go drops them for an "
            "http:// server; jobarchive refuses): use its https:// address, or a user without "
            "credentials (kubectl proxy)"
        ]
    assert received == [] and not ran.exists()
    # A user without credentials may read over http:// (kubectl proxy's address).
    anonymous = await jobarchive(credentialed(tmp_path / "anonymous", url, {}), "jobs")
    assert anonymous.code == 1
    [request] = received
    assert request.startswith(b"GET /apis/archive.jobarchive.io/v1/archivedjobs?limit=50 ")
    assert b"authorization" not in request.lower()


async def test_a_redirect_is_not_followed_to_another_origin(
    tls: tuple[ssl.SSLContext, str],
    listener: tuple[str, list[bytes]],
    tmp_path: pathlib.Path,
) -> None:
    elsewhere, received = listener

    async def moved(request: web.Request) -> web.Response:
        raise web.HTTPFound(f"{elsewhere}{request.path_qs}")

    app = web.Application()
    app.router.add_get("/{path:.*}", moved)
    async for server in serve(app, *tls):
        config = write_kubeconfig(tmp_path / "kubeconfig", server, TOKEN)
        answered = await jobarchive(config, "jobs", "-n", "team-a")
    assert answered.code == 1
    assert answered.err.splitlines() == [
        f"Error: 302 from {server.url}: a redirect to {elsewhere}{PREFIX}/namespaces/team-a/"
        "archivedjobs?limit=50, not followed"
    ]
    assert received == []


@pytest.mark.parametrize(
    ("server", "why"),
    [
        ("https://alice:Zq7Wv@127.0.0.1:6443", "https://***@127.0.0.1:6443 holds a user name"),
        ("https://127.0.0.1:99999", "https://127.0.0.1:99999 is not a URL"),
        ("http://[::1", "http://[::1 is not a URL"),
        ("ftp://archive", "ftp://archive is not an https:// (or http://) URL"),
        ("https://", "https:// names no host"),
        ("https://archive /x", "https://archive /x holds a space or a control character"),
        ("https://archive?x=1", "https://archive?x=1 holds a query or a fragment"),
    ],
)
async def test_an_odd_server_url_is_one_line_and_exit_status_2(
    server: str, why: str, tmp_path: pathlib.Path
) -> None:
    config = credentialed(tmp_path / "kubeconfig", server, {"token": TOKEN})
    answered = await jobarchive(config, "jobs")
    assert answered.code == 2
    [line] = answered.err.splitlines()
    assert line.startswith(f"Error: --kubeconfig {config}: the server {why}")
    assert "Zq7Wv" not in answered.err
