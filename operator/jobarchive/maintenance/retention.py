"""Retention: forgetting what finished long ago, exactly.

- A job is pruned once it is gone from the cluster, finished before the cutoff (or,
  with no finish time, was last written before it), and none of its pods is still in
  the cluster: a row still in the cluster is never deleted, so its job is kept with
  it. Its pods go with it, and every Event stored under it: by ``job_id``, whatever
  object they are about (the job, its pods, its JobSets, batch Jobs and RayClusters),
  and by ``obj_uid`` every other Event about the job or its pods (rows from before
  ``event_info.job_id`` name none). That is everything a job's detail shows. The
  log tails of its failed containers go with it (``container_log_tail``, by job_id),
  its days, spans and waits in the usage roll-ups (``usage_day``, ``queue_span``,
  ``queue_job``), and Kueue's attempts and waits of it (``job_attempt``, ``job_wait``,
  by job_id), its failure classes (``job_failure``, ``pod_failure``) and its pods' efficiency
  (``pod_efficiency``).
- A pod whose job was never recorded (deleted before the operator saw it) is pruned
  after the same period: once gone and last written before the cutoff, with the
  Events about it and its log tails.
- An Event stored under a job that was never recorded, or under none, and about no
  stored job or pod, is pruned once last written before the cutoff.

Every statement is bounded. Rows are selected at most ``chunk`` at a time and deleted
by primary key, so that no statement holds locks on millions of Event rows while the
operator writes; the jobs and uids they are selected by come ``batch`` (or ``chunk``)
at a time, by keyset. The same statements run on MariaDB and SQLite. Events go first,
then pods, the job last: an interrupted prune leaves the job row, and the next one
finishes it. A dry run counts what each step would delete instead.

A shard (``kopf run --namespace``) prunes only rows of its namespaces, one namespace
at a time, so each statement reads one namespace's range of an index (``namespace``,
``job_id``; for Events ``obj_namespace``, ``job_id``): the exact names it serves, or
the stored namespaces that match its patterns. Another shard's rows are never
touched, whether that shard runs or not. Nor are another cluster's (decision 35): the
operator prunes only rows of its own cluster; ``jobarchive prune`` every cluster's,
unless told one.
"""

import asyncio
import dataclasses
import datetime
import logging
from collections.abc import AsyncIterator, Iterable
from typing import Any

from tortoise.expressions import Q, Subquery
from tortoise.queryset import QuerySet

from jobarchive.infra.logs import shown
from jobarchive.infra.scope import CLUSTER, Scope
from jobarchive.maintenance.peering import Activity
from jobarchive.storage import failures
from jobarchive.storage.failed import FailedJob, FailedPod
from jobarchive.storage.kueue import Attempt, QueueJob, QueueSpan, Wait
from jobarchive.storage.models import Event, Job, LogTail, Pod, Stamped, UsageDay, utcnow
from jobarchive.storage.summaries import Summary

logger = logging.getLogger(__name__)
BATCH_JOBS = 100
# Hourly: a retention counted in days gains nothing from pruning more often.
PRUNE_INTERVAL = 3600.0
CHUNK = 500


@dataclasses.dataclass
class Pruned:
    """How many rows a prune deleted (or, dry, would delete); ``pods`` and ``events``
    count all of them, the ``orphan_`` counts those whose job was never recorded."""

    jobs: int = 0
    pods: int = 0
    events: int = 0
    orphan_pods: int = 0
    orphan_events: int = 0
    log_tails: int = 0
    # Kueue's attempts and waits of the jobs pruned.
    attempts: int = 0
    waits: int = 0


def cutoff(days: int, now: datetime.datetime | None = None) -> datetime.datetime:
    """The finish time before which jobs are pruned."""
    return (now or utcnow()) - datetime.timedelta(days=days)


