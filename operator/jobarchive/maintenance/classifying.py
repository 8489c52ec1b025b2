"""The failure taxonomy's pass (decision 42): failed jobs classified from their stored
rows, off the recording path.

Evidence arrives at different times: a pod's row when it fails, its Events around it,
its log tails later (read asynchronously, decision 19). So a job is classified once it
finished ``settle`` seconds ago, and again whenever a log tail of it is stored after its
class was written. A round takes at most ``BATCH_JOBS`` jobs and their rows, classifies
them with the pure taxonomy (``core.evidence``) and hands the rows to ``write``: the
writer's queue in the operator, a direct upsert in ``jobarchive migrate``. Only the
rows of one cluster are read and written: a job's class is its own cluster's.
"""

import asyncio
import datetime
import functools
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from tortoise.backends.base.client import BaseDBAsyncClient
from tortoise.expressions import Subquery
from tortoise.queryset import QuerySet

from jobarchive.core.evidence import FAILED, Classified, JobEvidence, classify_job
from jobarchive.core.rows import FailureRow, PodFailureRow
from jobarchive.core.ruletable import Rule
from jobarchive.core.times import aware
from jobarchive.infra.logs import shown
from jobarchive.infra.scope import CLUSTER, Scope
from jobarchive.maintenance.peering import Activity
from jobarchive.storage import failures, introspection
from jobarchive.storage.failed import FailedJob, FailedPod
from jobarchive.storage.kueue import Attempt
from jobarchive.storage.migration.steps import Step
from jobarchive.storage.models import Event, Job, LogTail, Pod, utcnow
from jobarchive.storage.store import Store

logger = logging.getLogger(__name__)
# Jobs per round, each one's pods, tails, Events and attempts held in turn
# (``infra.sizing`` counts them).
BATCH_JOBS = 20
# How long after a job finished its log tails are waited for before it is classified
# (JOBARCHIVE_FAILURE_SETTLE's default).
SETTLE = 120.0
# How long after a job's class was written a log tail stored later reclassifies it: a
# tail is read within minutes of its container's end, or never.
RECENT = 3600.0
# A job's log tails read at most, its first failures first: what decides its class.
TAILS = 50
# Between rounds that found nothing to do: a quarter of the settling time, within these.
INTERVAL = (1.0, 30.0)

# What ``jobarchive migrate`` says it did: what the rows of an old archive cannot tell.
CLASSIFIED = (
    "classify failed jobs from what they hold (a container without a log tail's row "
    "known by its pod's remark alone; a tail never read leaves Error or Unknown)"
)

TABLE = FailedJob._meta.db_table
# Writes the jobs' rows and their failed pods'.
Write = Callable[[list[FailureRow], list[PodFailureRow]], Awaitable[None]]


