"""The operator's composition root: its parts built from the settings, started and
stopped in order.

Everything the process holds (store, writer, recorder, reconciler, servers,
background tasks) is built and owned by ``Operator``, which Kopf's start-up builds:
nothing at import. ``bindings`` binds it to Kopf, and this module does not import
Kopf: it raises its own exceptions, which the bindings translate into Kopf's retry
and probe semantics.

Kopf runs its startup handler again after a failed attempt, so ``Operator.start``
may run several times: what must happen once (serving the metrics) says so, and
nothing that runs is started before the database has opened.
"""

import asyncio
import functools
import logging

from aiohttp import web

from jobarchive.config import Settings
from jobarchive.core.kinds import BATCH_JOB
from jobarchive.core.rows import FailureRow, PodFailureRow, SummaryRow
from jobarchive.infra import identity, metrics, rules, scope, sizing
from jobarchive.infra.certificates import CertificateError
from jobarchive.logtails.capture import Capture
from jobarchive.maintenance import classifying, retention, summarising
from jobarchive.maintenance import peering as peerings
from jobarchive.maintenance.classifying import Classifier
from jobarchive.maintenance.peering import Activity, Peering
from jobarchive.maintenance.reconcile import Reconciler
from jobarchive.maintenance.summarising import Summariser
from jobarchive.reading import api, auth, queries
from jobarchive.reading.gate import Limits
from jobarchive.reading.ledger import ReviewBudget
from jobarchive.recording import priming
from jobarchive.recording.attribution import Attribution
from jobarchive.recording.recorder import Recorder
from jobarchive.storage import database as db
from jobarchive.storage import failures, schema
from jobarchive.storage.failed import FailedJob, FailedPod
from jobarchive.storage.readpool import ReadPool
from jobarchive.storage.store import Store
from jobarchive.storage.summaries import Summary
from jobarchive.storage.writer import Writer

logger = logging.getLogger(__name__)


class DatabaseUnavailable(Exception):
    """The database could not be opened; worth another try. The message hides the password."""


class ClusterUnknown(Exception):
    """Which cluster this is could not be read (decision 35); worth another try."""


class Unusable(Exception):
    """The database is one the operator must not write to: ``jobarchive migrate`` first,
    or a name for this cluster that the database tells apart from the others'."""


class Unhealthy(Exception):
    """Writes have failed or hung for longer than allowed; the message says which."""


def read_pool(settings: Settings) -> ReadPool | None:
    """The API's own connections, when it is served: JOBARCHIVE_API_CONCURRENCY of them,
    to JOBARCHIVE_READ_DB_URL, statements stopped after JOBARCHIVE_API_TIMEOUT."""
    if not settings.api_port:
        return None
    return ReadPool(settings.read_db_url, settings.api_concurrency, settings.api_timeout)


def databases(settings: Settings) -> str:
    """The database the operator opens, and the API's when it reads elsewhere, for a
    message: passwords hidden."""
    if read_pool(settings) is None or settings.read_db_url == settings.db_url:
        return settings.db_url_redacted
    return f"{settings.db_url_redacted} (API reads: {settings.read_db_url_redacted})"


def maintenance(
    settings: Settings,
    reconciler: Reconciler,
    peering: Peering,
    classifier: Classifier,
    summariser: Summariser | None = None,
) -> list[asyncio.Task[None]]:
    """The work the operator starts itself, as tasks: with ``--peering``, creating the
    peering object wherever it is missing (Kopf waits for it, see
    ``maintenance.peering``); then reconciling with the cluster and pruning old jobs, as
    far as the settings ask, on the active replica only: whenever either runs, the
    peering objects are read every ``JOBARCHIVE_PEERING_LIFETIME`` seconds to tell
    (``Activity``). A shard (``peering.scope``) maintains its own namespaces' rows."""
    tasks = [asyncio.create_task(peerings.keep_objects(peering))]
    if not (settings.resync_interval or settings.retention_days or summariser):
        return tasks
    activity = Activity(peering)
    tasks.append(asyncio.create_task(activity.watch(settings.peering_lifetime)))
    if summariser is not None:
        # Pods' efficiency from Prometheus (decision 45), off the recording path.
        tasks.append(asyncio.create_task(summarising.summarise_forever(summariser, activity)))
    if settings.resync_interval:
        reconciling = reconciler.run_forever(settings.resync_interval, activity)
        tasks.append(asyncio.create_task(reconciling))
        # Failed jobs classified (decision 42) where the archive is kept in step.
        tasks.append(
            asyncio.create_task(
                classifying.classify_forever(classifier, activity, settings.failure_settle)
            )
        )
    if settings.retention_days:
        pruning = retention.prune_forever(
            settings.retention_days,
            retention.PRUNE_INTERVAL,
            activity,
            reconciler.store.cluster,
            peering.scope,
        )
        tasks.append(asyncio.create_task(pruning))
    return tasks


