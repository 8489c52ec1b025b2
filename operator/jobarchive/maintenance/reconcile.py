"""Reconcile the database with the live cluster: rows of objects deleted while nobody
was watching are marked gone, exactly as a seen delete would mark them.

A watch only reports deletions it sees. Objects deleted while the operator was down
(or during a watch gap) would stay ``is_in_etcd=1`` forever. At start and then
periodically, every tracked kind and all pods are listed in pages, and every row
still in etcd whose uid is not live is marked gone.

Two rules keep this from marking a live object gone. Rows written after the
listing started are left alone: their object may have been created after its page
was read. And a job's row is reconciled only when its kind was listed in its own group
(``job_info.api_version``): a group that could not be listed (its CRD missing, an
error) leaves its rows alone. Rows written before ``api_version`` existed say only
``TFJob``, not which group's, and are reconciled when every group of that name was.
Events are not reconciled: ``event_info`` records history and has no ``is_in_etcd``.
Only rows of the store's cluster are read and marked (decision 35): another cluster's
rows are never touched, whether its operator runs or not.
A replica standing by in Kopf's peering does not reconcile: only the active one writes.

Under ``kopf run --namespace`` (a shard) everything is listed namespace by namespace,
and only rows of those namespaces are read and marked: another shard's rows are never
touched, whether that shard runs or not. The namespaces are those served now
(``Scope.namespaces``: exact names, or the namespaces matching a pattern) and, for
patterns, those of rows still marked in the cluster that match: a namespace deleted
with its objects is listed once more, empty. A namespace that may not be listed (no
RoleBinding there) is skipped with a warning, its rows left alone.

An outage does not cost an interval. The reconciliation's reads wait for the
database as the writer's flushers do (``storage.waiting``), so a run the
database left in the middle goes on as soon as it answers; its marks go through the
writer, which waits too. A run that fails for any other reason (the cluster could
not be listed) is tried again after a capped, jittered backoff rather than after the
interval, and only a run that finished counts as done.
"""

import asyncio
import dataclasses
import datetime
import functools
import logging
from collections.abc import Iterable

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from jobarchive.core.bounded import chunks
from jobarchive.core.kinds import JobKind
from jobarchive.infra import metrics
from jobarchive.infra.cluster import api_client, list_path, listed
from jobarchive.infra.logs import shown
from jobarchive.infra.scope import CLUSTER, Scope
from jobarchive.maintenance.peering import Activity
from jobarchive.recording.convert import mark_gone
from jobarchive.storage import failures
from jobarchive.storage.models import Job, Pod, utcnow
from jobarchive.storage.store import Store
from jobarchive.storage.waiting import Backoff, Outage, ride_out
from jobarchive.storage.writer import Writer

logger = logging.getLogger(__name__)

ROWS_PER_WRITE = 500
# A failed run is tried again after 1 s, doubling up to a minute (or the interval, if
# shorter): each try lists the whole cluster, which a retry every few seconds would
# hammer while it is away.
RETRY_FIRST = 1.0
RETRY_CAP = 60.0


def describe(error: BaseException) -> str:
    """Why a run failed, in one line and without the database's connection parameters."""
    if isinstance(error, ApiException):
        return f"{error.status} {shown(error.reason)}"
    return shown(failures.describe(error))


@dataclasses.dataclass
class Outcome:
    """What one reconciliation found."""

    jobs_gone: int = 0
    pods_gone: int = 0
    kinds_skipped: tuple[str, ...] = ()
    namespaces_skipped: tuple[str, ...] = ()

    def add(self, other: "Outcome") -> None:
        """Count another namespace's outcome in."""
        self.jobs_gone += other.jobs_gone
        self.pods_gone += other.pods_gone
        self.kinds_skipped = tuple(sorted({*self.kinds_skipped, *other.kinds_skipped}))
        self.namespaces_skipped += other.namespaces_skipped


async def stored_namespaces(store: Store, scope: Scope) -> set[str]:
    """The namespaces of the scope that the store's cluster's rows still marked in it name."""
    names: set[str] = set()
    for model in (Job, Pod):
        ours = model.filter(cluster=store.cluster, is_in_etcd=True)
        query = ours.distinct().using_db(store.connection)
        names.update(str(name) for name in await query.values_list("namespace", flat=True))
    return {name for name in names if scope.matches(name)}


async def list_uids(api: client.ApiClient, path: str) -> set[str]:
    """The uids of every object at a list path, read page by page."""
    return {uid async for meta in listed(api, path) if isinstance(uid := meta.get("uid"), str)}


