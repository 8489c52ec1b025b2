"""Kopf bindings: one ``@kopf.on.event`` handler per tracked kind, plus Kueue's Workloads
and ClusterQueues, Pods and Events, and the operator's start, stop and liveness probe.

Only event-watching handlers are used: they keep no state on the objects, so Kopf
never patches, annotates or finalizes anything it watches. Kopf's posting of
Kubernetes Events is turned off, or it would write Events about its own handling,
which this operator watches. Its finalizer name is set to one no one else uses,
because Kopf strips its configured finalizer from objects that carry it when no
handler needs it.

This is the only module that imports Kopf, and importing it registers nothing:
``operator/main.py`` calls ``register`` with the settings once its pre-flight checks
pass. The operator itself is ``app.Operator``, built by Kopf's start-up handler and
kept in Kopf's memo, where every handler finds it (ARCHITECTURE.md, decision 27).
The operator's exceptions become Kopf's here: ``DatabaseUnavailable`` (and
``ClusterUnknown``) a ``TemporaryError``, so that Kopf tries the start again;
``Unusable`` (a database to migrate first) a ``PermanentError``, which stops the
operator; ``Unhealthy`` a ``PermanentError``, which fails the liveness probe, as does
a Kopf watch that ended (``EndedWatches``, ARCHITECTURE.md decision 38).
"""

import contextlib
import functools
import gc
import logging
import random
import re
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, cast

import kopf

from jobarchive import app
from jobarchive.config import Settings
from jobarchive.core.kinds import (
    BATCH_JOB,
    CLUSTER_QUEUES,
    INTERMEDIATE_KINDS,
    KUEUE_GROUP,
    WORKLOADS,
    JobKind,
)
from jobarchive.infra.scope import Scope
from jobarchive.maintenance.peering import Peering

FINALIZER = "jobarchive.kubeflow.org/never-set"
# Seconds before Kopf tries the start again after the database could not be opened.
RETRY_START_AFTER = 10

# Seconds an object's Kopf worker outlives its last event (Kopf's default: 5). A catch-up
# starts one worker per object: at 5 s, tens of thousands of idle tasks and queues live
# at once, which the collector walks again and again.
WORKER_IDLE_TIMEOUT = 0.05

# Under --namespace, objects of one watch stream (one kind in one namespace) handled at
# once. Kopf starts one object's handling per stream per turn of its loop: one operator
# has two busy streams (pods, Events), a shard of 100 namespaces two hundred, which put
# every listed object in flight at once (ARCHITECTURE.md, decision 22).
SHARD_WORKER_LIMIT = 200

# Objects per page of Kopf's LIST (its default: the whole list in one answer). Paged, a
# catch-up holds a page's JSON at a time, and the listing waits its turn on the event loop
# behind the handlers; unpaged, 20,000 kubelet-written pods and Events peaked at 1,938
# MiB, paged by 500 at 212 (ARCHITECTURE.md, decision 38). 500 is client-go's and
# kubectl's page.
LIST_CHUNK_SIZE = 500

# What Kopf 1.45's task guard logs when a task ends other than by cancellation, for the
# task its orchestrator names "watcher for RESOURCE@NAMESPACE", capitalized (so "none"
# for a cluster-wide watch): the one sign, short of patching Kopf, that a watch is over.
WATCH_ENDED = re.compile(
    r"Watcher for (?P<resource>[^@\s]+)@(?P<namespace>\S+) has "
    r"(?:failed: .*|finished unexpectedly\.)",
    re.DOTALL,
)
KOPF_LOGGER = "kopf"

# Python's collector after start-up: a young collection every 50,000 allocations
# (Python's own: 700), the older generations as often as Python collects them relative
# to the young one. Chosen from figures: ARCHITECTURE.md, decision 21.
COLLECTOR_THRESHOLDS = (50_000, 10, 10)

logger = logging.getLogger(__name__)

EventHandler = Callable[..., Awaitable[None]]


