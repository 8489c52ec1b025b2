"""From one watch event to stored rows: convert, attribute, gone-mark, upsert.

The Kopf handlers call one method of ``Recorder`` per watched resource and nothing
else. A DELETED event marks the row gone instead of deleting it, since the point is
to keep the history; pods and Events are stored only when they belong to a tracked
job (directly or through an intermediate object: a JobSet, a batch Job, a
RayCluster), and what cannot be attributed yet waits in ``Attribution`` instead of
being dropped.

Three classes share the work: ``Recorder`` attributes jobs, pods and Events;
``Intermediates`` learns which job each intermediate object belongs to (and the
roles a TrainJob's JobSet states); ``RowWriter`` converts what is attributed and
writes it. An object that cannot be converted is logged with its kind,
namespace, name and the reason, and skipped; it never raises into Kopf.
"""

import datetime
import logging
from collections.abc import Awaitable, Mapping
from typing import Any, TypeVar

from jobarchive import metrics
from jobarchive.bounded import Lru
from jobarchive.config import Settings, matches
from jobarchive.kinds import BATCH_JOB, JobKind, controller_of, is_intermediate
from jobarchive.recording import convert
from jobarchive.recording.attribution import UNRELATED, Attribution, Waiting
from jobarchive.recording.convert.common import mapping, text
from jobarchive.recording.convert.resources import resources_json
from jobarchive.recording.convert.strategies import jobset_roles
from jobarchive.rows import EventRow, JobRow, PodRow
from jobarchive.storage.errors import is_unavailable
from jobarchive.storage.models import Event, Job, Pod, Stamped, utcnow
from jobarchive.storage.store import Store
from jobarchive.storage.writer import Writer

logger = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R", JobRow, PodRow, EventRow)
DELETED = "DELETED"
ROLES_REMEMBERED = 10_000
# Kubernetes keeps Events for an hour by default (--event-ttl); two covers a longer setting.
EVENT_LIFETIME_HOURS = 2


def changed_at(event_type: str | None, body: Mapping[str, Any]) -> float | None:
    """When a watched change happened, for the lag metric; None for the listing at start,
    whose objects may not have changed for months."""
    if event_type is None:
        return None
    when = convert.last_change(body)
    return when.timestamp() if when is not None else None


def describe(kind: str, body: Mapping[str, Any]) -> str:
    """``Kind namespace/name`` of an object, as far as it has them."""
    meta = mapping(body.get("metadata"))
    namespace = text(meta.get("namespace")) or "-"
    name = text(meta.get("name")) or "<no name>"
    return f"{kind} {namespace}/{name[:300]}"


async def lookup(query: Awaitable[T]) -> T | None:
    """A database lookup; while the database is away, the answer is "not known yet",
    so the object waits for attribution (or the refinement for the next write)
    instead of being lost."""
    try:
        return await query
    except Exception as exc:
        if not is_unavailable(exc):
            raise
        return None


def sweep(attribution: Attribution) -> None:
    """Expire what waited too long for attribution, and say how much."""
    expired = attribution.sweep()
    if expired is not None and (expired.pods or expired.events or expired.intermediates):
        metrics.OBJECTS.labels("Pod", "expired").inc(expired.pods)
        metrics.OBJECTS.labels("Event", "expired").inc(expired.events)
        logger.info(
            "Gave up on %d pod(s) whose job or owner, %d Event(s) whose subject and "
            "%d intermediate object(s) whose owner never appeared within %.0f s",
            expired.pods,
            expired.events,
            expired.intermediates,
            attribution.ttl,
        )


def waiting(event_type: str | None, body: Mapping[str, Any]) -> Waiting:
    """An object attributed as it arrives, in the shape of one released from waiting."""
    return Waiting(event_type, dict(body), 0.0)


