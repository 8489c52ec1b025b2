"""Clients that never finish their request head, over raw sockets to the API served
through ``serving.listen`` (as the metrics are): each is disconnected once the header
timeout has passed since it connected or was last answered, whether it sends nothing,
half a head, or one byte after another for ever; the server keeps neither the
connection nor its task. Requests that are whole are answered, even by a handler
slower than that timeout, and heads over the size bounds are refused with a 400.
A client that asks and never reads its answer, or leaves halfway, has its connection
closed once the send timeout has passed, in one log line."""

import asyncio
import contextlib
import dataclasses
import logging
import socket
from collections.abc import AsyncIterator, Awaitable, Callable

import aiohttp
import pytest
from aiohttp import web

from jobarchive.infra import serving
from jobarchive.reading import api, auth
from testbed.ports import free_port
from tests.support.waiting import eventually

TIMEOUT = 1.0
# How much later than the timeout a disconnection may come on a loaded machine: the
# bound only tells a cut connection from one kept (the trickle below outlasts it), and
# is generous, so that a busy machine never fails it; the lower bound is the timeout.
SLACK = 10.0
OPENAPI = f"{api.PREFIX}/openapi.json"
Serve = Callable[[web.Application], Awaitable[tuple[int, web.AppRunner]]]


@pytest.fixture
async def serve() -> AsyncIterator[Serve]:
    """Serves applications through ``listen`` with a short header timeout."""
    runners: list[web.AppRunner] = []

    async def start(app: web.Application) -> tuple[int, web.AppRunner]:
        port = free_port()
        runner = await serving.listen(app, "127.0.0.1", port, "a test app", TIMEOUT)
        assert runner is not None
        runners.append(runner)
        return port, runner

    yield start
    for runner in runners:
        await runner.cleanup()


@pytest.fixture
async def served_api(serve: Serve) -> tuple[int, web.AppRunner]:
    """The API (its OpenAPI document needs no database) and its runner."""
    return await serve(api.Api(auth.NoAuth()).app())


@dataclasses.dataclass
class Cut:
    """How a connection ended: seconds after connecting, what the server sent before,
    and how many bytes of the trickle had been sent."""

    elapsed: float
    received: bytes
    trickled: int = 0


