"""Attributing objects to the job they name, within its namespace (decision 17): what
is the job's is stored, what is not is counted unrelated, what cannot be judged yet
waits (``attribution``); and the intermediate objects that stand between a job and
its pods, of which nothing is stored but whose job they belong to.
"""

import logging
from collections.abc import Mapping
from typing import Any

from jobarchive.config import Settings
from jobarchive.core.bounded import Lru
from jobarchive.core.cutting import clip
from jobarchive.core.kinds import WORKLOAD, is_intermediate
from jobarchive.core.rows import UID_LENGTH, AttemptRow, EventRow, PodRow, WaitRow
from jobarchive.core.untrusted import controller_of, mapping, text
from jobarchive.infra import metrics
from jobarchive.infra.logs import shown
from jobarchive.recording import convert
from jobarchive.recording.attribution import (
    EVENT,
    POD,
    UNRELATED,
    Attributed,
    Attribution,
    Subject,
    Waiting,
)
from jobarchive.recording.convert.resources import resources_json
from jobarchive.recording.convert.strategies import jobset_roles
from jobarchive.recording.lookups import Lookups
from jobarchive.recording.outcomes import RowWriter, given_up, named, reason
from jobarchive.storage.kueue import Attempt, Wait
from jobarchive.storage.models import Event, Job, Pod, utcnow

logger = logging.getLogger(__name__)

ROLES_REMEMBERED = 10_000
# What was released by attributing objects, and the job it names.
Released = tuple[list[Waiting], Attributed]


class Roles:
    """The roles each TrainJob's JobSet states (the runtime's defaults the TrainJob's own
    spec leaves out), given to the TrainJob's row now and on its later writes."""

    def __init__(self, lookups: Lookups, rows: RowWriter) -> None:
        self.lookups = lookups
        self.rows = rows
        # TrainJob uid -> its resources JSON, as its JobSet states the roles.
        self._roles: Lru[str, str] = Lru(ROLES_REMEMBERED)

    def of(self, trainjob_uid: str) -> str | None:
        """The roles the TrainJob's JobSet stated, as resources JSON, if one was seen."""
        return self._roles.get(trainjob_uid)

    async def refine(self, trainjob_uid: str, resources: str) -> None:
        """Give a TrainJob the roles its JobSet states, now and on its later writes."""
        self._roles.put(trainjob_uid, resources)
        stored = await self.lookups.job_row(trainjob_uid)
        if stored and stored["resources"] != resources:
            # Rewritten at its own resourceVersion: a newer TrainJob write wins the guard,
            # and that one took the roles from the map above.
            stored["resources"] = resources
            await self.rows.write(Job, "TrainJob", [stored], [None])