@dataclasses.dataclass
class _Pruning:
    before: datetime.datetime
    dry_run: bool
    chunk: int
    # None: every namespace.
    namespace: str | None = None
    # None: every cluster's rows (``jobarchive prune``); an operator prunes its own.
    cluster: str | None = None

    def within(self, model: type[Stamped]) -> Q:
        """The condition that keeps a query in this prune's cluster and namespace."""
        ours = Q() if self.cluster is None else Q(cluster=self.cluster)
        if self.namespace is None:
            return ours
        column = "obj_namespace" if model is Event else "namespace"
        return ours & Q(**{column: self.namespace})

    async def drain(self, query: QuerySet[Any]) -> int:
        """Delete a query's rows, ``chunk`` by primary key per statement; dry, count them.

        Every row selected is deleted, so each select finds the next ones.
        """
        if self.dry_run:
            return await query.count()
        model: type[Stamped] = query.model
        deleted = 0
        while True:
            ids = await query.limit(self.chunk).values_list("id", flat=True)
            if not ids:
                return deleted
            done = int(await model.filter(id__in=list(ids)).delete())
            deleted += done
            if not done:
                return deleted

    async def jobs(self, batch: int, pruned: Pruned) -> None:
        """Prune the jobs that are due, ``batch`` at a time, with their pods and Events."""
        finished = Q(gmt_finished__lt=self.before) | Q(
            gmt_finished__isnull=True, gmt_modified__lt=self.before
        )
        after = 0
        while True:
            rows = (
                await Job.filter(finished, self.within(Job), is_in_etcd=False, id__gt=after)
                .order_by("id")
                .limit(batch)
                .values_list("id", "job_id")
            )
            if not rows:
                return
            after = int(rows[-1][0])
            held = {
                str(uid)
                for uid in await Pod.filter(
                    self.within(Pod), job_id__in=[str(uid) for _, uid in rows], is_in_etcd=True
                )
                .distinct()
                .values_list("job_id", flat=True)
            }
            due = [(int(pk), str(uid)) for pk, uid in rows if str(uid) not in held]
            if not due:
                continue
            job_uids = [uid for _, uid in due]
            pods = Pod.filter(self.within(Pod), job_id__in=job_uids)
            # Rows that name no job of the batch: a dry run must not count one twice.
            unnamed = Q(job_id__isnull=True) | ~Q(job_id__in=job_uids)
            events = Event.filter(self.within(Event))
            pruned.events += await self.drain(events.filter(job_id__in=job_uids))
            pruned.events += await self.drain(
                events.filter(unnamed, obj_uid__in=Subquery(pods.values("pod_id")))
            )
            pruned.events += await self.drain(events.filter(unnamed, obj_uid__in=job_uids))
            tails = LogTail.filter(self.within(LogTail), job_id__in=job_uids)
            pruned.log_tails += await self.drain(tails)
            attempts = Attempt.filter(self.within(Attempt), job_id__in=job_uids)
            pruned.attempts += await self.drain(attempts)
            pruned.waits += await self.drain(Wait.filter(self.within(Wait), job_id__in=job_uids))
            # Its days and spans in the usage roll-ups (decisions 33, 45) and its failure
            # class (decision 42): derived from its rows, not counted; by the uid alone,
            # as the job is this prune's already.
            await self.drain(UsageDay.filter(job_id__in=job_uids))
            await self.drain(QueueSpan.filter(job_id__in=job_uids))
            await self.drain(QueueJob.filter(job_id__in=job_uids))
            await self.drain(FailedJob.filter(job_id__in=job_uids))
            await self.drain(FailedPod.filter(job_id__in=job_uids))
            # Its pods' efficiency (decision 45), derived from Prometheus, likewise.
            await self.drain(Summary.filter(job_id__in=job_uids))
            pruned.pods += await self.drain(pods)
            pruned.jobs += await self.drain(Job.filter(id__in=[pk for pk, _ in due]))

    async def unrecorded_jobs(self, model: type[Pod] | type[Event]) -> AsyncIterator[list[str]]:
        """The job uids that rows of ``model`` name and ``job_info`` lacks, a page of
        distinct uids at a time (read along the index on ``job_id``)."""
        after = ""
        while True:
            page = [
                str(uid)
                for uid in await model.filter(self.within(model), job_id__gt=after)
                .order_by("job_id")
                .distinct()
                .limit(self.chunk)
                .values_list("job_id", flat=True)
            ]
            if not page:
                return
            after = page[-1]
            known = {
                str(uid)
                for uid in await Job.filter(job_id__in=page).values_list("job_id", flat=True)
            }
            missing = [uid for uid in page if uid not in known]
            if missing:
                yield missing

    async def orphan_pods(self, pruned: Pruned) -> None:
        """Prune gone pods whose job was never recorded, with the Events about them."""
        async for missing in self.unrecorded_jobs(Pod):
            pods = Pod.filter(
                self.within(Pod), job_id__in=missing, is_in_etcd=False, gmt_modified__lt=self.before
            )
            about = Subquery(pods.values("pod_id"))
            events = await self.drain(Event.filter(self.within(Event), obj_uid__in=about))
            pruned.log_tails += await self.drain(
                LogTail.filter(self.within(LogTail), pod_id__in=Subquery(pods.values("pod_id")))
            )
            count = await self.drain(pods)
            left = Pod.filter(job_id__in=missing).values("job_id")
            await self.drain(UsageDay.filter(~Q(job_id__in=Subquery(left)), job_id__in=missing))
            await self.drain(QueueSpan.filter(~Q(job_id__in=Subquery(left)), job_id__in=missing))
            pruned.events += events
            pruned.orphan_events += events
            pruned.pods += count
            pruned.orphan_pods += count

    async def orphan_events(self, pruned: Pruned) -> None:
        """Prune Events under no recorded job and about no stored job or pod."""
        unattached = (
            self.within(Event)
            & Q(gmt_modified__lt=self.before)
            & ~Q(obj_uid__in=Subquery(Pod.all().values("pod_id")))
            & ~Q(obj_uid__in=Subquery(Job.all().values("job_id")))
        )
        count = await self.drain(Event.filter(unattached, job_id__isnull=True))
        async for missing in self.unrecorded_jobs(Event):
            count += await self.drain(Event.filter(unattached, job_id__in=missing))
        pruned.events += count
        pruned.orphan_events += count