class Classifier:
    """Classifies the store's cluster's failed jobs in rounds, with ``rules``."""

    def __init__(
        self, rules: Sequence[Rule], store: Store, write: Write, scope: Scope = CLUSTER
    ) -> None:
        self.rules = rules
        self.store = store
        self.write = write
        # A shard classifies its own namespaces' jobs: by name in SQL where it serves
        # names, by pattern as they are read otherwise.
        self.scope = scope

    @property
    def cluster(self) -> str:
        """The cluster whose jobs are classified: the store's, known once it started."""
        return self.store.cluster

    async def round(self, settle: float = SETTLE) -> int:
        """Classify the next jobs due, unclassified ones first; returns how many."""
        return await self.classify(await self.unclassified(settle) or await self.changed())

    async def classify(self, due: list[dict[str, Any]]) -> int:
        """Classify these jobs and write their rows; returns how many."""
        if not due:
            return 0
        rows: list[FailureRow] = []
        pods: list[PodFailureRow] = []
        for job in due:
            classified = self.classified(job, *await _rows(job))
            rows.append(failure_row(job, classified))
            pods += pod_failure_rows(job, classified)
        await self.write(rows, pods)
        return len(rows)

    async def backlog(self) -> int:
        """Classify every failed job without a class, however recent; returns how many."""
        done = 0
        while classified := await self.classify(await self.unclassified(0)):
            done += classified
        return done

    def classified(self, job: dict[str, Any], *rows: Sequence[dict[str, Any]]) -> Classified:
        """A job classified from its rows."""
        pods, tails, events, attempts = rows
        return classify_job(JobEvidence(job, pods, tails, events, attempts), self.rules)

    async def unclassified(self, settle: float) -> list[dict[str, Any]]:
        """Failed jobs finished ``settle`` seconds ago (or with no finish time) without a
        class."""
        cut = utcnow() - datetime.timedelta(seconds=settle)
        done = FailedJob.filter(cluster=self.cluster).values("job_id")
        jobs = Job.filter(cluster=self.cluster, status=FAILED, gmt_finished__lte=cut)
        unfinished = Job.filter(cluster=self.cluster, status=FAILED, gmt_finished__isnull=True)
        for query in (jobs, unfinished):
            query = self.within(query.exclude(job_id__in=Subquery(done)))
            found = [job for job in await query.limit(BATCH_JOBS).values(*_JOB) if self.serves(job)]
            if found:
                return found
        return []

    def within(self, query: "QuerySet[Job]") -> "QuerySet[Job]":
        """The jobs of the namespaces a shard serves by name; all of them otherwise."""
        if self.scope.clusterwide or not self.scope.exact:
            return query
        return query.filter(namespace__in=sorted(set(self.scope.patterns)))

    def serves(self, job: dict[str, Any]) -> bool:
        """Whether the job is in a namespace this operator serves."""
        return self.scope.matches(str(job["namespace"]))

    async def changed(self) -> list[dict[str, Any]]:
        """Jobs classified within ``RECENT`` seconds a log tail of which was stored after
        their class (a tail read later than ``settle``)."""
        since = utcnow() - datetime.timedelta(seconds=RECENT)
        stamps = dict(
            await FailedJob.filter(cluster=self.cluster, gmt_modified__gte=since)
            .order_by("gmt_modified")
            .values_list("job_id", "gmt_modified")
        )
        late: list[str] = []
        for tail_job, stored in await LogTail.filter(
            job_id__in=list(stamps), cluster=self.cluster
        ).values_list("job_id", "gmt_created"):
            if stored > stamps[tail_job] and tail_job not in late:
                late.append(tail_job)
        if not late:
            return []
        found = await self.within(Job.filter(job_id__in=late[:BATCH_JOBS])).values(*_JOB)
        return [job for job in found if self.serves(job)]


async def _rows(job: dict[str, Any]) -> tuple[list[dict[str, Any]], ...]:
    """A job's pods, log tails, Events and Kueue attempts, their times aware."""
    uid = job["job_id"]
    pods = await Pod.filter(job_id=uid).values(*_POD)
    tails = await LogTail.filter(job_id=uid).order_by("gmt_failed").limit(TAILS).values(*_TAIL)
    events = await Event.filter(job_id=uid).values(*_EVENT)
    attempts = await Attempt.filter(job_id=uid).values(*_ATTEMPT)
    return tuple([_aware(row) for row in found] for found in (pods, tails, events, attempts))


def _aware(row: dict[str, Any]) -> dict[str, Any]:
    """A row as the database gives it, its times aware (MySQL's are naive, in UTC)."""
    return {k: aware(v) if isinstance(v, datetime.datetime) else v for k, v in row.items()}