async def cut_off(port: int, head: bytes, trickle: bytes = b"") -> Cut:
    """Send ``head``, then ``trickle`` one byte every 50 ms, until the server closes the
    connection."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    cut = Cut(0.0, b"")

    async def drip() -> None:
        # The server closing the connection ends the writes with an error.
        with contextlib.suppress(ConnectionError):
            writer.write(head)
            await writer.drain()
            for byte in trickle:
                await asyncio.sleep(0.05)
                writer.write(bytes([byte]))
                await writer.drain()
                cut.trickled += 1

    dripping = asyncio.create_task(drip())
    try:
        async with asyncio.timeout(TIMEOUT + SLACK + 5):
            with contextlib.suppress(ConnectionResetError):
                # Until the end of the stream: the server's close.
                while chunk := await reader.read(65536):
                    cut.received += chunk
        cut.elapsed = loop.time() - started
        return cut
    finally:
        dripping.cancel()
        writer.close()


async def no_connections(runner: web.AppRunner) -> None:
    """Wait until the server holds no connection (nor, so, a task for one)."""
    server = runner.server
    assert server is not None

    async def none_left() -> bool:
        return not server.connections

    await eventually(none_left, within=SLACK)


@pytest.mark.parametrize(
    "head",
    [
        pytest.param(b"", id="nothing"),
        pytest.param(b"GET /api/v1/openapi.js", id="half-a-request-line"),
        pytest.param(
            b"GET /api/v1/openapi.json HTTP/1.1\r\nHost: x\r\nX-Slow: ", id="half-headers"
        ),
        pytest.param(b"GET /api/v1/openapi.json HTTP/1.1\r\nHost: x\r\n", id="no-blank-line"),
    ],
)
async def test_a_request_head_never_finished_is_cut_off_at_the_timeout(
    served_api: tuple[int, web.AppRunner], head: bytes
) -> None:
    port, runner = served_api
    cut = await cut_off(port, head)
    assert cut.received == b""
    assert TIMEOUT * 0.9 <= cut.elapsed <= TIMEOUT + SLACK, cut.elapsed
    await no_connections(runner)


async def test_a_client_sending_its_headers_a_byte_at_a_time_is_cut_off_at_the_timeout(
    served_api: tuple[int, web.AppRunner],
) -> None:
    port, runner = served_api
    # Bytes keep coming for ten times the timeout, each well within it of the last,
    # and within the header size bound, so only the timeout can end it.
    head = b"GET /api/v1/openapi.json HTTP/1.1\r\nHost: x\r\nX-Slow: "
    trickle = b"a" * int(TIMEOUT * 10 / 0.05)
    cut = await cut_off(port, head, trickle)
    assert cut.received == b""
    assert TIMEOUT * 0.9 <= cut.elapsed <= TIMEOUT + SLACK, cut.elapsed
    # Cut while bytes still came, however slowly the machine sent them: the timeout
    # runs from the connection, not from the last byte.
    assert cut.trickled < len(trickle), cut
    await no_connections(runner)


async def test_after_an_answer_a_half_sent_next_request_is_cut_off(
    served_api: tuple[int, web.AppRunner],
) -> None:
    port, runner = served_api
    whole = f"GET {OPENAPI} HTTP/1.1\r\nHost: x\r\n\r\n".encode()
    cut = await cut_off(port, whole + b"GET /api/v1/jobs HTTP/1.1\r\nHo")
    assert cut.received.startswith(b"HTTP/1.1 200 OK\r\n")
    assert b'"openapi": "3.1.0"' in cut.received
    assert TIMEOUT * 0.9 <= cut.elapsed <= TIMEOUT + SLACK, cut.elapsed
    await no_connections(runner)


async def test_whole_requests_are_answered_even_by_a_handler_slower_than_the_timeout(
    serve: Serve, served_api: tuple[int, web.AppRunner]
) -> None:
    async def slow(_: web.Request) -> web.Response:
        await asyncio.sleep(TIMEOUT * 2)
        return web.Response(text="done")

    slow_app = web.Application()
    slow_app.router.add_get("/slow", slow)
    slow_port, _ = await serve(slow_app)
    api_port, _ = served_api
    async with aiohttp.ClientSession() as session:
        async with session.get(f"http://127.0.0.1:{api_port}{OPENAPI}") as response:
            assert (response.status, (await response.json())["openapi"]) == (200, "3.1.0")
        async with session.get(f"http://127.0.0.1:{slow_port}/slow") as response:
            assert (response.status, await response.text()) == (200, "done")
        # The keep-alive connection of the first answer has been idle past the
        # timeout and closed by the server meanwhile: the session opens another.
        async with session.get(f"http://127.0.0.1:{api_port}{OPENAPI}") as response:
            assert response.status == 200


@pytest.mark.parametrize(
    "head",
    [
        pytest.param(
            f"GET {OPENAPI}?{'x' * serving.MAX_LINE} HTTP/1.1\r\nHost: x\r\n\r\n", id="line"
        ),
        pytest.param(
            f"GET {OPENAPI} HTTP/1.1\r\nHost: x\r\nX-Big: {'x' * (serving.MAX_FIELD + 1)}\r\n\r\n",
            id="field",
        ),
        pytest.param(
            f"GET {OPENAPI} HTTP/1.1\r\nHost: x\r\n"
            # With Host, one over the bound.
            + "".join(f"X-{n}: 1\r\n" for n in range(serving.MAX_HEADERS))
            + "\r\n",
            id="headers",
        ),
    ],
)
async def test_a_request_head_over_the_size_bounds_is_refused_at_once(
    served_api: tuple[int, web.AppRunner], head: str, caplog: pytest.LogCaptureFixture
) -> None:
    port, runner = served_api
    cut = await cut_off(port, head.encode())
    # Refused at once, not cut at the timeout: a head cut off gets no answer at all
    # (above), this one its 400.
    assert cut.received.split(b"\r\n")[0].endswith(b" 400 Bad Request"), cut.received[:200]
    await no_connections(runner)
    # The refusal is logged in one line, quoting nothing of the request.
    refusals = [r for r in caplog.records if r.name == "aiohttp.server"]
    assert [r.levelname for r in refusals] == ["INFO"]
    assert refusals[0].getMessage().startswith("Refused a malformed HTTP request (")
    assert "X-1" not in caplog.text and "Traceback" not in caplog.text


# Larger than what the kernel's socket buffers take on loopback, so that only a reader
# can take it all.
LARGE = 16_000_000


@pytest.fixture
async def large_answers(serve: Serve) -> tuple[int, web.AppRunner, list[str]]:
    """An app whose one route sends LARGE bytes through ``serving.send`` within TIMEOUT;
    and what became of each answer."""
    outcomes: list[str] = []

    async def large(request: web.Request) -> web.Response:
        sent = await serving.send(request, web.Response(body=b"x" * LARGE), within=TIMEOUT)
        outcomes.append("returned")
        return sent

    app = web.Application()
    app.router.add_get("/large", large)
    port, runner = await serve(app)
    return port, runner, outcomes


async def asking_socket(port: int) -> socket.socket:
    """A connection with a small receive buffer that has sent a whole request."""
    loop = asyncio.get_running_loop()
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.setblocking(False)
    await loop.sock_connect(sock, ("127.0.0.1", port))
    await loop.sock_sendall(sock, b"GET /large HTTP/1.1\r\nHost: x\r\n\r\n")
    return sock


async def test_a_client_that_never_reads_its_answer_is_cut_off_at_the_send_timeout(
    large_answers: tuple[int, web.AppRunner, list[str]], caplog: pytest.LogCaptureFixture
) -> None:
    port, runner, outcomes = large_answers
    caplog.set_level(logging.INFO, logger="jobarchive")
    sock = await asking_socket(port)
    try:
        started = asyncio.get_running_loop().time()

        async def handler_done() -> bool:
            return outcomes == ["returned"]

        await eventually(handler_done, within=TIMEOUT + SLACK)
        assert asyncio.get_running_loop().time() - started >= TIMEOUT * 0.9
        await no_connections(runner)
    finally:
        sock.close()
    assert "Closed a connection that did not take its answer (not read within 1 s)" in caplog.text
    assert "Traceback" not in caplog.text


async def test_a_client_that_leaves_halfway_costs_one_line(
    large_answers: tuple[int, web.AppRunner, list[str]], caplog: pytest.LogCaptureFixture
) -> None:
    port, runner, outcomes = large_answers
    caplog.set_level(logging.INFO)
    sock = await asking_socket(port)
    await asyncio.get_running_loop().sock_recv(sock, 4096)
    # A reset rather than an orderly close: what a killed client leaves.
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    sock.close()

    async def handler_done() -> bool:
        return outcomes == ["returned"]

    await eventually(handler_done, within=SLACK)
    await no_connections(runner)
    assert "Closed a connection that did not take its answer (gone)" in caplog.text
    assert "Traceback" not in caplog.text and "Error handling request" not in caplog.text