class RowWriter:
    """Converts attributed objects to rows and writes them, logging what cannot be
    converted or stored; a stored pod releases the Events that waited for it."""

    def __init__(self, settings: Settings, writer: Writer, attribution: Attribution) -> None:
        self.settings = settings
        self.writer = writer
        self.attribution = attribution

    def invalid(self, kind: str, body: Mapping[str, Any], reason: object) -> None:
        """Log and count an object that cannot become a row."""
        logger.warning("Skipping %s: %s", describe(kind, body), reason)
        metrics.OBJECTS.labels(kind, "invalid").inc()

    async def write(
        self, model: type[Stamped], kind: str, rows: list[R], changed: list[float | None]
    ) -> list[R]:
        """Write rows; log each the database refused, by kind, namespace and name.

        Returns the rows that were stored.
        """
        stored = []
        errors = await self.writer.write(model, rows, changed)
        for row, error in zip(rows, errors, strict=True):
            if error is None:
                stored.append(row)
                continue
            namespace = row.get("namespace", row.get("obj_namespace")) or "-"
            logger.error("Could not store %s %s/%s: %s", kind, namespace, row.get("name"), error)
        return stored

    async def pods(self, pods: list[Waiting], job_uid: str, main_container: str | None) -> None:
        """Store pods of the job ``job_uid``, then the Events that waited for them."""
        rows = []
        changed = []
        for pod in pods:
            try:
                row = convert.pod_row(pod.body, job_uid, main_container, self.settings.region)
            except convert.InvalidObject as exc:
                self.invalid("Pod", pod.body, exc)
                continue
            if pod.event_type == DELETED:
                convert.mark_gone(row, utcnow())
            rows.append(row)
            changed.append(changed_at(pod.event_type, pod.body))
        released: list[Waiting] = []
        for stored in await self.write(Pod, "Pod", rows, changed):
            released.extend(self.attribution.pod_tracked(stored["pod_id"], job_uid))
        if released:
            await self.events(released, job_uid)

    async def events(self, events: list[Waiting], job_uid: str | None) -> None:
        """Store Events about the job ``job_uid``, its pods or its intermediate objects."""
        rows = []
        changed = []
        for event in events:
            try:
                rows.append(convert.event_row(event.body, self.settings.region, job_uid))
            except convert.InvalidObject as exc:
                self.invalid("Event", event.body, exc)
                continue
            changed.append(changed_at(event.event_type, event.body))
        await self.write(Event, "Event", rows, changed)