def failure_row(job: dict[str, Any], classified: Classified) -> FailureRow:
    """The ``job_failure`` row of a classified job."""
    failure = classified.failure.failure
    return {
        "job_id": job["job_id"],
        "version": job["version"],
        "namespace": job["namespace"],
        "failure_class": failure.failure_class,
        "pod_id": classified.pod_id,
        "pod_name": classified.pod_name,
        "container": failure.container or None,
        "exit_code": failure.exit_code,
        "signal": failure.signal,
        "detail": failure.detail,
        "derived_exit_code": classified.failure.derived_exit_code,
        "gmt_created": None,
    }


def pod_failure_rows(job: dict[str, Any], classified: Classified) -> list[PodFailureRow]:
    """The ``pod_failure`` rows of a classified job's failed pods."""
    return [
        {
            "pod_id": pod.pod,
            "version": job["version"],
            "job_id": job["job_id"],
            "namespace": job["namespace"],
            "failure_class": pod.failure.failure_class,
            "container": pod.failure.container or None,
            "exit_code": pod.failure.exit_code,
            "signal": pod.failure.signal,
            "detail": pod.failure.detail,
            "gmt_created": None,
        }
        for pod in classified.pods
        if pod.pod
    ]


async def classify_archive(
    conn: BaseDBAsyncClient, rules: Sequence[Rule], dry_run: bool
) -> Step | None:
    """``jobarchive migrate``'s step: every cluster's failed jobs without a class (an
    archive recorded before the taxonomy) classified from what their rows hold. A dry
    run counts them on the schema as it is (neither ``cluster`` nor the table yet)."""
    schema = introspection.of(conn)
    if not await schema.columns(conn, Job._meta.db_table):
        return None
    if dry_run:
        count = await _unclassified_count(conn, bool(await schema.columns(conn, TABLE)))
        return Step(TABLE, CLASSIFIED, count) if count else None
    unclassified = Job.filter(status=FAILED, cluster__isnull=False).exclude(
        job_id__in=Subquery(FailedJob.all().values("job_id"))
    )
    count = 0
    for cluster in sorted(set(await unclassified.using_db(conn).values_list("cluster", flat=True))):
        store = Store(conn, str(cluster))
        count += await Classifier(rules, store, functools.partial(_upsert, store)).backlog()
    return Step(TABLE, CLASSIFIED, count) if count else None


async def _unclassified_count(conn: BaseDBAsyncClient, classes: bool) -> int:
    # A literal status, no parameter: the same SQL on every engine.
    sql = f"SELECT COUNT(*) AS n FROM {Job._meta.db_table} WHERE status = '{FAILED}'"
    if classes:
        sql += f" AND job_id NOT IN (SELECT job_id FROM {TABLE})"
    [row] = await conn.execute_query_dict(sql)
    return int(row["n"])


async def _upsert(store: Store, rows: list[FailureRow], pods: list[PodFailureRow]) -> None:
    await store.upsert(FailedJob, rows)
    await store.upsert(FailedPod, pods)


async def classify_forever(
    classifier: Classifier, activity: Activity, settle: float = SETTLE
) -> None:
    """Rounds while this replica is the active one, at once after a full round, every
    quarter of ``settle`` (within ``INTERVAL``) otherwise; errors are logged, not fatal."""
    low, high = INTERVAL
    pause = min(max(settle / 4, low), high)
    while True:
        if activity.standing_by:
            await activity.until_active()
        try:
            done = await classifier.round(settle)
        except Exception as exc:
            logger.warning(
                "Classifying failed jobs failed, trying again later: %s",
                shown(failures.describe(exc)),
            )
            done = 0
        if done < BATCH_JOBS:
            await asyncio.sleep(pause)


_JOB = ("job_id", "version", "namespace", "status")
_POD = ("pod_id", "name", "status", "remark", "gmt_created", "gmt_finished")
_TAIL = ("pod_id", "container", "exit_code", "reason", "gmt_failed", "captured", "log_tail")
_EVENT = ("obj_uid", "reason", "message", "first_timestamp", "last_timestamp")
_ATTEMPT = ("quota_reserved_at", "end_reason", "underlying_cause", "message")
