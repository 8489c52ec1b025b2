"""From one watch event to stored rows: convert, attribute, gone-mark, upsert.

The Kopf handlers call one method of ``Recorder`` per watched resource and nothing
else. A DELETED event marks the row gone instead of deleting it, since the point is
to keep the history; pods and Events are stored only when they belong to a tracked
job (directly or through an intermediate object: a JobSet, a batch Job, a
RayCluster) in the job's own namespace, and what cannot be attributed yet waits in
``Attribution`` instead of being dropped, as its converted row.

Four classes share the work: ``Recorder`` finds the job each object names (its
owner, a label, the subject of an Event); ``Intermediates`` the job an
intermediate object, or a pod it controls, belongs to; ``Attributor`` judges by
namespace whether the object is that job's, stores what is, counts what is not,
and lets what cannot be judged yet wait (bounded: the oldest is dropped, named in
the log and counted); ``RowWriter`` writes rows. An object that cannot
be converted or attributed, for whatever reason (a RecursionError, a MemoryError,
a bug), is logged with its kind, namespace, name and the reason, counted
``invalid``, and skipped; nothing raises into Kopf.
"""

import contextlib
import datetime
import logging
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, TypeVar

from jobarchive import metrics
from jobarchive.bounded import Lru
from jobarchive.config import Settings, matches
from jobarchive.cutting import clip
from jobarchive.kinds import BATCH_JOB, JobKind, is_intermediate
from jobarchive.logs import shown
from jobarchive.logtails.capture import Capture
from jobarchive.objects import controller_of, mapping, text
from jobarchive.recording import convert
from jobarchive.recording.attribution import (
    EVENT,
    POD,
    UNRELATED,
    Attribution,
    Subject,
    Waiting,
)
from jobarchive.recording.convert.resources import resources_json
from jobarchive.recording.convert.strategies import jobset_roles
from jobarchive.recording.lookups import Shared
from jobarchive.rows import UID_LENGTH, EventRow, JobRow, PodRow
from jobarchive.storage.models import Event, Job, Pod, Stamped, utcnow
from jobarchive.storage.store import Store
from jobarchive.storage.waiting import ride_out
from jobarchive.storage.writer import Writer

logger = logging.getLogger(__name__)

R = TypeVar("R", JobRow, PodRow, EventRow)
DELETED = "DELETED"
ROLES_REMEMBERED = 10_000
# Kubernetes keeps Events for an hour by default (--event-ttl); two covers a longer setting.
EVENT_LIFETIME_HOURS = 2
# Objects named in one line about what was dropped or expired; the rest are counted.
NAMED_IN_A_LINE = 5
# Each one's namespace/name is cut to this there, so that five fit a line.
NAMED_LENGTH = 100
# Why an object is skipped is cut to this in its log line.
REASON_LENGTH = 300


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
    return f"{kind} {shown(namespace)}/{shown(name)}"


def named(items: list[Waiting]) -> str:
    """``Kind namespace/name`` of the first few objects, and how many more."""
    names = [
        f"{i.kind} {shown((i.namespace or '-') + '/' + i.name, NAMED_LENGTH)}"
        for i in items[:NAMED_IN_A_LINE]
    ]
    more = len(items) - len(names)
    return ", ".join(names) + (f" and {more} more" if more else "")


def given_up(items: list[Waiting], outcome: str) -> None:
    """Count objects given up, by kind, as ``outcome`` (dropped, expired)."""
    for kind, count in Counter(item.kind for item in items).items():
        metrics.OBJECTS.labels(kind, outcome).inc(count)


def reason(exc: Exception) -> str:
    """What went wrong: an InvalidObject's own words, else the exception's type and its
    message (the log line cuts it)."""
    if isinstance(exc, convert.InvalidObject):
        return str(exc)
    message = str(exc)
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


async def labelled_job(
    attribution: Attribution, store: Store, pod_uid: str, link: convert.NameLink
) -> str | None:
    """The job of a pod its labels link by name: the one it was attributed to if it was,
    else the live job of that name, known here or in the database; None if none is.

    A pod never changes jobs: its late updates, or those seen after a restart, must not
    move it to a job of the same name created since.
    """
    job_uid = attribution.pod_job(pod_uid)
    if job_uid is None and not attribution.knows_all:
        job_uid = await ride_out(lambda: store.pod_job_uid(pod_uid))
    if job_uid is not None:
        return job_uid
    job_uid = attribution.job_uid(link.namespace, link.job_name)
    if job_uid is None and not attribution.knows_all:
        job_uid = await ride_out(lambda: store.live_job_uid(link.namespace, link.job_name))
    # Checked again after the await: the job may have been recorded meanwhile, and from
    # there to the caller's wait nothing yields, so no release can slip between.
    return attribution.job_uid(link.namespace, link.job_name) or job_uid