class Settler:
    """Attributes objects to the job they name, within its namespace: stores the job's,
    counts the rest unrelated (with what waited for them), lets the unjudged wait."""

    def __init__(
        self, attribution: Attribution, lookups: Lookups, rows: RowWriter, roles: Roles
    ) -> None:
        self.attribution = attribution
        self.lookups = lookups
        self.rows = rows
        self.roles = roles

    async def settle(self, items: list[Waiting], job_uid: Attributed) -> None:
        """Attribute objects that name the job ``job_uid`` (or ``UNRELATED``): those in
        its namespace are stored, the others are unrelated and so is what waited for
        them; while the job's namespace is unknown, they wait for the job.

        Iterative, not recursive: a chain of objects that waited for each other is as
        long as anyone makes it. What fails is logged object by object: released from
        waiting, they are named nowhere else.
        """
        work: list[Released] = [(items, job_uid)]
        while work:
            items, job_uid = work.pop()
            if not items:
                continue
            try:
                work.extend(await self._settle(items, job_uid))
            except Exception as exc:
                for item in items:
                    self.rows.invalid_waiting(item, reason(exc))

    async def _settle(self, items: list[Waiting], job_uid: Attributed) -> list[Released]:
        """``settle`` for one job: returns what was released, and the job it names."""
        if job_uid is UNRELATED:
            return [(self._unrelated(item), UNRELATED) for item in items]
        judged = self.attribution.judge(job_uid, items)
        if judged is None and not self.attribution.recently_absent(job_uid):
            await self.lookups.job(job_uid)
            judged = self.attribution.judge(job_uid, items)
        if judged is None:
            for item in items:
                self.wait(job_uid, item)
            return []
        mine, others = judged
        for item in others:
            logger.warning(
                "Not attributing %s to job %s, which is in another namespace",
                named([item]),
                shown(job_uid),
            )
        released: list[Released] = [(self._unrelated(item), UNRELATED) for item in others]
        released.append((await self._store(mine, job_uid), job_uid))
        for item in mine:
            if item.kind not in (POD, EVENT):
                if item.roles is not None:
                    await self.roles.refine(job_uid, item.roles)
                released.append((self.attribution.intermediate_seen(item.uid, job_uid), job_uid))
        return released

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

    def _unrelated(self, item: Waiting) -> list[Waiting]:
        """Count an object that is no tracked job's; return what waited for it."""
        if item.kind in (POD, EVENT, WORKLOAD):
            metrics.OBJECTS.labels(item.kind, "skipped_unrelated").inc()
        if item.kind == POD:
            return self.attribution.pod_unrelated(item.uid)
        if item.kind == EVENT:
            return []
        return self.attribution.intermediate_seen(item.uid, UNRELATED)

    async def _store(self, items: list[Waiting], job_uid: str) -> list[Waiting]:
        """Store the pods, then the Events, of the job ``job_uid`` among ``items``;
        return the Events that waited for those pods."""
        now = utcnow()
        pods: list[PodRow] = []
        events: list[EventRow] = []
        for item in items:
            if item.pod is not None:
                pod = item.pod.copy()
                pod["job_id"] = clip(job_uid, UID_LENGTH)
                if item.gone:
                    convert.mark_gone(pod, now)
                pods.append(pod)
            elif item.event is not None:
                event = item.event.copy()
                event["job_id"] = job_uid
                events.append(event)
        # The job's before the commit, so that its Events need not wait for it (in a
        # catch-up commits trail handlers by thousands); refused, it is still the job's.
        released = [e for pod in pods for e in self.attribution.pod_tracked(pod["pod_id"], job_uid)]
        pod_changes = [item.changed for item in items if item.pod is not None]
        event_changes = [item.changed for item in items if item.event is not None]
        await self.rows.write(Pod, POD, pods, pod_changes)
        await self.rows.write(Event, EVENT, events, event_changes)
        await self._store_admissions(items, job_uid)
        return released

    async def _store_admissions(self, items: list[Waiting], job_uid: str) -> None:
        """Store the Kueue attempts and waits among ``items`` as the job ``job_uid``'s."""
        job = clip(job_uid, UID_LENGTH)
        attempts: list[AttemptRow] = []
        waits: list[WaitRow] = []
        for item in items:
            attempts += [{**row, "job_id": job} for row in item.attempts or ()]
            waits += [{**row, "job_id": job} for row in item.waits or ()]
        changes = [item.changed for item in items for _ in item.attempts or ()]
        await self.rows.write(Attempt, WORKLOAD, attempts, changes)
        changes = [item.changed for item in items for _ in item.waits or ()]
        await self.rows.write(Wait, WORKLOAD, waits, changes)


class Intermediates:
    """Which job each intermediate object (JobSet, batch Job, RayCluster) belongs to.
    Nothing of an intermediate object itself is stored."""

    def __init__(self, settings: Settings, attribution: Attribution, settler: Settler) -> None:
        self.settings = settings
        self.attribution = attribution
        self.settler = settler

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
        job_uid: Attributed = UNRELATED
        if owner is not None and owner_uid:
            owner_kind = self.settings.kinds.find(owner.get("apiVersion"), owner.get("kind"))
            if owner_kind is not None:
                job_uid = owner_uid
                if kind == "JobSet" and owner_kind.strategy == "trainjob":
                    item.roles = self._jobset_roles(body)
            elif is_intermediate(owner.get("apiVersion"), owner.get("kind")):
                known = self.attribution.owner_job(owner_uid)
                if known is None:
                    self.settler.wait(owner_uid, item)
                    return
                job_uid = known
        await self.settler.settle([item], job_uid)

    def _jobset_roles(self, jobset: Mapping[str, Any]) -> str | None:
        """The roles a TrainJob's JobSet states, as resources JSON; None if unreadable."""
        try:
            return resources_json(jobset_roles(jobset))
        except convert.InvalidObject as exc:
            self.settler.rows.invalid("JobSet", jobset, exc)
            return None
