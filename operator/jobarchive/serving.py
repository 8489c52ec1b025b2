"""Serving an aiohttp application beside the operator (metrics, the API).

What is served beside the archive is worth less than the archive: a port that
cannot be bound is logged and costs that server, not the run.
"""

import logging

from aiohttp import web

logger = logging.getLogger(__name__)


async def listen(app: web.Application, host: str, port: int, what: str) -> web.AppRunner | None:
    """Serve ``app`` on host:port; None, logged, when the port cannot be bound.

    The caller cleans the returned runner up.
    """
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, host=host, port=port).start()
    except OSError as exc:
        logger.error("Cannot serve %s on %s:%d: %s", what, host, port, exc)
        await runner.cleanup()
        return None
    logger.info("Serving %s on %s:%d", what, host, port)
    return runner