def pod_waiting(
    event_type: str | None, body: Mapping[str, Any], main_container: str | None, region: str | None
) -> Waiting:
    """A pod as it is attributed and kept while it waits: its row, the job left empty."""
    row = convert.pod_row(body, UNRELATED, main_container, region)
    return Waiting(
        POD,
        row["pod_id"],
        row["namespace"],
        row["name"],
        pod=row,
        changed=changed_at(event_type, body),
        gone=event_type == DELETED,
    )


def event_waiting(
    event_type: str | None,
    body: Mapping[str, Any],
    region: str | None,
    involved: convert.InvolvedObject | None = None,
) -> Waiting:
    """An Event as it is attributed and kept while it waits: its row, the job left empty.

    Its namespace is the Event's own, where the API server put it: the namespace of
    the object it is about, if that is a job's.
    """
    row = convert.event_row(body, region, involved=involved)
    namespace = text(mapping(body.get("metadata")).get("namespace")) or row["obj_namespace"]
    return Waiting(
        EVENT,
        row["event_id"],
        namespace,
        row["name"],
        event=row,
        changed=changed_at(event_type, body),
    )


class RowWriter:
    """Writes rows, logging what cannot be converted or stored; tells the log tails'
    capture (``tails``, when set) of each pod seen and of each pod row stored."""

    def __init__(self, writer: Writer) -> None:
        self.writer = writer
        self.tails: Capture | None = None

    def note_pod(self, body: Mapping[str, Any]) -> None:
        """A pod that may be a tracked job's: its failed containers wait for its row."""
        if self.tails is not None:
            self.tails.noted(body)

    def invalid(self, kind: str, body: Mapping[str, Any], why: object) -> None:
        """Log and count an object that cannot become a row."""
        logger.warning("Skipping %s: %s", describe(kind, body), shown(why, REASON_LENGTH))
        metrics.OBJECTS.labels(kind, "invalid").inc()

    def invalid_waiting(self, item: Waiting, why: object) -> None:
        """Log and count an object, released from waiting, that could not be attributed."""
        logger.warning("Skipping %s: %s", named([item]), shown(why, REASON_LENGTH))
        metrics.OBJECTS.labels(item.kind, "invalid").inc()

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
                fields: Mapping[str, Any] = row
                if model is Pod and self.tails is not None:
                    self.tails.recorded(str(fields["pod_id"]), str(fields["job_id"]))
                continue
            namespace = row.get("namespace", row.get("obj_namespace")) or "-"
            logger.error(
                "Could not store %s %s/%s: %s",
                kind,
                shown(namespace),
                shown(row.get("name")),
                shown(error, REASON_LENGTH),
            )
        return stored


