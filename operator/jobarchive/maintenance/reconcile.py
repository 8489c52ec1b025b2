"""Reconcile the database with the live cluster: rows of objects deleted while nobody
was watching are marked gone, exactly as a seen delete would mark them.

A watch only reports deletions it sees. Objects deleted while the operator was down
(or during a watch gap) would stay ``is_in_etcd=1`` forever. At start and then
periodically, every tracked kind and all pods are listed in pages, and every row
still in etcd whose uid is not live is marked gone (DESIGN decision 4).

Two rules keep this from marking a live object gone. Rows written after the
listing started are left alone: their object may have been created after its page
was read. And a job's row is reconciled only when its kind was listed in its own group
(``job_info.api_version``): a group that could not be listed (its CRD missing, an
error) leaves its rows alone. Rows written before ``api_version`` existed say only
``TFJob``, not which group's, and are reconciled when every group of that name was.
Events are not reconciled: ``event_info`` records history and has no ``is_in_etcd``.
A replica standing by in Kopf's peering does not reconcile: only the active one writes.
"""

import asyncio
import dataclasses
import logging
import time
from collections.abc import Iterable
from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from jobarchive import metrics
from jobarchive.bounded import chunks
from jobarchive.cluster import api_client, get_json
from jobarchive.kinds import JobKind
from jobarchive.maintenance.peering import Peering, is_active
from jobarchive.recording.convert import mark_gone
from jobarchive.storage.models import Job, Pod, utcnow
from jobarchive.storage.store import Store
from jobarchive.storage.writer import Writer

logger = logging.getLogger(__name__)

PAGE_SIZE = 500
# Only uids are needed: ask for metadata alone, as kubectl does, and take full objects
# from a server that cannot serve it. Full pods cost most of a listing's time and memory.
METADATA_ONLY = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
ROWS_PER_WRITE = 500


@dataclasses.dataclass
class Outcome:
    """What one reconciliation found."""

    jobs_gone: int = 0
    pods_gone: int = 0
    kinds_skipped: tuple[str, ...] = ()


async def list_uids(api: client.ApiClient, path: str) -> set[str]:
    """The uids of every object at a list path, read page by page."""
    uids: set[str] = set()
    token: str | None = None
    while True:
        query: list[tuple[str, Any]] = [("limit", PAGE_SIZE)]
        if token:
            query.append(("continue", token))
        page = await get_json(
            api, path, query_params=query, header_params={"Accept": METADATA_ONLY}
        )
        for item in page.get("items") or []:
            uid = (item.get("metadata") or {}).get("uid")
            if isinstance(uid, str):
                uids.add(uid)
        token = (page.get("metadata") or {}).get("continue") or None
        if not token:
            return uids


class Reconciler:
    """Marks rows gone whose objects are no longer in the cluster."""

    def __init__(self, kinds: Iterable[JobKind], store: Store, writer: Writer) -> None:
        self.kinds = tuple(kinds)
        self.store = store
        self.writer = writer
        self.marked_total = 0
        # Whether this replica was the active one when last checked; None before that.
        self.active: bool | None = None

    async def run_once(self, api: client.ApiClient) -> Outcome:
        """List everything, then mark what is gone; returns the counts."""
        started = utcnow()
        live_jobs: set[str] = set()
        listed: set[tuple[str, str]] = set()
        failed: set[str] = set()
        for kind in self.kinds:
            path = f"/apis/{kind.group}/{kind.version}/{kind.plural}"
            try:
                live_jobs |= await list_uids(api, path)
            except ApiException as exc:
                failed.add(kind.kind)
                if exc.status != 404:
                    logger.warning("Cannot list %s: %s %s", path, exc.status, exc.reason)
            else:
                listed.add((kind.group, kind.kind))
        # Rows from before api_version existed say only their kind name: reconciled
        # when every group of that name was listed.
        complete = sorted({kind.kind for kind in self.kinds} - failed)
        live_pods = await list_uids(api, "/api/v1/pods")
        jobs = await self.store.uids_in_etcd(Job, started, listed, complete)
        pods = await self.store.uids_in_etcd(Pod, started)
        outcome = Outcome(
            jobs_gone=await self._mark(Job, [uid for uid in jobs if uid not in live_jobs]),
            pods_gone=await self._mark(Pod, [uid for uid in pods if uid not in live_pods]),
            kinds_skipped=tuple(sorted(failed)),
        )
        self.marked_total += outcome.jobs_gone + outcome.pods_gone
        metrics.MARKED_GONE.labels(Job._meta.db_table).inc(outcome.jobs_gone)
        metrics.MARKED_GONE.labels(Pod._meta.db_table).inc(outcome.pods_gone)
        return outcome

    async def run_forever(self, interval: float, peering: Peering, poll: float) -> None:
        """Reconcile every ``interval`` seconds while this replica is the active one.

        Whether it is active is checked every ``poll`` seconds: a replica that takes
        over reconciles at once, because the one it replaces may have missed deletes
        (and no watch reports a delete that happened before it started). Errors are
        logged, not fatal.
        """
        api = await api_client()
        was_active: bool | None = None
        last_run = 0.0
        try:
            while True:
                try:
                    active = await is_active(api, peering)
                    metrics.ACTIVE.set(int(active))
                    if active != was_active and peering.name:
                        logger.info(
                            "Active: reconciling with the cluster"
                            if active
                            else "Standing by for a peer of higher priority: not reconciling"
                        )
                    due = not was_active or time.monotonic() - last_run >= interval
                    was_active = self.active = active
                    if active and due:
                        last_run = time.monotonic()
                        self._report(await self.run_once(api))
                except Exception as exc:
                    metrics.RECONCILIATIONS.labels("failed").inc()
                    logger.warning("Reconciliation failed, trying again later: %s", exc)
                await asyncio.sleep(poll if peering.name else interval)
        finally:
            await api.close()

    @staticmethod
    def _report(outcome: Outcome) -> None:
        metrics.RECONCILIATIONS.labels("done").inc()
        logger.info(
            "Reconciled with the cluster: %d jobs and %d pods were gone%s",
            outcome.jobs_gone,
            outcome.pods_gone,
            f" (not listed: {', '.join(outcome.kinds_skipped)})" if outcome.kinds_skipped else "",
        )

    async def _mark(self, model: type[Job] | type[Pod], gone: list[str]) -> int:
        now = utcnow()
        for chunk in chunks(gone, ROWS_PER_WRITE):
            rows = await self.store.rows(model, chunk)
            for row in rows:
                mark_gone(row, now)
            await self.writer.write(model, rows)
        return len(gone)