async def write_classes(writer: Writer, rows: list[FailureRow], pods: list[PodFailureRow]) -> None:
    """Write the classifying pass's rows through the writer; raise its first error."""
    refused = [error for error in await writer.write(FailedJob, rows) if error]
    refused += [error for error in await writer.write(FailedPod, pods) if error]
    if refused:
        raise refused[0]


async def write_summaries(writer: Writer, rows: list[SummaryRow]) -> None:
    """Write the summarising pass's rows through the writer; raise its first error."""
    refused = [error for error in await writer.write(Summary, rows) if error]
    if refused:
        raise refused[0]


class Operator:
    """The recording pipeline and what runs beside it, wired from the settings."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.store = Store()
        self.writer = Writer(
            self.store,
            batch_size=settings.batch_size,
            max_delay=settings.batch_delay,
            queue_size=settings.queue_size,
            flushers=settings.writers,
            stop_timeout=settings.stop_timeout,
        )
        # The tails' rows go through the one writer (decision 19), and so name its cluster.
        self.capture = Capture(settings, self.writer)
        self.recorder = Recorder(settings, self.store, self.writer, Attribution(), self.capture)
        # The namespaces Kopf serves, read from its own command line (``scope``).
        self.scope = scope.from_command_line()
        # Opted-in batch Jobs are jobs too, and must be listed with the others, lest
        # they be taken for gone.
        kinds = [*settings.kinds, *([BATCH_JOB] if settings.batch_job_selector else [])]
        self.reconciler = Reconciler(kinds, self.store, self.writer, self.scope)
        # Checked at start already (``operator/main.py``); the class rows go through the
        # one writer too.
        self.classifier = Classifier(
            rules.load_rules(settings.failure_rules_file),
            self.store,
            functools.partial(write_classes, self.writer),
            self.scope,
        )
        # Pods' efficiency read from Prometheus, where JOBARCHIVE_PROMETHEUS_URL is set.
        self.summarising = summarising.from_settings(
            settings,
            lambda: self.store.cluster,
            functools.partial(write_summaries, self.writer),
            self.scope,
        )
        self._servers: list[web.AppRunner] = []
        self._background: set[asyncio.Task[None]] = set()
        self._metrics_served = False
        self.identity: identity.Identity | None = None
        self._forecast = False

    async def start(self, peering: Peering) -> None:
        """Serve the metrics, open the database, then write, serve the API and maintain.

        Raises ClusterUnknown, DatabaseUnavailable or Unusable, having started nothing but
        the metrics.
        """
        await self.serve_metrics()
        await self.identify()
        await self.forecast()
        await self.open_database()
        # Before Kopf's watches begin: the startup handler this runs in holds them back.
        await priming.prime(self.recorder.attribution, self.settings.kinds, self.scope)
        self.writer.start()
        await self.capture.start()
        await self.serve_api()
        joined = peerings.joined(peering, self.scope)
        summariser = self.summarising[0] if self.summarising else None
        self._background.update(
            maintenance(self.settings, self.reconciler, joined, self.classifier, summariser)
        )
        logger.info(
            "Recording %d job kinds, their pods and Events in %s (region: %s)",
            len(self.settings.kinds),
            self.scope.describe(),
            self.settings.region or "-",
        )

    async def serve_metrics(self) -> None:
        """Serve ``/metrics``, once however often the start is tried.

        Served before the database opens, so that a database that never answers is
        seen there too.
        """
        if not self.settings.metrics_port or self._metrics_served:
            return
        self._metrics_served = True
        metrics.watch_gauges(
            lambda: self.writer.depth,
            self.recorder.attribution.waiting_counts,
            self.writer.failing_for,
        )
        self._keep(await metrics.serve(self.settings.metrics_port))

    async def identify(self) -> None:
        """Learn which cluster this is, once (decision 35): every row is written for it."""
        if self.identity is not None:
            return
        try:
            self.identity = await identity.identify(self.settings.cluster)
        except identity.Unknown as exc:
            raise ClusterUnknown(f"Cannot tell which cluster this is: {exc}") from None
        self.store.cluster = self.identity.name
        logger.info("%s", self.identity.describe())

    async def forecast(self) -> None:
        """Once, however often the start is tried: what the catch-up will hold, against
        the container's memory limit (``sizing``)."""
        if not self._forecast:
            self._forecast = True
            await sizing.forecast(self.settings.kinds, self.scope, self.settings.cgroup_root)

    async def open_database(self) -> None:
        """Connect, create what the schema lacks, and load what attribution starts from.

        When the API is served, its reads get a pool of their own (``read_pool``), so
        that no flood of reads can take a connection the writer needs.
        """
        try:
            # Lookups by handlers (and the log tails' one) beside the flushers' transactions.
            await db.open_database(
                self.settings.db_url,
                pool_size=self.settings.writers + 4 + (1 if self.capture.enabled else 0),
                encryption=self.settings.db_tls,
                read_pool=read_pool(self.settings),
                accelerators=self.settings.accelerators,
                cluster=self.store.cluster,
            )
            await self.recorder.load(await retention.stored_namespaces(self.scope))
        except schema.NotAdopted as exc:
            raise Unusable(f"Cannot record into {self.settings.db_url_redacted}: {exc}") from None
        except failures.ERRORS as exc:
            raise DatabaseUnavailable(
                f"Cannot open the database {databases(self.settings)}: {failures.describe(exc)}"
            ) from None

    async def serve_api(self) -> None:
        """Serve the read-only HTTP API when ``JOBARCHIVE_API_PORT`` asks for it.

        Its callers are reviewed with the operator's own credentials (its
        ServiceAccount), unless ``JOBARCHIVE_API_AUTH`` is ``none``.
        """
        if self.settings.api_port:
            budget = ReviewBudget(
                self.settings.access_review_burst, self.settings.access_review_rate
            )
            access = await auth.access(self.settings.api_auth, budget)
            try:
                runner = await api.serve(
                    self.settings.api_host,
                    self.settings.api_port,
                    access,
                    timeout=self.settings.api_timeout,
                    concurrency=self.settings.api_concurrency,
                    narrowed=self.writer.recording,
                    flows=Limits(self.settings.api_flow_queue, self.settings.api_flow_wait),
                    usage_timeout=self.settings.usage_timeout,
                    kinds=queries.known_kinds(self.settings.kinds),
                    tls=self.settings.api_tls,
                    refresh=self.settings.requestheader_refresh,
                    home=self.store.cluster,
                )
            except CertificateError as exc:
                # Worth less than the archive: the API is not served, the operator runs.
                logger.error("Cannot serve the API: %s", exc)
                await access.close()
                return
            self._keep(runner)

    async def stop(self) -> None:
        """Stop maintaining and reading logs, commit what is queued, close the database."""
        for task in self._background:
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)
        self._background.clear()
        await self.capture.stop()
        if self.summarising is not None:
            await self.summarising[1].close()
        await self.writer.stop()
        await db.close_database()
        for server in self._servers:
            await server.cleanup()
        self._servers.clear()

    def health(self) -> str:
        """A summary for the liveness probe; raises Unhealthy once writes fail too long.

        A short outage is ridden out (writes wait and retry); only a long one, or a
        write that hangs, fails the probe, so that a restart can clear whatever a
        retry cannot.
        """
        failing = self.writer.failing_for()
        if failing > self.settings.unhealthy_after:
            raise Unhealthy(f"database writes failing for {failing:.0f} s")
        stuck = self.writer.stuck_for()
        if stuck > self.settings.unhealthy_after:
            raise Unhealthy(f"a database write has not returned for {stuck:.0f} s")
        return (
            f"queued={self.writer.depth} failing_for={failing:.0f}s "
            f"marked_gone_by_reconciliation={self.reconciler.marked_total}"
        )

    def _keep(self, runner: web.AppRunner | None) -> None:
        """Remember a server to clean up at stop; None: it could not bind (logged)."""
        if runner is not None:
            self._servers.append(runner)
