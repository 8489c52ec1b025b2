"""From one watch event to stored rows: convert, attribute, gone-mark, upsert.

The Kopf handlers call one method of ``Recorder`` per watched resource and nothing
else. A DELETED event marks the row gone instead of deleting it, since the point is
to keep the history; pods and Events are stored only when they belong to a tracked
job (directly or through an intermediate object: a JobSet, a batch Job, a
RayCluster; Events also through Kueue's Workload) in the job's own namespace, and
what cannot be attributed yet waits in ``Attribution`` instead of being dropped, as
its converted row. Kueue's Workloads become their jobs' attempts and waits
(``admissions``), its ClusterQueues their quotas over time (``capacity``).

``Recorder`` finds the job each object names (its owner, a label, the subject of an
Event), asking the database through ``lookups`` when memory cannot say;
``settling`` judges by namespace whether the object is that job's, stores what is,
counts what is not, and lets what cannot be judged yet wait (bounded: the oldest is
dropped, named in the log and counted); ``outcomes`` writes the rows. An object that
cannot be converted or attributed, for whatever reason (a RecursionError, a
MemoryError, a bug), is logged with its kind, namespace, name and the reason,
counted ``invalid``, and skipped; nothing raises into Kopf.
"""

import contextlib
import datetime
import logging
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from jobarchive.config import Settings, matches
from jobarchive.core.kinds import BATCH_JOB, WORKLOAD, JobKind, is_intermediate, is_workload
from jobarchive.core.untrusted import controller_of, mapping, text
from jobarchive.infra import metrics
from jobarchive.logtails.capture import Capture
from jobarchive.recording import convert
from jobarchive.recording.admissions import Admissions
from jobarchive.recording.attribution import (
    EVENT,
    POD,
    UNRELATED,
    Attributed,
    Attribution,
    Waiting,
)
from jobarchive.recording.capacity import CLUSTER_QUEUE, Capacities
from jobarchive.recording.lookups import Lookups
from jobarchive.recording.outcomes import RowWriter, describe, reason
from jobarchive.recording.settling import Intermediates, Roles, Settler
from jobarchive.storage.models import Job, utcnow
from jobarchive.storage.store import Store
from jobarchive.storage.writer import Writer

logger = logging.getLogger(__name__)

DELETED = "DELETED"
# Kubernetes keeps Events for an hour by default (--event-ttl); two covers a longer setting.
EVENT_LIFETIME_HOURS = 2


def changed_at(event_type: str | None, body: Mapping[str, Any]) -> float | None:
    """When a watched change happened, for the lag metric; None for the listing at start,
    whose objects may not have changed for months."""
    if event_type is None:
        return None
    when = convert.last_change(body)
    return when.timestamp() if when is not None else None


def pod_waiting(
    event_type: str | None,
    body: Mapping[str, Any],
    main_container: str | None,
    region: str | None,
    accelerators: frozenset[str],
) -> Waiting:
    """A pod as it is attributed and kept while it waits: its row, the job left empty."""
    row = convert.pod_row(body, "", main_container, region, accelerators)
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


class Recorder:
    """Records jobs, pods and Events as their watch events arrive."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        writer: Writer,
        attribution: Attribution,
        tails: Capture | None = None,
    ) -> None:
        """``tails``: the log tails' capture, told of each pod seen and each pod stored."""
        self.settings = settings
        self.store = store
        self.attribution = attribution
        self.lookups = Lookups(store, attribution)
        self.rows = RowWriter(writer, tails)
        self.roles = Roles(self.lookups, self.rows)
        self.settler = Settler(attribution, self.lookups, self.rows, self.roles)
        self.intermediates = Intermediates(settings, attribution, self.settler)
        self.admissions = Admissions(settings, attribution, self.lookups, self.settler)
        self.capacities = Capacities(settings.accelerators, self.lookups, self.rows)
        self.settler.dropped(
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

    async def workload(self, event_type: str | None, body: Mapping[str, Any]) -> None:
        """Record a Kueue Workload of a tracked job as the job's attempts and waits, and
        learn it as the job's (for the Events about it)."""
        with self._guard(WORKLOAD, body):
            gone = event_type == DELETED
            await self.admissions.seen(body, gone, changed_at(event_type, body))

    async def cluster_queue(self, event_type: str | None, body: Mapping[str, Any]) -> None:
        """Record a Kueue ClusterQueue's GPU quotas as they change."""
        with self._guard(CLUSTER_QUEUE, body):
            gone = event_type == DELETED
            await self.capacities.seen(body, gone, changed_at(event_type, body))

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
                    await self.settler.settle(self.attribution.intermediate_seen(uid, uid), uid)
                return
            await self.intermediates.seen(BATCH_JOB.kind, body)

    async def _job(
        self, kind: JobKind, event_type: str | None, body: Mapping[str, Any]
    ) -> str | None:
        """Store a job and settle what waited for it; its uid, None if not stored."""
        row = convert.job_row(body, kind, self.settings.region)
        roles = self.roles.of(row["job_id"])
        if roles is not None:
            row["resources"] = roles
        gone = event_type == DELETED
        if gone:
            convert.mark_gone(row, utcnow())
        if not await self.rows.write(Job, kind.kind, [row], [changed_at(event_type, body)]):
            return None
        released = self.attribution.job_seen(row["namespace"], row["name"], row["job_id"], gone)
        if released:
            await self.settler.settle(released, row["job_id"])
        return row["job_id"]

    async def _pod(self, event_type: str | None, body: Mapping[str, Any]) -> None:
        pod_uid = text(mapping(body.get("metadata")).get("uid"))
        if not pod_uid:
            raise convert.InvalidObject("metadata.uid is missing")
        link = convert.pod_job_link(body, self.settings.kinds)
        if link is None:
            metrics.OBJECTS.labels(POD, "skipped_unrelated").inc()
            await self.settler.settle(self.attribution.pod_unrelated(pod_uid), UNRELATED)
            return
        self.rows.note_pod(body)
        # An owner's kind names the main container; a pod linked otherwise (an MPIJob
        # launcher, a Ray head) has its own.
        main = link.kind.main_container if isinstance(link, convert.OwnerLink) else None
        item = pod_waiting(event_type, body, main, self.settings.region, self.settings.accelerators)
        job_uid, subject = await self.lookups.linked_job(pod_uid, link)
        if job_uid is None:
            self.settler.wait(subject, item)
            return
        await self.settler.settle([item], job_uid)

    async def _event(self, event_type: str | None, body: Mapping[str, Any]) -> None:
        involved = convert.involved_object(body)
        job_uid: Attributed | None = UNRELATED
        if self.settings.kinds.find(involved.api_version, involved.kind) is not None:
            job_uid = involved.uid or UNRELATED
        elif involved.uid and (
            is_intermediate(involved.api_version, involved.kind)
            or is_workload(involved.api_version, involved.kind)
        ):
            job_uid = self.attribution.owner_job(involved.uid)
        elif involved.uid and involved.kind == POD:
            job_uid = await self.lookups.pod_job(involved.uid)
        if job_uid is UNRELATED:
            metrics.OBJECTS.labels(EVENT, "skipped_unrelated").inc()
            return
        item = event_waiting(event_type, body, self.settings.region, involved)
        if job_uid is None:
            self.settler.wait(involved.uid, item)
            return
        await self.settler.settle([item], job_uid)