class Reconciler:
    """Marks rows gone whose objects are no longer in the cluster (or, for a shard, in the
    namespaces of its ``scope``)."""

    def __init__(
        self, kinds: Iterable[JobKind], store: Store, writer: Writer, scope: Scope = CLUSTER
    ) -> None:
        self.kinds = tuple(kinds)
        self.store = store
        self.writer = writer
        self.scope = scope
        self.marked_total = 0
        # Its reads wait out an outage, said once: when it begins and when it ends.
        self.outage = Outage(
            "the reconciliation waits for it", then=lambda: ", the reconciliation goes on"
        )

    async def run_once(self, api: client.ApiClient) -> Outcome:
        """List everything, then mark what is gone; returns the counts."""
        started = utcnow()
        outcome = Outcome()
        for namespace in await self.places(api):
            outcome.add(await self._reconcile(api, namespace, started))
        self.marked_total += outcome.jobs_gone + outcome.pods_gone
        metrics.MARKED_GONE.labels(Job._meta.db_table).inc(outcome.jobs_gone)
        metrics.MARKED_GONE.labels(Pod._meta.db_table).inc(outcome.pods_gone)
        return outcome

    async def places(self, api: client.ApiClient) -> list[str | None]:
        """Where to list and reconcile: [None] for the whole cluster, else the namespaces."""
        served = await self.scope.namespaces(api)
        if served is None:
            return [None]
        names = set(served)
        if not self.scope.exact:
            names |= await ride_out(lambda: stored_namespaces(self.store, self.scope), self.outage)
        return [*sorted(names)]

    async def _reconcile(
        self, api: client.ApiClient, namespace: str | None, started: datetime.datetime
    ) -> Outcome:
        live_jobs: set[str] = set()
        listed: set[tuple[str, str]] = set()
        failed: set[str] = set()
        for kind in self.kinds:
            path = list_path(kind.group, kind.version, kind.plural, namespace)
            try:
                live_jobs |= await list_uids(api, path)
            except ApiException as exc:
                failed.add(kind.kind)
                if exc.status != 404:
                    logger.warning(
                        "Cannot list %s: %s %s", shown(path), exc.status, shown(exc.reason)
                    )
            else:
                listed.add((kind.group, kind.kind))
        # Rows from before api_version existed say only their kind name: reconciled
        # when every group of that name was listed.
        complete = sorted({kind.kind for kind in self.kinds} - failed)
        path = list_path("", "v1", "pods", namespace)
        try:
            live_pods = await list_uids(api, path)
        except ApiException as exc:
            # A shard's namespace without a RoleBinding: its rows wait, the others go on.
            if namespace is None or exc.status not in (401, 403):
                raise
            logger.warning("Cannot list %s: %s %s", shown(path), exc.status, shown(exc.reason))
            return Outcome(namespaces_skipped=(namespace,))
        jobs = await ride_out(
            lambda: self.store.uids_in_etcd(Job, started, listed, complete, namespace=namespace),
            self.outage,
        )
        pods = await ride_out(
            lambda: self.store.uids_in_etcd(Pod, started, namespace=namespace), self.outage
        )
        return Outcome(
            jobs_gone=await self._mark(Job, [uid for uid in jobs if uid not in live_jobs]),
            pods_gone=await self._mark(Pod, [uid for uid in pods if uid not in live_pods]),
            kinds_skipped=tuple(sorted(failed)),
        )

    async def run_forever(self, interval: float, activity: Activity) -> None:
        """Reconcile at once, then every ``interval`` seconds, while this replica is the
        active one (``activity``).

        A replica that takes over reconciles at once, because the one it replaces may
        have missed deletes (and no watch reports a delete that happened before it
        started). A run that fails is logged and tried again after a backoff (jittered,
        from ``RETRY_FIRST`` doubling to ``RETRY_CAP`` or ``interval``); the interval
        counts from the last run that finished.
        """
        api = await api_client()
        retry = Backoff(RETRY_FIRST, min(RETRY_CAP, interval))
        try:
            while True:
                turn = await activity.until_active()
                try:
                    outcome = await self.run_once(api)
                except Exception as exc:
                    metrics.RECONCILIATIONS.labels("failed").inc()
                    delay = retry.next()
                    logger.warning(
                        "Reconciliation failed, trying again in %.1f s: %s", delay, describe(exc)
                    )
                    await asyncio.sleep(delay)
                    continue
                retry.reset()
                self._report(outcome)
                await activity.until_taken_over(turn, interval)
        finally:
            await api.close()

    @staticmethod
    def _report(outcome: Outcome) -> None:
        metrics.RECONCILIATIONS.labels("done").inc()
        skipped = [*outcome.kinds_skipped, *(f"namespace {n}" for n in outcome.namespaces_skipped)]
        logger.info(
            "Reconciled with the cluster: %d jobs and %d pods were gone%s",
            outcome.jobs_gone,
            outcome.pods_gone,
            f" (not listed: {shown(', '.join(skipped))})" if skipped else "",
        )

    async def _mark(self, model: type[Job] | type[Pod], gone: list[str]) -> int:
        now = utcnow()
        for chunk in chunks(gone, ROWS_PER_WRITE):
            rows = await ride_out(functools.partial(self.store.rows, model, chunk), self.outage)
            for row in rows:
                mark_gone(row, now)
            await self.writer.write(model, rows)
        return len(gone)