class Intermediates:
    """Which job each intermediate object (JobSet, batch Job, RayCluster) belongs to,
    and the pods, objects and Events that waited for that answer; and the roles a
    TrainJob's JobSet states, which know the runtime's defaults that the TrainJob's
    own spec leaves out. Nothing of an intermediate object itself is stored."""

    def __init__(
        self, settings: Settings, store: Store, attribution: Attribution, rows: RowWriter
    ) -> None:
        self.settings = settings
        self.store = store
        self.attribution = attribution
        self.rows = rows
        # TrainJob uid -> roles read from its JobSet.
        self._roles: Lru[str, dict[str, Any]] = Lru(ROLES_REMEMBERED)

    def roles(self, trainjob_uid: str) -> dict[str, Any] | None:
        """The roles the TrainJob's JobSet stated, if one was seen."""
        return self._roles.get(trainjob_uid)

    async def seen(self, kind: str, event_type: str | None, body: Mapping[str, Any]) -> None:
        """Learn which job an intermediate object belongs to, then store what waited."""
        meta = mapping(body.get("metadata"))
        uid = text(meta.get("uid"))
        if not uid:
            self.rows.invalid(kind, body, "metadata.uid is missing")
            return
        owner = controller_of(meta.get("ownerReferences"))
        owner_uid = text(owner.get("uid")) if owner is not None else None
        if owner is None or not owner_uid:
            job_uid = UNRELATED
        elif owner_kind := self.settings.kinds.find(owner.get("apiVersion"), owner.get("kind")):
            job_uid = owner_uid
            if kind == "JobSet" and owner_kind.strategy == "trainjob":
                await self._refine_roles(owner_uid, body)
        elif is_intermediate(owner.get("apiVersion"), owner.get("kind")):
            known = self.attribution.owner_job(owner_uid)
            if known is None:
                self.attribution.wait_for_owner(
                    owner_uid, uid, event_type, dict(body), intermediate=True
                )
                sweep(self.attribution)
                return
            job_uid = known
        else:
            job_uid = UNRELATED
        await self.resolved(uid, job_uid)

    async def resolved(self, uid: str, job_uid: str) -> None:
        """The object ``uid`` belongs to ``job_uid`` (or to none): store what waited for it."""
        pods, intermediates, events = self.attribution.intermediate_seen(uid, job_uid)
        if job_uid == UNRELATED:
            for pod in pods:
                pod_uid = text(mapping(pod.body.get("metadata")).get("uid"))
                if pod_uid:
                    self.attribution.pod_unrelated(pod_uid)
            metrics.OBJECTS.labels("Pod", "skipped_unrelated").inc(len(pods))
            metrics.OBJECTS.labels("Event", "skipped_unrelated").inc(len(events))
        else:
            if pods:
                await self.rows.pods(pods, job_uid, None)
            if events:
                await self.rows.events(events, job_uid)
        for later in intermediates:
            kind = text(later.body.get("kind")) or "Intermediate"
            await self.seen(kind, later.event_type, later.body)

    async def pod(
        self, owner_uid: str, pod_uid: str, event_type: str | None, body: Mapping[str, Any]
    ) -> None:
        """Store a pod whose controller is the intermediate object ``owner_uid``, or let
        it wait for that object, or ignore it."""
        job_uid = self.attribution.owner_job(owner_uid)
        if job_uid is None:
            # Its owner was deleted before this update came (or before a restart): the
            # pod's stored row still says which job it belongs to.
            job_uid = self.attribution.pod_job(pod_uid)
            if job_uid is None and not self.attribution.knows_all:
                job_uid = await lookup(self.store.pod_job_uid(pod_uid))
            job_uid = self.attribution.owner_job(owner_uid) or job_uid
        if job_uid == UNRELATED:
            self.attribution.pod_unrelated(pod_uid)
            metrics.OBJECTS.labels("Pod", "skipped_unrelated").inc()
            return
        if job_uid is None:
            self.attribution.wait_for_owner(owner_uid, pod_uid, event_type, dict(body))
            sweep(self.attribution)
            return
        await self.rows.pods([waiting(event_type, body)], job_uid, None)

    async def _refine_roles(self, trainjob_uid: str, jobset: Mapping[str, Any]) -> None:
        """Give a TrainJob the roles its JobSet states, now and on its later writes."""
        try:
            roles = jobset_roles(jobset)
        except convert.InvalidObject as exc:
            self.rows.invalid("JobSet", jobset, exc)
            return
        self._roles.put(trainjob_uid, roles)
        rows = await lookup(self.store.rows(Job, [trainjob_uid]))
        stored = rows[0] if rows else None
        if stored and stored["resources"] != resources_json(roles):
            # Rewritten at its own resourceVersion: a newer TrainJob write wins the guard,
            # and that one took the roles from the map above.
            stored["resources"] = resources_json(roles)
            await self.rows.write(Job, "TrainJob", [stored], [None])


