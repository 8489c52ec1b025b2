"""Kopf bindings: one ``@kopf.on.event`` handler per tracked kind, plus Pods and Events.

Only event-watching handlers are used (DESIGN decision 1): they keep no state on
the objects, so Kopf never patches, annotates or finalizes anything it watches.
Kopf's posting of Kubernetes Events is turned off, or it would write Events about
its own handling, which this operator watches. Its finalizer name is set to one
no one else uses, because Kopf strips its configured finalizer from objects that
carry it when no handler needs it.

Handlers are registered when this module is imported, for the kinds the
configuration names; ``operator/main.py`` imports it.
"""

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from typing import Any

import kopf
from aiohttp import web
from tortoise.exceptions import DBConnectionError, OperationalError

from jobarchive import config, metrics
from jobarchive.kinds import BATCH_JOB, INTERMEDIATE_KINDS, JobKind
from jobarchive.maintenance import retention
from jobarchive.maintenance.peering import Peering
from jobarchive.maintenance.reconcile import Reconciler
from jobarchive.reading import api
from jobarchive.recording.attribution import Attribution
from jobarchive.recording.recorder import Recorder
from jobarchive.storage import database as db
from jobarchive.storage.store import Store
from jobarchive.storage.writer import Writer

SETTINGS = config.load()
STORE = Store()
WRITER = Writer(
    STORE,
    batch_size=SETTINGS.batch_size,
    max_delay=SETTINGS.batch_delay,
    queue_size=SETTINGS.queue_size,
    flushers=SETTINGS.writers,
)
RECORDER = Recorder(SETTINGS, STORE, WRITER, Attribution())
# Opted-in batch Jobs are jobs too, and must be listed with the others, lest they
# be taken for gone.
RECONCILER = Reconciler(
    [*SETTINGS.kinds, *([BATCH_JOB] if SETTINGS.batch_job_selector else [])], STORE, WRITER
)
_BACKGROUND: set[asyncio.Task[None]] = set()
_SERVERS: list[web.AppRunner] = []
FINALIZER = "jobarchive.kubeflow.org/never-set"

EventHandler = Callable[..., Awaitable[None]]


@kopf.on.startup()
async def start(
    settings: kopf.OperatorSettings, logger: logging.Logger | logging.LoggerAdapter[Any], **_: Any
) -> None:
    """Configure Kopf as a passive observer, then open the database and create the schema."""
    settings.posting.enabled = False
    settings.persistence.finalizer = FINALIZER
    # Replicas of equal priority would all pause (Kopf's peering rule); random ones
    # make the highest one work and the others stand by. ``--priority`` still rules.
    if not settings.peering.priority:
        settings.peering.priority = random.randrange(1, 2**31)
    settings.peering.lifetime = SETTINGS.peering_lifetime
    peering = Peering(
        name=settings.peering.name
        if settings.peering.clusterwide and not settings.peering.standalone
        else None,
        priority=settings.peering.priority,
    )
    # Kopf logs every handler run of every watched object at INFO; at the rate pods and
    # Events arrive that costs real time and drowns the lines that matter.
    logging.getLogger("kopf.objects").setLevel(logging.WARNING)
    # Served before the database opens, so that a database that never answers is seen
    # there too; once only, as Kopf runs this again after a TemporaryError.
    if SETTINGS.metrics_port and not _SERVERS:
        metrics.watch_gauges(
            lambda: WRITER.depth, RECORDER.attribution.waiting_counts, WRITER.failing_for
        )
        server = await metrics.serve(SETTINGS.metrics_port)
        _SERVERS.extend([server] if server is not None else [])
    try:
        # Lookups by handlers need connections beside the flushers' transactions.
        await db.open_database(SETTINGS.db_url, pool_size=SETTINGS.writers + 4)
        await RECORDER.load()
    except (DBConnectionError, OperationalError) as exc:
        # One line instead of a traceback; Kopf retries the start after the delay.
        reason = exc.__cause__ or exc.__context__ or exc
        raise kopf.TemporaryError(
            f"Cannot open the database {SETTINGS.db_url_redacted}: {reason}", delay=10
        ) from None
    WRITER.start()
    if SETTINGS.api_port:
        runner = await api.serve("0.0.0.0", SETTINGS.api_port, SETTINGS.api_timeout)
        _SERVERS.extend([runner] if runner is not None else [])
    if SETTINGS.resync_interval:
        task = asyncio.create_task(
            RECONCILER.run_forever(SETTINGS.resync_interval, peering, SETTINGS.peering_lifetime)
        )
        _BACKGROUND.add(task)
    if SETTINGS.retention_days:
        pruning = retention.prune_forever(
            SETTINGS.retention_days,
            retention.PRUNE_INTERVAL,
            standing_by=lambda: RECONCILER.active is False,
        )
        _BACKGROUND.add(asyncio.create_task(pruning))
    logger.info(
        "Recording %d job kinds, their pods and Events (region: %s)",
        len(SETTINGS.kinds),
        SETTINGS.region or "-",
    )


