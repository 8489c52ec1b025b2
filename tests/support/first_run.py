"""A newcomer's first ``make run``: the real operator started as ``kopf run`` in an
empty working directory, with an empty home and nothing in the environment but
what the test gives it, and run to its end. Plus the clusters a first run meets:
none at all, a closed port, and a server that accepts connections but never answers.
"""

import asyncio
import contextlib
import dataclasses
import pathlib
import socket
import time
from collections.abc import Iterator, Mapping

from testbed.operator import KOPF, REPO


@dataclasses.dataclass(frozen=True)
class Finished:
    """How an operator run ended: its output lines (stdout and stderr), status and times."""

    lines: list[str]
    returncode: int | None
    took: float
    ended: float


async def run_to_the_end(
    workdir: pathlib.Path, env: Mapping[str, str], within: float = 300.0
) -> Finished:
    """Run ``kopf run --all-namespaces operator/main.py`` as ``make run`` does, until it
    exits; fail if it still runs after ``within`` seconds (hung, not slow)."""
    started = time.monotonic()
    process = await asyncio.create_subprocess_exec(
        str(KOPF),
        "run",
        "--all-namespaces",
        str(REPO / "operator" / "main.py"),
        cwd=workdir,
        env=dict(env),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    try:
        output, _ = await asyncio.wait_for(process.communicate(), within)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise AssertionError(f"the operator still ran after {within} s") from None
    ended = time.monotonic()
    return Finished(
        output.decode(errors="replace").splitlines(), process.returncode, ended - started, ended
    )


@contextlib.contextmanager
def held_port() -> Iterator[int]:
    """A port this test listens on, on all interfaces, for as long as the block runs.

    A process that tries to serve on it meanwhile cannot bind it, and the operator
    logs a port it cannot bind: so an operator whose output stays silent about it
    never tried to open it.
    """
    with socket.socket() as holder:
        holder.bind(("0.0.0.0", 0))
        holder.listen()
        port: int = holder.getsockname()[1]
        yield port


class SilentServer:
    """A port that accepts connections and never answers, noting when each arrived."""

    def __init__(self) -> None:
        self.arrivals: list[float] = []
        self.url = ""
        self._held: list[asyncio.StreamWriter] = []
        self._server: asyncio.Server | None = None

    async def _accept(self, _: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.arrivals.append(time.monotonic())
        # Kept open, unanswered, until the server closes: the client must give up itself.
        self._held.append(writer)

    async def __aenter__(self) -> "SilentServer":
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"
        return self

    async def __aexit__(self, *_: object) -> None:
        for writer in self._held:
            writer.close()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