class Recorder:
    """Records jobs, pods and Events as their watch events arrive."""

    def __init__(
        self, settings: Settings, store: Store, writer: Writer, attribution: Attribution
    ) -> None:
        self.settings = settings
        self.store = store
        self.writer = writer
        self.attribution = attribution
        self.rows = RowWriter(settings, writer, attribution)
        self.intermediates = Intermediates(settings, store, attribution, self.rows)

    async def load(self) -> None:
        """Prime the attribution state from the database; call once at start."""
        since = utcnow() - datetime.timedelta(hours=EVENT_LIFETIME_HOURS)
        jobs = await self.store.live_jobs()
        pods = await self.store.recent_pods(since, limit=self.attribution.capacity + 1)
        self.attribution.load(jobs, pods)
        logger.info("Attribution starts from %d live jobs and %d recent pods", len(jobs), len(pods))

    async def job(self, kind: JobKind, event_type: str | None, body: Mapping[str, Any]) -> None:
        """Store a job's state, then whatever pods were waiting for it."""
        try:
            row = convert.job_row(body, kind, self.settings.region)
        except convert.InvalidObject as exc:
            self.rows.invalid(kind.kind, body, exc)
            return
        roles = self.intermediates.roles(row["job_id"])
        if roles is not None:
            row["resources"] = resources_json(roles)
        gone = event_type == DELETED
        if gone:
            convert.mark_gone(row, utcnow())
        if not await self.rows.write(Job, kind.kind, [row], [changed_at(event_type, body)]):
            return
        released = self.attribution.job_seen(row["namespace"], row["name"], row["job_id"], gone)
        if released:
            # Pods that waited were linked by label, not owned by the job: their main
            # container is not the kind's default (an MPIJob launcher's, say).
            await self.rows.pods(released, row["job_id"], None)

    async def pod(self, event_type: str | None, body: Mapping[str, Any]) -> None:
        """Store a pod of a tracked job, or let it wait for its job, or ignore it."""
        pod_uid = text(mapping(body.get("metadata")).get("uid"))
        if not pod_uid:
            self.rows.invalid("Pod", body, "metadata.uid is missing")
            return
        link = convert.pod_job_link(body, self.settings.kinds)
        if link is None:
            self.attribution.pod_unrelated(pod_uid)
            metrics.OBJECTS.labels("Pod", "skipped_unrelated").inc()
            return
        if isinstance(link, convert.OwnerLink):
            await self.rows.pods(
                [waiting(event_type, body)], link.job_uid, link.kind.main_container
            )
            return
        if isinstance(link, convert.IntermediateLink):
            await self.intermediates.pod(link.owner_uid, pod_uid, event_type, body)
            return
        job_uid = self.attribution.job_uid(link.namespace, link.job_name)
        if job_uid is None and not self.attribution.knows_all:
            job_uid = await lookup(self.store.live_job_uid(link.namespace, link.job_name))
        # Checked again after the await: the job may have been recorded meanwhile, and
        # from here to wait_for_job nothing yields, so no release can slip between.
        job_uid = self.attribution.job_uid(link.namespace, link.job_name) or job_uid
        if job_uid is None:
            self.attribution.wait_for_job(
                link.namespace, link.job_name, pod_uid, event_type, dict(body)
            )
            sweep(self.attribution)
            return
        await self.rows.pods([waiting(event_type, body)], job_uid, None)

    async def intermediate(
        self, kind: str, event_type: str | None, body: Mapping[str, Any]
    ) -> None:
        """Learn which job an intermediate object (JobSet, batch Job, RayCluster) belongs
        to, then store what waited for it. Nothing of the object itself is stored."""
        await self.intermediates.seen(kind, event_type, body)

    async def batch_job(self, event_type: str | None, body: Mapping[str, Any]) -> None:
        """A batch Job: a training job of its own when opted in (no controller, labels
        matching the configured selector), else an intermediate object."""
        meta = mapping(body.get("metadata"))
        selector = self.settings.batch_job_selector
        if (
            selector is not None
            and controller_of(meta.get("ownerReferences")) is None
            and matches(selector, mapping(meta.get("labels")))
        ):
            await self.job(BATCH_JOB, event_type, body)
            uid = text(meta.get("uid"))
            if uid:
                await self.intermediates.resolved(uid, uid)
            return
        await self.intermediate(BATCH_JOB.kind, event_type, body)

    async def event(self, event_type: str | None, body: Mapping[str, Any]) -> None:
        """Store an Event about a tracked job, or about a pod or intermediate object of one;
        let it wait while its subject is unseen."""
        try:
            involved = convert.involved_object(body)
        except convert.InvalidObject as exc:
            self.rows.invalid("Event", body, exc)
            return
        if self.settings.kinds.find(involved.api_version, involved.kind) is not None:
            await self.rows.events([waiting(event_type, body)], involved.uid)
            return
        intermediate = bool(involved.uid) and is_intermediate(involved.api_version, involved.kind)
        if (involved.kind != "Pod" and not intermediate) or not involved.uid:
            metrics.OBJECTS.labels("Event", "skipped_unrelated").inc()
            return
        if intermediate:
            job_uid = self.attribution.owner_job(involved.uid)
        else:
            job_uid = self.attribution.pod_job(involved.uid)
        if job_uid is None and not intermediate and not self.attribution.knows_all:
            job_uid = await lookup(self.store.pod_job_uid(involved.uid))
            job_uid = self.attribution.pod_job(involved.uid) or job_uid
        if job_uid == UNRELATED:
            metrics.OBJECTS.labels("Event", "skipped_unrelated").inc()
            return
        if job_uid is not None:
            await self.rows.events([waiting(event_type, body)], job_uid)
            return
        event_uid = text(mapping(body.get("metadata")).get("uid"))
        if not event_uid:
            self.rows.invalid("Event", body, "metadata.uid is missing")
            return
        self.attribution.wait_for_pod(involved.uid, event_uid, event_type, dict(body))
        sweep(self.attribution)