class Attributor:
    """Attributes objects to the job they name, within its namespace: stores the job's,
    counts the rest unrelated (with what waited for them), lets the unjudged wait. Keeps
    the roles a TrainJob's JobSet states (the runtime's defaults its own spec leaves out)."""

    def __init__(self, store: Store, attribution: Attribution, rows: RowWriter) -> None:
        self.store = store
        self.attribution = attribution
        self.rows = rows
        # TrainJob uid -> its resources JSON, as its JobSet states the roles.
        self._roles: Lru[str, str] = Lru(ROLES_REMEMBERED)
        self._look_up_job = Shared(self._ask_job)

    def roles(self, trainjob_uid: str) -> str | None:
        """The roles the TrainJob's JobSet stated, as resources JSON, if one was seen."""
        return self._roles.get(trainjob_uid)

    async def settle(self, items: list[Waiting], job_uid: str) -> None:
        """Attribute objects that name the job ``job_uid`` (``UNRELATED``: none): those in
        its namespace are stored, the others are unrelated and so is what waited for
        them; while the job's namespace is unknown, they wait for the job.

        Iterative, not recursive: a chain of objects that waited for each other is as
        long as anyone makes it. What fails is logged object by object: released from
        waiting, they are named nowhere else.
        """
        work = [(items, job_uid)]
        while work:
            items, job_uid = work.pop()
            if not items:
                continue
            try:
                work.extend(await self._settle(items, job_uid))
            except Exception as exc:
                for item in items:
                    self.rows.invalid_waiting(item, reason(exc))

    async def _settle(self, items: list[Waiting], job_uid: str) -> list[tuple[list[Waiting], str]]:
        """``settle`` for one job: returns what was released, and the job it names."""
        judged = self.attribution.judge(job_uid, items)
        if judged is None and not self.attribution.recently_absent(job_uid):
            await self._look_up_job(job_uid)
            judged = self.attribution.judge(job_uid, items)
        if judged is None:
            for item in items:
                self.wait(job_uid, item)
            return []
        mine, others = judged
        released = [(self._unrelated(item, job_uid), UNRELATED) for item in others]
        pods = [item for item in mine if item.kind == POD]
        if pods:
            released.append((await self._store_pods(pods, job_uid), job_uid))
        events = [item for item in mine if item.kind == EVENT]
        if events:
            await self._store_events(events, job_uid)
        for item in mine:
            if item.kind not in (POD, EVENT):
                if item.roles is not None:
                    await self._refine_roles(job_uid, item.roles)
                released.append((self.attribution.intermediate_seen(item.uid, job_uid), job_uid))
        return released

    async def _ask_job(self, job_uid: str) -> None:
        """Ask the database for the job ``job_uid``, and note its answer."""
        rows = await ride_out(lambda: self.store.rows(Job, [job_uid]))
        self.attribution.job_looked_up(job_uid, rows[0]["namespace"] if rows else None)

    def wait(self, subject: Subject, item: Waiting) -> None:
        """Let an object wait for ``subject``; say what the bounds dropped, and sweep."""
        self.dropped(self.attribution.wait(subject, item))
        expired = self.attribution.sweep()
        if expired:
            given_up(expired, "expired")
            logger.info(
                "Gave up on %d object(s) whose job, pod or owner never appeared within %.0f s: %s",
                len(expired),
                self.attribution.ttl,
                named(expired),
            )

    def dropped(self, items: list[Waiting]) -> None:
        """Count and name what was dropped from the waiting set, its content unsaid."""
        if items:
            given_up(items, "dropped")
            logger.warning(
                "Dropped %d object(s) that waited longest for their job, pod or owner: the "
                "waiting set is full (JOBARCHIVE_WAITING_MAX, JOBARCHIVE_WAITING_BYTES): %s",
                len(items),
                named(items),
            )

    def _unrelated(self, item: Waiting, job_uid: str) -> list[Waiting]:
        """Count an object that is no tracked job's; return what waited for it."""
        if job_uid != UNRELATED:
            logger.warning(
                "Not attributing %s to job %s, which is in another namespace",
                named([item]),
                shown(job_uid),
            )
        if item.kind in (POD, EVENT):
            metrics.OBJECTS.labels(item.kind, "skipped_unrelated").inc()
        if item.kind == POD:
            return self.attribution.pod_unrelated(item.uid)
        if item.kind == EVENT:
            return []
        return self.attribution.intermediate_seen(item.uid, UNRELATED)

    async def _store_pods(self, items: list[Waiting], job_uid: str) -> list[Waiting]:
        """Store pods of the job ``job_uid``; return the Events that waited for them."""
        now = utcnow()
        rows = []
        changed = []
        for item in items:
            if item.pod is None:
                continue
            row = item.pod.copy()
            row["job_id"] = clip(job_uid, UID_LENGTH)
            if item.gone:
                convert.mark_gone(row, now)
            rows.append(row)
            changed.append(item.changed)
        # The job's before the commit, so that its Events need not wait for it (in a
        # catch-up commits trail handlers by thousands); refused, it is still the job's.
        released = [e for row in rows for e in self.attribution.pod_tracked(row["pod_id"], job_uid)]
        await self.rows.write(Pod, POD, rows, changed)
        return released

    async def _store_events(self, items: list[Waiting], job_uid: str) -> None:
        """Store Events about the job ``job_uid``, its pods or its intermediate objects."""
        rows = []
        changed = []
        for item in items:
            if item.event is None:
                continue
            row = item.event.copy()
            row["job_id"] = job_uid
            rows.append(row)
            changed.append(item.changed)
        await self.rows.write(Event, EVENT, rows, changed)

    async def _refine_roles(self, trainjob_uid: str, resources: str) -> None:
        """Give a TrainJob the roles its JobSet states, now and on its later writes."""
        self._roles.put(trainjob_uid, resources)
        rows = await ride_out(lambda: self.store.rows(Job, [trainjob_uid]))
        stored = rows[0] if rows else None
        if stored and stored["resources"] != resources:
            # Rewritten at its own resourceVersion: a newer TrainJob write wins the guard,
            # and that one took the roles from the map above.
            stored["resources"] = resources
            await self.rows.write(Job, "TrainJob", [stored], [None])