class NoDiffBase(kopf.DiffBaseStorage):
    """Kopf's diffbase turned off: no essence is built, fetched or stored.

    Kopf builds an object's essence (a deep copy of its body without metadata and
    status) on every event, and compares it with the one stored in an annotation, only
    for change-detecting handlers (on.create, on.update, on.field, on.resume) and
    daemons: on.event handlers get the event as it came. This operator has only
    on.event handlers, so the essence is computed for nothing, and it stores none.
    """

    def build(self, *, body: kopf.Body, extra_fields: object = None) -> kopf.BodyEssence:
        """An empty essence: there is nothing to compare."""
        return kopf.BodyEssence()

    def fetch(self, *, body: kopf.Body) -> kopf.BodyEssence | None:
        """No essence was ever stored."""
        return None

    def store(self, *, body: kopf.Body, patch: kopf.Patch, essence: kopf.BodyEssence) -> None:
        """Store nothing: a write to a watched object is what this operator never does."""


class EndedWatches(logging.Handler):
    """Kopf's watches that ended, learnt from Kopf's log: each said in one line, and
    kept for the liveness probe (ARCHITECTURE.md, decision 38)."""

    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.ended: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        """Note a record of Kopf's task guard about a watcher; ignore any other."""
        found = WATCH_ENDED.fullmatch(record.getMessage())
        if found is None:
            return
        resource, namespace = found["resource"], found["namespace"]
        where = "all namespaces" if namespace == "none" else f"namespace {namespace}"
        self.ended.append(f"{resource} in {where}")
        logger.error(
            "Kopf's watch of %s in %s ended (%s): Kopf 1.45 stops the operator, and the "
            "liveness probe fails (it stops answering; should Kopf run on without the "
            "watch, it answers 500), so the kubelet restarts the pod, which lists again. "
            "A 410 is a paged list that outlived the API server's compaction window (5 "
            "minutes by default): shard to shorten each catch-up (docs/operations.md, Sizing)",
            resource,
            where,
            _cause(record),
        )


def _cause(record: logging.LogRecord) -> str:
    """What ended a watch, in one line. Kopf's API errors carry the HTTP status and the
    server's message (their text is a tuple of it and the whole Status); without a
    message, the error they were raised from says it."""
    if record.exc_info is None or record.exc_info[1] is None:
        return "it finished"
    exc = record.exc_info[1]
    texts = [arg for arg in exc.args if isinstance(arg, str) and arg]
    text = texts[0] if texts else str(exc.__cause__ or "") or type(exc).__name__
    status = getattr(exc, "status", None)
    said = f"HTTP {status}: {text}" if isinstance(status, int) else text
    return said.splitlines()[0]


def register(settings: Settings) -> None:
    """Register the operator's handlers with Kopf: its start (which builds the operator
    from ``settings``), stop and probes; one handler per tracked job kind and per
    intermediate kind; batch Jobs, Kueue's Workloads and ClusterQueues, pods and Events.
    Watches Kopf's log for watches that end."""
    ended = EndedWatches()
    logging.getLogger(KOPF_LOGGER).addHandler(ended)
    kopf.on.startup()(functools.partial(start, configured=settings))
    kopf.on.cleanup()(stop)
    kopf.on.probe(id="database")(database_health)
    kopf.on.probe(id="watches")(functools.partial(watch_health, ended=ended))
    for kind in settings.kinds:
        kopf.on.event(kind.group, kind.version, kind.plural, id=_handler_id(kind))(
            _job_handler(kind)
        )
    for kind in INTERMEDIATE_KINDS:
        if kind is not BATCH_JOB:
            kopf.on.event(kind.group, kind.version, kind.plural, id=_handler_id(kind))(
                _intermediate_handler(kind)
            )
    kopf.on.event("batch", "v1", "jobs")(record_batch_job)
    # No version: the one the API server prefers, v1beta2 where Kueue serves it. Without
    # Kueue, Kopf says once at start that it cannot serve it (as for any kind not installed).
    kopf.on.event(KUEUE_GROUP, WORKLOADS)(record_workload)
    kopf.on.event(KUEUE_GROUP, CLUSTER_QUEUES)(record_cluster_queue)
    kopf.on.event("v1", "pods")(record_pod)
    kopf.on.event("v1", "events")(record_event)