@kopf.on.cleanup()
async def stop(**_: Any) -> None:
    """Stop reconciling, commit what is queued, then close the database connections."""
    for task in _BACKGROUND:
        task.cancel()
    await asyncio.gather(*_BACKGROUND, return_exceptions=True)
    _BACKGROUND.clear()
    await WRITER.stop()
    await db.close_database()
    for server in _SERVERS:
        await server.cleanup()
    _SERVERS.clear()


@kopf.on.probe(id="database")
async def database_health(**_: Any) -> str:
    """For Kopf's liveness endpoint: unhealthy once writes have failed for too long.

    A short outage is ridden out (writes wait and retry); only a long one, or a
    write that hangs, makes the probe fail, so that a restart can clear whatever a
    retry cannot.
    """
    failing = WRITER.failing_for()
    if failing > SETTINGS.unhealthy_after:
        raise kopf.PermanentError(f"database writes failing for {failing:.0f} s")
    stuck = WRITER.stuck_for()
    if stuck > SETTINGS.unhealthy_after:
        raise kopf.PermanentError(f"a database write has not returned for {stuck:.0f} s")
    return (
        f"queued={WRITER.depth} failing_for={failing:.0f}s "
        f"marked_gone_by_reconciliation={RECONCILER.marked_total}"
    )


def _raw_object(event: kopf.RawEvent) -> dict[str, Any]:
    """The object exactly as the API sent it.

    Kopf's ``body`` is a live view that resolves every key access through layers of
    mappings (``resolve`` showed in profiles of the catch-up); the converters read
    dozens of keys per object and expect plain dicts, which the watch event holds.
    """
    raw: dict[str, Any] = dict(event.get("object") or {})
    return raw


def _job_handler(kind: JobKind) -> EventHandler:
    async def record_job(type: str | None, event: kopf.RawEvent, **_: Any) -> None:
        await RECORDER.job(kind, type, _raw_object(event))

    return record_job


for _kind in SETTINGS.kinds:
    kopf.on.event(_kind.group, _kind.version, _kind.plural, id=f"{_kind.plural}.{_kind.group}")(
        _job_handler(_kind)
    )


def _intermediate_handler(kind: JobKind) -> EventHandler:
    async def record_intermediate(type: str | None, event: kopf.RawEvent, **_: Any) -> None:
        await RECORDER.intermediate(kind.kind, type, _raw_object(event))

    return record_intermediate


for _kind in INTERMEDIATE_KINDS:
    if _kind is not BATCH_JOB:
        kopf.on.event(_kind.group, _kind.version, _kind.plural, id=f"{_kind.plural}.{_kind.group}")(
            _intermediate_handler(_kind)
        )


@kopf.on.event("batch", "v1", "jobs")
async def record_batch_job(type: str | None, event: kopf.RawEvent, **_: Any) -> None:
    """A batch Job: recorded when opted in, else learnt as an intermediate object."""
    await RECORDER.batch_job(type, _raw_object(event))


@kopf.on.event("v1", "pods")
async def record_pod(type: str | None, event: kopf.RawEvent, **_: Any) -> None:
    """Record a pod if it belongs to a tracked job."""
    await RECORDER.pod(type, _raw_object(event))


@kopf.on.event("v1", "events")
async def record_event(type: str | None, event: kopf.RawEvent, **_: Any) -> None:
    """Record an Event about a tracked job or one of its pods."""
    await RECORDER.event(type, _raw_object(event))
