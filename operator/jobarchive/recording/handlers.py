"""Kopf bindings: one ``@kopf.on.event`` handler per tracked kind, plus Pods and Events,
and the operator's start, stop and liveness probe.

Only event-watching handlers are used: they keep no state on the objects, so Kopf
never patches, annotates or finalizes anything it watches. Kopf's posting of
Kubernetes Events is turned off, or it would write Events about its own handling,
which this operator watches. Its finalizer name is set to one no one else uses,
because Kopf strips its configured finalizer from objects that carry it when no
handler needs it.

This is the only module that imports Kopf. The operator itself is ``app.Operator``,
built from the settings when ``operator/main.py`` imports this module, which also
registers the handlers for the kinds the settings name. The operator's exceptions
become Kopf's here: ``DatabaseUnavailable`` a ``TemporaryError``, so that Kopf tries
the start again; ``Unusable`` (a database to migrate first) a ``PermanentError``,
which stops the operator; ``Unhealthy`` a ``PermanentError``, which fails the
liveness probe.
"""

import logging
import random
from collections.abc import Awaitable, Callable
from typing import Any

import kopf

from jobarchive import app, config
from jobarchive.kinds import BATCH_JOB, INTERMEDIATE_KINDS, JobKind
from jobarchive.maintenance.peering import Peering

OPERATOR = app.Operator(config.load())
FINALIZER = "jobarchive.kubeflow.org/never-set"
# Seconds before Kopf tries the start again after the database could not be opened.
RETRY_START_AFTER = 10

EventHandler = Callable[..., Awaitable[None]]


@kopf.on.startup()
async def start(settings: kopf.OperatorSettings, **_: Any) -> None:
    """Make Kopf a passive observer, then start the operator."""
    _observe_passively(settings)
    try:
        await OPERATOR.start(_peering(settings))
    except app.DatabaseUnavailable as exc:
        # One line instead of a traceback; Kopf tries the start again after the delay.
        raise kopf.TemporaryError(str(exc), delay=RETRY_START_AFTER) from None
    except app.Unusable as exc:
        # Only when the database was away at the pre-flight check of operator/main.py.
        raise kopf.PermanentError(str(exc)) from None


def _observe_passively(settings: kopf.OperatorSettings) -> None:
    """Kopf's settings for an operator that only watches: no Events, no finalizer, quiet."""
    settings.posting.enabled = False
    settings.persistence.finalizer = FINALIZER
    # Replicas of equal priority would all pause (Kopf's peering rule); random ones
    # make the highest one work and the others stand by. ``--priority`` still rules.
    if not settings.peering.priority:
        settings.peering.priority = random.randrange(1, 2**31)
    settings.peering.lifetime = OPERATOR.settings.peering_lifetime
    # Kopf logs every handler run of every watched object at INFO; at the rate pods and
    # Events arrive that costs real time and drowns the lines that matter.
    logging.getLogger("kopf.objects").setLevel(logging.WARNING)


def _peering(settings: kopf.OperatorSettings) -> Peering:
    """This replica's place in Kopf's peering: none when standalone or namespaced."""
    clusterwide = settings.peering.clusterwide and not settings.peering.standalone
    return Peering(
        name=settings.peering.name if clusterwide else None,
        priority=settings.peering.priority,
    )


@kopf.on.cleanup()
async def stop(**_: Any) -> None:
    """Stop the operator: what is queued is committed first."""
    await OPERATOR.stop()


@kopf.on.probe(id="database")
async def database_health(**_: Any) -> str:
    """For Kopf's liveness endpoint: unhealthy once writes have failed for too long."""
    try:
        return OPERATOR.health()
    except app.Unhealthy as exc:
        raise kopf.PermanentError(str(exc)) from None


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
        await OPERATOR.recorder.job(kind, type, _raw_object(event))

    return record_job


for _kind in OPERATOR.settings.kinds:
    kopf.on.event(_kind.group, _kind.version, _kind.plural, id=f"{_kind.plural}.{_kind.group}")(
        _job_handler(_kind)
    )


def _intermediate_handler(kind: JobKind) -> EventHandler:
    async def record_intermediate(type: str | None, event: kopf.RawEvent, **_: Any) -> None:
        await OPERATOR.recorder.intermediate(kind.kind, type, _raw_object(event))

    return record_intermediate


for _kind in INTERMEDIATE_KINDS:
    if _kind is not BATCH_JOB:
        kopf.on.event(_kind.group, _kind.version, _kind.plural, id=f"{_kind.plural}.{_kind.group}")(
            _intermediate_handler(_kind)
        )


@kopf.on.event("batch", "v1", "jobs")
async def record_batch_job(type: str | None, event: kopf.RawEvent, **_: Any) -> None:
    """A batch Job: recorded when opted in, else learnt as an intermediate object."""
    await OPERATOR.recorder.batch_job(type, _raw_object(event))


@kopf.on.event("v1", "pods")
async def record_pod(type: str | None, event: kopf.RawEvent, **_: Any) -> None:
    """Record a pod if it belongs to a tracked job."""
    await OPERATOR.recorder.pod(type, _raw_object(event))


@kopf.on.event("v1", "events")
async def record_event(type: str | None, event: kopf.RawEvent, **_: Any) -> None:
    """Record an Event about a tracked job or one of its pods."""
    await OPERATOR.recorder.event(type, _raw_object(event))