def _handler_id(kind: JobKind) -> str:
    return f"{kind.plural}.{kind.group}"


def _operator(memo: kopf.Memo) -> app.Operator:
    """The operator the start built, from Kopf's memo: each object's memo is a shallow
    copy of the operator's, made when Kopf first sees the object, after the start."""
    operator: app.Operator = memo.operator
    return operator


async def start(
    configured: Settings, memo: kopf.Memo, settings: kopf.OperatorSettings, **_: Any
) -> None:
    """Build the operator once (Kopf tries the start again after a failure), make Kopf a
    passive observer, then start the operator."""
    if "operator" not in memo:
        memo.operator = app.Operator(configured)
    operator = _operator(memo)
    _observe_passively(settings, operator.settings.peering_lifetime)
    _pace(settings, operator.scope)
    try:
        await operator.start(_peering(settings))
    except (app.ClusterUnknown, app.DatabaseUnavailable) as exc:
        # One line instead of a traceback; Kopf tries the start again after the delay.
        raise kopf.TemporaryError(str(exc), delay=RETRY_START_AFTER) from None
    except app.Unusable as exc:
        # A cluster name the archive cannot tell apart (schema.ClusterClash), or an archive
        # to migrate that the pre-flight check of operator/main.py could not see.
        raise kopf.PermanentError(str(exc)) from None
    _settle_collector()


def _observe_passively(settings: kopf.OperatorSettings, peering_lifetime: int) -> None:
    """Kopf's settings for an operator that only watches: no Events, no finalizer, quiet."""
    settings.posting.enabled = False
    settings.persistence.finalizer = FINALIZER
    # Replicas of equal priority would all pause (Kopf's peering rule); random ones
    # make the highest one work and the others stand by. ``--priority`` still rules.
    if not settings.peering.priority:
        settings.peering.priority = random.randrange(1, 2**31)
    settings.peering.lifetime = peering_lifetime
    # Kopf logs every handler run of every watched object at INFO; at the rate pods and
    # Events arrive that costs real time and drowns the lines that matter.
    logging.getLogger("kopf.objects").setLevel(logging.WARNING)


def _pace(settings: kopf.OperatorSettings, scope: Scope) -> None:
    """Turn off the Kopf machinery that on.event handlers do not use; page the lists;
    under ``--namespace``, bound what each watch stream has in flight."""
    settings.persistence.diffbase_storage = NoDiffBase()
    settings.queueing.idle_timeout = WORKER_IDLE_TIMEOUT
    settings.watching.chunk_size = LIST_CHUNK_SIZE
    # Said once: the start is tried again every few seconds while the database is away.
    if not scope.clusterwide and settings.queueing.worker_limit != SHARD_WORKER_LIMIT:
        settings.queueing.worker_limit = SHARD_WORKER_LIMIT
        logger.info(
            "Handling at most %d objects of each kind and namespace at once", SHARD_WORKER_LIMIT
        )


def _settle_collector() -> None:
    """Freeze what start-up built and raise the collector's thresholds; says so in one
    line.

    Everything alive once the operator is primed (modules, Kopf's registry, the
    attribution loaded from the database) lives as long as the process: frozen, the
    collector never walks it again. Kopf leaves two small reference cycles per event
    (its body and patch views), which only the collector frees; with the event's
    object emptied after recording (``_taken``) they hold no body, so young
    collections can be rare (ARCHITECTURE.md, decision 21).
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(*COLLECTOR_THRESHOLDS)
    logger.info(
        "Collector: %d objects frozen after start-up, thresholds %s",
        gc.get_freeze_count(),
        "/".join(map(str, gc.get_threshold())),
    )


def _peering(settings: kopf.OperatorSettings) -> Peering:
    """This replica's place in Kopf's peering: none when standalone or namespaced."""
    clusterwide = settings.peering.clusterwide and not settings.peering.standalone
    return Peering(
        name=settings.peering.name if clusterwide else None,
        priority=settings.peering.priority,
    )


async def stop(memo: kopf.Memo, **_: Any) -> None:
    """Stop the operator: what is queued is committed first."""
    await _operator(memo).stop()


async def database_health(memo: kopf.Memo, **_: Any) -> str:
    """For Kopf's liveness endpoint: unhealthy once writes have failed for too long."""
    try:
        return _operator(memo).health()
    except app.Unhealthy as exc:
        raise kopf.PermanentError(str(exc)) from None