async def prune(
    before: datetime.datetime,
    dry_run: bool = False,
    batch: int = BATCH_JOBS,
    chunk: int = CHUNK,
    namespaces: Iterable[str] | None = None,
    cluster: str | None = None,
) -> Pruned:
    """Delete what retention drops before ``before`` (the module's rules): jobs ``batch``
    at a time, at most ``chunk`` rows per statement; with ``dry_run``, only count.
    ``namespaces``: only rows of these, one namespace after the other (None: all);
    ``cluster``: only that cluster's rows (None: every cluster's)."""
    pruned = Pruned()
    for namespace in [None] if namespaces is None else sorted(set(namespaces)):
        pruning = _Pruning(before, dry_run, chunk, namespace, cluster)
        await pruning.jobs(batch, pruned)
        await pruning.orphan_pods(pruned)
        await pruning.orphan_events(pruned)
    return pruned


async def stored_namespaces(scope: Scope) -> list[str] | None:
    """The namespaces a shard prunes: None (all) for the whole cluster, the names it
    serves, or the namespaces of stored rows that match its patterns."""
    if scope.clusterwide:
        return None
    if scope.exact:
        return sorted(set(scope.patterns))
    names: set[str] = set()
    for model, column in ((Job, "namespace"), (Pod, "namespace"), (Event, "obj_namespace")):
        query = model.all().distinct().values_list(column, flat=True)
        names.update(str(name) for name in await query)
    return sorted(name for name in names if scope.matches(name))


async def prune_forever(
    days: int, interval: float, activity: Activity, cluster: str, scope: Scope = CLUSTER
) -> None:
    """Prune at once and then every ``interval`` seconds, while this replica is the
    active one; errors are logged, not fatal. Only rows of ``cluster`` (the operator's),
    and of a shard only its namespaces' rows.

    A replica that does not know yet whether it is active stands by (``Activity``).
    """
    while True:
        if activity.standing_by:
            logger.info("Pruning waits until this replica is the active one")
            await activity.until_active()
        try:
            within = await stored_namespaces(scope)
            pruned = await prune(cutoff(days), namespaces=within, cluster=cluster)
        except Exception as exc:
            logger.warning("Pruning failed, trying again later: %s", shown(failures.describe(exc)))
        else:
            _report(pruned, days)
        await asyncio.sleep(interval)


def _report(pruned: Pruned, days: int) -> None:
    if pruned.jobs:
        logger.info(
            "Pruned %d jobs finished over %d days ago, with %d pods and %d Events (%d log "
            "tails, %d Kueue attempts and %d waits)",
            pruned.jobs,
            days,
            pruned.pods - pruned.orphan_pods,
            pruned.events - pruned.orphan_events,
            pruned.log_tails,
            pruned.attempts,
            pruned.waits,
        )
    if pruned.orphan_pods or pruned.orphan_events:
        logger.info(
            "Pruned %d pods and %d Events of jobs never recorded, last written over %d days ago",
            pruned.orphan_pods,
            pruned.orphan_events,
            days,
        )
