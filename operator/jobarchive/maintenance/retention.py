"""Retention: forgetting jobs that finished long ago, with their pods and Events.

A job is pruned once it finished more than the retention period ago and is gone
from the cluster (a finished job still in the cluster would be written back at the
next relist). Its pods and the Events about it and its pods go with it. Deletes run
in small statements, at most ``CHUNK`` uids each, so that no statement holds locks
on millions of Event rows while the operator writes. They run Events first and
the job last: an interrupted prune leaves the job row, and the next one finishes it.
"""

import asyncio
import dataclasses
import datetime
import logging
from collections.abc import Callable

from jobarchive.bounded import chunks
from jobarchive.storage.models import Event, Job, Pod, utcnow

logger = logging.getLogger(__name__)
BATCH_JOBS = 100
# Hourly: a retention counted in days gains nothing from pruning more often.
PRUNE_INTERVAL = 3600.0
CHUNK = 500


@dataclasses.dataclass
class Pruned:
    """How many rows a prune deleted (or, dry, would delete)."""

    jobs: int = 0
    pods: int = 0
    events: int = 0


def cutoff(days: int, now: datetime.datetime | None = None) -> datetime.datetime:
    """The finish time before which jobs are pruned."""
    return (now or utcnow()) - datetime.timedelta(days=days)


async def prune(
    before: datetime.datetime, dry_run: bool = False, batch: int = BATCH_JOBS
) -> Pruned:
    """Delete jobs finished before ``before`` and gone from the cluster, with their pods
    and Events, ``batch`` jobs at a time; with ``dry_run``, only count them."""
    pruned = Pruned()
    after_id = 0
    while True:
        rows = (
            await Job.filter(gmt_finished__lt=before, is_in_etcd=False, id__gt=after_id)
            .order_by("id")
            .limit(batch)
            .values_list("id", "job_id")
        )
        if not rows:
            return pruned
        after_id = int(rows[-1][0])
        job_uids = [str(uid) for _, uid in rows]
        pod_uids = [
            str(uid)
            for uid in await Pod.filter(job_id__in=job_uids).values_list("pod_id", flat=True)
        ]
        if dry_run:
            pruned.jobs += len(job_uids)
            pruned.pods += len(pod_uids)
            for chunk in chunks(job_uids + pod_uids, CHUNK):
                pruned.events += await Event.filter(obj_uid__in=chunk).count()
            continue
        for chunk in chunks(job_uids + pod_uids, CHUNK):
            pruned.events += await Event.filter(obj_uid__in=chunk).delete()
        for chunk in chunks(pod_uids, CHUNK):
            pruned.pods += await Pod.filter(pod_id__in=chunk).delete()
        pruned.jobs += await Job.filter(job_id__in=job_uids).delete()


async def prune_forever(
    days: int, interval: float, standing_by: Callable[[], bool] = lambda: False
) -> None:
    """Prune every ``interval`` seconds unless this replica stands by; errors are logged,
    not fatal."""
    while True:
        if standing_by():
            await asyncio.sleep(interval)
            continue
        try:
            pruned = await prune(cutoff(days))
        except Exception as exc:
            logger.warning("Pruning failed, trying again later: %s", exc)
        else:
            if pruned.jobs:
                logger.info(
                    "Pruned %d jobs finished over %d days ago, with %d pods and %d Events",
                    pruned.jobs,
                    days,
                    pruned.pods,
                    pruned.events,
                )
        await asyncio.sleep(interval)