async def watch_health(ended: EndedWatches, **_: Any) -> str:
    """For Kopf's liveness endpoint: unhealthy once any of Kopf's watches has ended."""
    if ended.ended:
        raise kopf.PermanentError("watch ended, nothing recorded of: " + ", ".join(ended.ended))
    return "all watching"


@contextlib.contextmanager
def _taken(event: kopf.RawEvent) -> Iterator[dict[str, Any]]:
    """The object exactly as the API sent it; emptied once it is recorded.

    Kopf's ``body`` is a live view that resolves every key access through layers of
    mappings (``resolve`` showed in profiles of the catch-up); the converters read
    dozens of keys per object and expect plain dicts, which the watch event holds.
    Kopf's views of the event's object sit in reference cycles that outlive the
    handler until a collection: emptied, the object is freed at once instead. After
    an on.event handler Kopf reads the object only to look for its own finalizer and
    deletion mark, so an empty one leaves it nothing to do, which is what this
    operator asks of it anyway.
    """
    # A plain dict parsed from the watch stream; Kopf types it as a TypedDict.
    source = cast("dict[str, Any] | None", event.get("object"))
    try:
        yield dict(source or {})
    finally:
        if source is not None:
            source.clear()


def _job_handler(kind: JobKind) -> EventHandler:
    async def record_job(type: str | None, event: kopf.RawEvent, memo: kopf.Memo, **_: Any) -> None:
        with _taken(event) as body:
            await _operator(memo).recorder.job(kind, type, body)

    return record_job


def _intermediate_handler(kind: JobKind) -> EventHandler:
    async def record_intermediate(
        type: str | None, event: kopf.RawEvent, memo: kopf.Memo, **_: Any
    ) -> None:
        with _taken(event) as body:
            await _operator(memo).recorder.intermediate(kind.kind, type, body)

    return record_intermediate


async def record_batch_job(
    type: str | None, event: kopf.RawEvent, memo: kopf.Memo, **_: Any
) -> None:
    """A batch Job: recorded when opted in, else learnt as an intermediate object."""
    with _taken(event) as body:
        await _operator(memo).recorder.batch_job(type, body)


async def record_workload(
    type: str | None, event: kopf.RawEvent, memo: kopf.Memo, **_: Any
) -> None:
    """Record a Kueue Workload of a tracked job as its attempts and waits."""
    with _taken(event) as body:
        await _operator(memo).recorder.workload(type, body)


async def record_cluster_queue(
    type: str | None, event: kopf.RawEvent, memo: kopf.Memo, **_: Any
) -> None:
    """Record a Kueue ClusterQueue's GPU quotas as they change (decision 44)."""
    with _taken(event) as body:
        await _operator(memo).recorder.cluster_queue(type, body)


async def record_pod(type: str | None, event: kopf.RawEvent, memo: kopf.Memo, **_: Any) -> None:
    """Record a pod if it belongs to a tracked job."""
    with _taken(event) as body:
        await _operator(memo).recorder.pod(type, body)


async def record_event(type: str | None, event: kopf.RawEvent, memo: kopf.Memo, **_: Any) -> None:
    """Record an Event about a tracked job or one of its pods."""
    with _taken(event) as body:
        await _operator(memo).recorder.event(type, body)
