"""Serving an aiohttp application beside the operator (metrics, the API).

What is served beside the archive is worth less than the archive: a port that
cannot be bound is logged and costs that server, not the run.

A client has ``header_timeout`` seconds from connecting, or from its previous
answer, to send a whole request head (request line and headers); then it is
disconnected, however many bytes it sent meanwhile. aiohttp's server has no
header-read timeout of its own, and without one a client that sends its headers a
byte at a time, or never ends them, keeps a connection and a task for as long as
it likes. aiohttp's public ``keepalive_timeout`` gives that bound: since aiohttp
3.14.4 its timer starts when a connection is made, and when it fires it closes a
connection whose handler still waits for a complete request, whatever arrived
meanwhile (it is not reset by data, only by an answer). The same setting closes a
keep-alive connection left idle that long, which costs a client or a Prometheus
scraper one reconnection; a request being answered is never cut by it. A
timer of our own would need aiohttp's private request-handler internals.

An answer has ``SEND_TIMEOUT`` seconds to be sent (``send``). aiohttp writes an
answer after its handler returns and waits for the client to take it with no
deadline: a client that asks and never reads keeps the answer's bytes, a task and
a connection for as long as it likes once the answer outgrows the kernel's socket
buffers (about 3 MB on loopback). Sent by the handler within a deadline, such a
client has its connection closed, as has one that vanishes halfway, in one line
instead of aiohttp's traceback.

The request head's sizes are set here too rather than left to the version's
defaults (aiohttp 3.9 allowed 32,768 headers): a request line or a header over
8 KiB or more than ``MAX_HEADERS`` headers is answered 400 and the connection closed.
"""

import asyncio
import ipaddress
import logging
import ssl

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

logger = logging.getLogger(__name__)


class _MalformedRequestsInOneLine(logging.Filter):
    """aiohttp logs every malformed request it refuses at ERROR with a traceback, whose
    frames quote the request's bytes: a refusal is the client's error, so one line,
    naming what was wrong, and no text of the request."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, HttpProcessingError):
            record.msg, record.args = (
                "Refused a malformed HTTP request (%s)",
                (type(error).__name__,),
            )
            record.levelno, record.levelname = logging.INFO, "INFO"
            record.exc_info = record.exc_text = None
        return True


logging.getLogger("aiohttp.server").addFilter(_MalformedRequestsInOneLine())

HEADER_TIMEOUT = 10.0
# A request line (the path and query) and one header field, in bytes: aiohttp's own
# default and the common proxies' 8 KiB, which a ServiceAccount's bearer token fits
# several times over.
MAX_LINE = 8190
MAX_FIELD = 8190
# Prometheus, curl and browsers send a dozen at most, proxies add a few.
MAX_HEADERS = 64
# Seconds to send an answer: a few MB over a slow link.
SEND_TIMEOUT = 30.0


async def listen(
    app: web.Application,
    host: str,
    port: int,
    what: str,
    header_timeout: float = HEADER_TIMEOUT,
    ssl_context: ssl.SSLContext | None = None,
) -> web.AppRunner | None:
    """Serve ``app`` on host:port, over TLS with ``ssl_context``; None, logged, when the
    port cannot be bound.

    A connection that has not sent a whole request head within ``header_timeout``
    seconds of opening or of its previous answer is closed. The caller cleans the
    returned runner up.
    """
    runner = web.AppRunner(
        app,
        access_log=None,
        keepalive_timeout=header_timeout,
        max_line_size=MAX_LINE,
        max_field_size=MAX_FIELD,
        max_headers=MAX_HEADERS,
    )
    await runner.setup()
    try:
        await web.TCPSite(runner, host=host, port=port, ssl_context=ssl_context).start()
    except OSError as exc:
        logger.error("Cannot serve %s on %s:%d: %s", what, host, port, exc)
        await runner.cleanup()
        return None
    scheme = "https" if ssl_context else "http"
    logger.info("Serving %s on %s://%s:%d", what, scheme, host, port)
    return runner


async def send(
    request: web.Request, response: web.Response, within: float = SEND_TIMEOUT
) -> web.Response:
    """Send ``response`` whole before returning it; a client that has not taken it
    within ``within`` seconds, or that went away, has its connection closed."""
    try:
        async with asyncio.timeout(within):
            await response.prepare(request)
            await response.write_eof()
    except (TimeoutError, ConnectionError) as exc:
        if request.transport is not None:
            request.transport.abort()
        logger.info(
            "Closed a connection that did not take its answer (%s)",
            f"not read within {within:g} s" if isinstance(exc, TimeoutError) else "gone",
        )
    return response


def is_loopback(host: str) -> bool:
    """Whether an address to bind is reachable from this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
