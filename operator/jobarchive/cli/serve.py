"""``jobarchive serve``: the read-only HTTP API and the web console on a read pool of
their own, until SIGTERM or SIGINT."""

import asyncio
import contextlib
import dataclasses
import logging
import signal
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from jobarchive import config
from jobarchive.cli.archive import Where
from jobarchive.reading.params import KnownKinds

if TYPE_CHECKING:  # heavy: the read pool is imported when serve runs (decision 30)
    from jobarchive.reading.auth import Access
    from jobarchive.storage.readpool import ReadPool

logger = logging.getLogger(__name__)
FC = TypeVar("FC", bound=Callable[..., Any])


async def _stopped() -> None:
    """Until SIGTERM or SIGINT: as a container's first process, a signal without a
    handler is ignored, and the kubelet would kill serve mid-answer."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    await stop.wait()
    logger.info("Stopping: answering no more requests")


def _file_option(flag: str, says: str) -> Callable[[FC], FC]:
    """An option naming a file that must exist."""
    return click.option(flag, type=click.Path(exists=True, dir_okay=False), help=says)


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
@_file_option(
    "--tls-cert-file",
    "Serve HTTPS with this certificate (PEM, the chain after it) and --tls-private-key-file "
    "(JOBARCHIVE_API_TLS_CERT_FILE).",
)
@_file_option("--tls-private-key-file", "The key of --tls-cert-file (JOBARCHIVE_API_TLS_KEY_FILE).")
@click.option(
    "--tls-self-signed",
    is_flag=True,
    default=None,
    help="Serve HTTPS with a certificate made at start (JOBARCHIVE_API_TLS_SELF_SIGNED).",
)
@_file_option(
    "--requestheader-client-ca-file",
    "The front proxy's CA, in place of the cluster's extension-apiserver-authentication "
    "ConfigMap (JOBARCHIVE_REQUESTHEADER_CLIENT_CA_FILE).",
)
@click.option(
    "--requestheader-allowed-names",
    help="Common names of the front proxy's certificate, comma-separated, in place of the "
    "ConfigMap's (JOBARCHIVE_REQUESTHEADER_ALLOWED_NAMES).",
)
@click.pass_obj
def serve(
    where: Where,
    /,
    host: str,
    port: int,
    auth_mode: str | None,
    timeout: float | None,
    **tls_options: Any,
) -> None:
    """Serve the read-only HTTP API (/api/v1, OpenAPI at /api/v1/openapi.json) and the
    web console (/).

    With --auth kubernetes (the default) every request needs a bearer token, and the
    cluster of the current kubeconfig says whose it is and which namespaces it may read;
    over HTTPS a front proxy's client certificate and X-Remote-* headers are believed
    too, as the cluster's extension-apiserver-authentication ConfigMap says.
    """
    # Imported here, when it runs, so that --help imports no server (decision 30).
    from jobarchive.cli import session
    from jobarchive.reading import queries

    settings = session.settings_of(where.database())
    read_pool = session.read_pool(settings, timeout)
    kinds = queries.known_kinds(settings.kinds)
    tls = tls_settings(settings.api_tls, **tls_options)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    _serve(settings, read_pool, kinds, host, port, auth_mode, tls)


async def _home(configured: str | None, access: "Access") -> str:
    """The cluster serve reads as its own (decision 36): ``JOBARCHIVE_CLUSTER``, else,
    with Kubernetes' access control, the kube-system uid its credentials read; with
    none every cluster is read alike, so any name does. One line when none is known."""
    from jobarchive.core.rows import DEFAULT_CLUSTER
    from jobarchive.infra import identity
    from jobarchive.reading import auth

    if configured is not None:
        return configured
    if not isinstance(access, auth.KubernetesAuth):
        return DEFAULT_CLUSTER
    try:
        found = await identity.discover(access.api)
    except identity.Unknown as exc:
        await access.close()
        raise click.ClickException(f"cannot tell which cluster this is: {exc}") from None
    logger.info("Reading as %s", found.describe())
    return found.name


def _serve(
    settings: config.Settings,
    read_pool: "ReadPool",
    kinds: KnownKinds,
    host: str,
    port: int,
    auth_mode: str | None,
    tls: config.ApiTls,
) -> None:
    """The API on ``read_pool`` until SIGTERM or SIGINT; every failure one line."""
    from jobarchive.cli import session
    from jobarchive.infra.certificates import CertificateError
    from jobarchive.reading import api, auth
    from jobarchive.reading.gate import Limits
    from jobarchive.reading.ledger import ReviewBudget
    from jobarchive.storage import database as db
    from jobarchive.storage import failures

    async def run_forever() -> None:
        try:
            await db.open_reader(read_pool, encryption=settings.db_tls)
            try:
                budget = ReviewBudget(settings.access_review_burst, settings.access_review_rate)
                access = await auth.access(auth_mode or settings.api_auth, budget)
            except auth.NoCluster as exc:
                raise click.ClickException(
                    f"--auth kubernetes: {exc}; or serve this machine only with --auth none"
                ) from None
            try:
                runner = await api.serve(
                    host,
                    port,
                    access,
                    timeout=read_pool.timeout,
                    concurrency=read_pool.size,
                    flows=Limits(settings.api_flow_queue, settings.api_flow_wait),
                    usage_timeout=settings.usage_timeout,
                    kinds=kinds,
                    tls=tls,
                    refresh=settings.requestheader_refresh,
                    home=await _home(settings.cluster, access),
                )
            except CertificateError as exc:
                await access.close()
                raise click.ClickException(f"cannot serve HTTPS: {exc}") from None
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


def tls_settings(
    environment: config.ApiTls,
    tls_cert_file: str | None,
    tls_private_key_file: str | None,
    tls_self_signed: bool | None,
    requestheader_client_ca_file: str | None,
    requestheader_allowed_names: str | None,
) -> config.ApiTls:
    """The environment's TLS settings with the flags given in their place; a usage
    error naming the flag when they do not go together."""
    if (tls_cert_file is None) != (tls_private_key_file is None):
        raise click.UsageError("--tls-cert-file and --tls-private-key-file go together")
    if tls_cert_file and tls_self_signed:
        raise click.UsageError("--tls-self-signed and --tls-cert-file: give one")
    tls = environment
    if tls_cert_file:
        tls = dataclasses.replace(
            tls, cert_file=tls_cert_file, key_file=tls_private_key_file, self_signed=False
        )
    elif tls_self_signed:
        tls = dataclasses.replace(tls, cert_file=None, key_file=None, self_signed=True)
    if requestheader_client_ca_file:
        tls = dataclasses.replace(tls, client_ca_file=requestheader_client_ca_file)
    if requestheader_allowed_names is not None:
        try:
            names = config.allowed_names(
                requestheader_allowed_names, "--requestheader-allowed-names"
            )
        except config.ConfigError as exc:
            raise click.BadParameter(str(exc)) from None
        tls = dataclasses.replace(tls, allowed_names=names)
    return tls
