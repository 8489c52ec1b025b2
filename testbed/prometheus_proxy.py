"""A proxy of the test bed's own between the operator and a real Prometheus, for the
faults Prometheus does not make on demand: every query forwarded as it came, unless a
fault says otherwise.

- ``fail(status, body)``: each query answered ``status`` with ``body`` (a 500 as a
  Prometheus whose storage is failing answers, or a load balancer's page), unforwarded;
- ``hold()``: each query held unanswered until ``heal``: longer than any client's
  timeout, so the client gives up (counted in ``abandoned``) and asks again later;
- ``rewrite(pod, promql)``: a query naming ``pod`` is forwarded with ``promql`` in its
  place, so that the real Prometheus answers with its own error (a parse error, an
  execution error) or a result of another type (a scalar), in its own words;
- ``heal()``: the faults gone, held queries released.

Each query's fate is kept in order in ``seen`` (``forwarded``, ``failed``, ``held``,
``rewritten``): what a test waits on. It serves on the test's event loop
(``async with``), on a free port of loopback.
"""

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator

import aiohttp
from aiohttp import web

from testbed.ports import free_port

QUERY_PATH = "/api/v1/query"


@dataclasses.dataclass
class PrometheusProxy:
    """The proxy of the Prometheus at ``upstream``; ``url`` is what a client is given."""

    upstream: str
    port: int = dataclasses.field(default_factory=free_port)
    seen: list[str] = dataclasses.field(default_factory=list)
    abandoned: int = 0
    failing: tuple[int, str] | None = None
    holding: bool = False
    rewrites: dict[str, str] = dataclasses.field(default_factory=dict)
    _healed: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)

    @property
    def url(self) -> str:
        """The proxy's base URL, ``http://127.0.0.1:PORT``."""
        return f"http://127.0.0.1:{self.port}"

    def fail(self, status: int, body: str) -> None:
        """Answer each query ``status`` with ``body`` until ``heal``."""
        self.failing = (status, body)

    def hold(self) -> None:
        """Hold each query unanswered until ``heal``."""
        self.holding = True
        self._healed.clear()

    def rewrite(self, pod: str, promql: str) -> None:
        """Forward a query naming ``pod`` with ``promql`` in its place."""
        self.rewrites[pod] = promql

    def heal(self) -> None:
        """Forward every query as it came; release those held."""
        self.failing, self.holding = None, False
        self.rewrites.clear()
        self._healed.set()

    def count(self, fate: str) -> int:
        """How many queries met ``fate``."""
        return self.seen.count(fate)

    async def _query(self, request: web.Request) -> web.Response:
        form = {name: str(value) for name, value in (await request.post()).items()}
        if self.failing is not None:
            self.seen.append("failed")
            status, body = self.failing
            return web.Response(status=status, text=body)
        if self.holding:
            self.seen.append("held")
            try:
                await self._healed.wait()
            except asyncio.CancelledError:
                # The client gave up and closed the connection (its timeout).
                self.abandoned += 1
                raise
        query = form.get("query", "")
        rewritten = next((new for pod, new in self.rewrites.items() if pod in query), None)
        if rewritten is not None:
            form["query"] = rewritten
        self.seen.append("forwarded" if rewritten is None else "rewritten")
        async with (
            aiohttp.ClientSession() as session,
            session.post(self.upstream + QUERY_PATH, data=form) as reply,
        ):
            said = await reply.read()
            return web.Response(status=reply.status, body=said, content_type="application/json")

    @contextlib.asynccontextmanager
    async def serving(self) -> AsyncIterator["PrometheusProxy"]:
        """Serve until the block ends (held queries released first)."""
        app = web.Application()
        app.router.add_post(QUERY_PATH, self._query)
        # Cancelled when its client disconnects: a held query's abandonment is seen.
        runner = web.AppRunner(app, shutdown_timeout=0.1, handler_cancellation=True)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", self.port).start()
        try:
            yield self
        finally:
            self.heal()
            await runner.cleanup()