class Intermediates:
    """Which job each intermediate object (JobSet, batch Job, RayCluster) belongs to,
    and the job of a pod such an object controls. Nothing of an intermediate object
    itself is stored."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        attribution: Attribution,
        attributor: Attributor,
        rows: RowWriter,
    ) -> None:
        self.settings = settings
        self.store = store
        self.attribution = attribution
        self.attributor = attributor
        self.rows = rows

    async def pod_job(self, owner_uid: str, pod_uid: str) -> str | None:
        """The job of a pod whose controller is the intermediate object ``owner_uid``."""
        job_uid = self.attribution.owner_job(owner_uid)
        if job_uid is None:
            # Its owner was deleted before this update came (or before a restart): the
            # pod's stored row still says which job it belongs to.
            job_uid = self.attribution.pod_job(pod_uid)
            if job_uid is None and not self.attribution.knows_all:
                job_uid = await ride_out(lambda: self.store.pod_job_uid(pod_uid))
            job_uid = self.attribution.owner_job(owner_uid) or job_uid
        return job_uid

    async def seen(self, kind: str, body: Mapping[str, Any]) -> None:
        """Learn which job an intermediate object belongs to, within that job's namespace,
        then settle what waited for it."""
        meta = mapping(body.get("metadata"))
        uid = text(meta.get("uid"))
        if not uid:
            raise convert.InvalidObject("metadata.uid is missing")
        item = Waiting(kind, uid, text(meta.get("namespace")) or "", text(meta.get("name")) or "")
        owner = controller_of(meta.get("ownerReferences"))
        owner_uid = text(owner.get("uid")) if owner is not None else None
        job_uid = UNRELATED
        if owner is not None and owner_uid:
            owner_kind = self.settings.kinds.find(owner.get("apiVersion"), owner.get("kind"))
            if owner_kind is not None:
                job_uid = owner_uid
                if kind == "JobSet" and owner_kind.strategy == "trainjob":
                    item.roles = self._jobset_roles(body)
            elif is_intermediate(owner.get("apiVersion"), owner.get("kind")):
                known = self.attribution.owner_job(owner_uid)
                if known is None:
                    self.attributor.wait(owner_uid, item)
                    return
                job_uid = known
        await self.attributor.settle([item], job_uid)

    def _jobset_roles(self, jobset: Mapping[str, Any]) -> str | None:
        """The roles a TrainJob's JobSet states, as resources JSON; None if unreadable."""
        try:
            return resources_json(jobset_roles(jobset))
        except convert.InvalidObject as exc:
            self.rows.invalid("JobSet", jobset, exc)
            return None


