"""``jobarchive`` through the API when the API fails (decision 30): a server answering
503 (its database away) or a Status without a message, and no server at all, are each
one line with exit status 1; the token goes only where the kubeconfig says."""

import asyncio
import os
import pathlib
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from jobarchive.reading.kube.discovery import PREFIX
from testbed.ports import free_port
from tests.support.commands import DATABASE_VARIABLES, JOBARCHIVE
from tests.support.kube import Ran, Server, write_kubeconfig

TOKEN = "a-team-token"


@pytest.fixture
async def failing() -> AsyncIterator[tuple[Server, list[web.Request]]]:
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
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        yield Server(f"http://127.0.0.1:{port}"), seen
    finally:
        await runner.cleanup()


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
        "Error: 500 from the archive's API: boom\\x0aError: forged\\x1b[31m"
    ]


async def test_no_server_is_one_line_naming_it(tmp_path: pathlib.Path) -> None:
    nowhere = Server(f"http://127.0.0.1:{free_port()}")
    config = write_kubeconfig(tmp_path / "kubeconfig", nowhere, TOKEN)
    answered = await jobarchive(config, "events", "-n", "team-a")
    assert answered.code == 1
    [line] = answered.err.strip().splitlines()
    assert line.startswith(f"Error: no answer from {nowhere.url}")
