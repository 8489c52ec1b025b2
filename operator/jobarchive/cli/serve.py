"""``jobarchive serve``: the read-only HTTP API and the web console on a read pool of
their own, until SIGTERM or SIGINT."""

import asyncio
import contextlib
import logging
import signal

import click

from jobarchive import config
from jobarchive.cli.archive import Where

logger = logging.getLogger(__name__)


async def _stopped() -> None:
    """Until SIGTERM or SIGINT: as a container's first process, a signal without a
    handler is ignored, and the kubelet would kill serve mid-answer."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    await stop.wait()
    logger.info("Stopping: answering no more requests")


@click.command()
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on; 0.0.0.0 for every interface.",
)
@click.option("--port", type=click.IntRange(1, 65535), default=8080, show_default=True)
@click.option(
    "--auth",
    "auth_mode",
    type=click.Choice(config.API_AUTH_MODES),
    help="kubernetes: callers' bearer tokens and access reviewed by the kubeconfig's "
    "cluster; none: anyone may read (JOBARCHIVE_API_AUTH, default kubernetes).",
)
@click.option("--timeout", type=float, help="Seconds a query may take (JOBARCHIVE_API_TIMEOUT).")
@click.pass_obj
def serve(where: Where, host: str, port: int, auth_mode: str | None, timeout: float | None) -> None:
    """Serve the read-only HTTP API (/api/v1, OpenAPI at /api/v1/openapi.json) and the
    web console (/).

    With --auth kubernetes (the default) every request needs a bearer token, and the
    cluster of the current kubeconfig says whose it is and which namespaces it may read.
    """
    # Imported here, when it runs, so that --help imports no server (decision 30).
    from jobarchive.cli import session
    from jobarchive.reading import api, auth, queries
    from jobarchive.storage import database as db
    from jobarchive.storage import failures

    settings = session.settings_of(where.database())
    read_pool = session.read_pool(settings, timeout)
    kinds = queries.known_kinds(settings.kinds)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")

    async def run_forever() -> None:
        try:
            await db.open_reader(read_pool, encryption=settings.db_tls)
            try:
                access = await auth.access(auth_mode or settings.api_auth)
            except auth.NoCluster as exc:
                raise click.ClickException(
                    f"--auth kubernetes: {exc}; or serve this machine only with --auth none"
                ) from None
            runner = await api.serve(
                host, port, access, read_pool.timeout, read_pool.size, kinds=kinds
            )
            if runner is None:
                raise click.ClickException(f"cannot listen on {host}:{port}")
            try:
                await _stopped()
            finally:
                await runner.cleanup()
        finally:
            await db.close_database()

    try:
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(run_forever())
    except failures.ERRORS as exc:
        raise session.unreadable(read_pool.url, exc) from None