class Recorder:
    """Records jobs, pods and Events as their watch events arrive."""

    def __init__(
        self, settings: Settings, store: Store, writer: Writer, attribution: Attribution
    ) -> None:
        self.settings = settings
        self.store = store
        self.writer = writer
        self.attribution = attribution
        self.rows = RowWriter(writer)
        self.attributor = Attributor(store, attribution, self.rows)
        self.intermediates = Intermediates(settings, store, attribution, self.attributor, self.rows)
        self.attributor.dropped(
            attribution.bound_waiting(settings.waiting_max, settings.waiting_bytes)
        )

    async def load(self, namespaces: Sequence[str] | None = None) -> None:
        """Prime the attribution state from the database, of ``namespaces`` only when
        given (a shard's); call once at start."""
        since = utcnow() - datetime.timedelta(hours=EVENT_LIFETIME_HOURS)
        jobs = await self.store.live_jobs(namespaces)
        limit = self.attribution.capacity + 1
        pods = await self.store.recent_pods(since, limit, namespaces)
        self.attribution.load(jobs, pods)
        logger.info("Attribution starts from %d live jobs and %d recent pods", len(jobs), len(pods))

    @contextlib.contextmanager
    def _guard(self, kind: str, body: Mapping[str, Any]) -> Iterator[None]:
        """Whatever goes wrong with one object is that object's: logged, counted, skipped."""
        try:
            yield
        except Exception as exc:
            if not isinstance(exc, convert.InvalidObject):
                logger.debug("Handling %s failed", describe(kind, body), exc_info=True)
            self.rows.invalid(kind, body, reason(exc))

    async def job(self, kind: JobKind, event_type: str | None, body: Mapping[str, Any]) -> None:
        """Store a job's state, then whatever waited for it."""
        with self._guard(kind.kind, body):
            await self._job(kind, event_type, body)

    async def pod(self, event_type: str | None, body: Mapping[str, Any]) -> None:
        """Store a pod of a tracked job, or let it wait for its job, or ignore it."""
        with self._guard(POD, body):
            await self._pod(event_type, body)

    async def event(self, event_type: str | None, body: Mapping[str, Any]) -> None:
        """Store an Event about a tracked job, or about a pod or intermediate object of one;
        let it wait while its subject is unseen."""
        with self._guard(EVENT, body):
            await self._event(event_type, body)

    async def intermediate(
        self, kind: str, event_type: str | None, body: Mapping[str, Any]
    ) -> None:
        """Learn which job an intermediate object (JobSet, batch Job, RayCluster) belongs
        to, then store what waited for it. Nothing of the object itself is stored."""
        with self._guard(kind, body):
            await self.intermediates.seen(kind, body)

    async def batch_job(self, event_type: str | None, body: Mapping[str, Any]) -> None:
        """A batch Job: a training job of its own when opted in (no controller, labels
        matching the configured selector), else an intermediate object."""
        with self._guard(BATCH_JOB.kind, body):
            meta = mapping(body.get("metadata"))
            selector = self.settings.batch_job_selector
            if (
                selector is not None
                and controller_of(meta.get("ownerReferences")) is None
                and matches(selector, mapping(meta.get("labels")))
            ):
                uid = await self._job(BATCH_JOB, event_type, body)
                if uid is not None:
                    await self.attributor.settle(self.attribution.intermediate_seen(uid, uid), uid)
                return
            await self.intermediates.seen(BATCH_JOB.kind, body)

    async def _job(
        self, kind: JobKind, event_type: str | None, body: Mapping[str, Any]
    ) -> str | None:
        """Store a job and settle what waited for it; its uid, None if not stored."""
        row = convert.job_row(body, kind, self.settings.region)
        roles = self.attributor.roles(row["job_id"])
        if roles is not None:
            row["resources"] = roles
        gone = event_type == DELETED
        if gone:
            convert.mark_gone(row, utcnow())
        if not await self.rows.write(Job, kind.kind, [row], [changed_at(event_type, body)]):
            return None
        released = self.attribution.job_seen(row["namespace"], row["name"], row["job_id"], gone)
        if released:
            await self.attributor.settle(released, row["job_id"])
        return row["job_id"]

    async def _pod(self, event_type: str | None, body: Mapping[str, Any]) -> None:
        pod_uid = text(mapping(body.get("metadata")).get("uid"))
        if not pod_uid:
            raise convert.InvalidObject("metadata.uid is missing")
        link = convert.pod_job_link(body, self.settings.kinds)
        if link is None:
            metrics.OBJECTS.labels(POD, "skipped_unrelated").inc()
            await self.attributor.settle(self.attribution.pod_unrelated(pod_uid), UNRELATED)
            return
        self.rows.note_pod(body)
        # An owner's kind names the main container; a pod linked otherwise (an MPIJob
        # launcher, a Ray head) has its own.
        main = link.kind.main_container if isinstance(link, convert.OwnerLink) else None
        item = pod_waiting(event_type, body, main, self.settings.region)
        job_uid: str | None
        subject: Subject
        if isinstance(link, convert.OwnerLink):
            job_uid, subject = link.job_uid, link.job_uid
        elif isinstance(link, convert.IntermediateLink):
            job_uid, subject = (
                await self.intermediates.pod_job(link.owner_uid, pod_uid),
                link.owner_uid,
            )
        else:
            job_uid = await labelled_job(self.attribution, self.store, pod_uid, link)
            subject = (link.namespace, link.job_name)
        if job_uid is None:
            self.attributor.wait(subject, item)
            return
        await self.attributor.settle([item], job_uid)

    async def _event(self, event_type: str | None, body: Mapping[str, Any]) -> None:
        involved = convert.involved_object(body)
        job_uid: str | None = UNRELATED
        if self.settings.kinds.find(involved.api_version, involved.kind) is not None:
            job_uid = involved.uid or UNRELATED
        elif involved.uid and is_intermediate(involved.api_version, involved.kind):
            job_uid = self.attribution.owner_job(involved.uid)
        elif involved.uid and involved.kind == POD:
            job_uid = self.attribution.pod_job(involved.uid)
            if job_uid is None and not self.attribution.knows_all:
                job_uid = await ride_out(lambda: self.store.pod_job_uid(involved.uid))
                job_uid = self.attribution.pod_job(involved.uid) or job_uid
        if job_uid == UNRELATED:
            metrics.OBJECTS.labels(EVENT, "skipped_unrelated").inc()
            return
        item = event_waiting(event_type, body, self.settings.region, involved)
        if job_uid is None:
            self.attributor.wait(involved.uid, item)
            return
        await self.attributor.settle([item], job_uid)
