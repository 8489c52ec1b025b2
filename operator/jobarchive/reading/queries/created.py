"""The export's stream: the jobs created in a window, oldest first, with their usage
facts as ``usage.facts`` computes them for every face (decision 34). Read by creation
through the (gmt_created) index, in keyset batches."""

import datetime
from collections.abc import AsyncIterator

from tortoise.expressions import Q

from jobarchive.reading.queries.source import Head, read
from jobarchive.reading.queries.usage import JOB_FIELDS, POD_FIELDS, REASON_LENGTH, JobUsage, facts
from jobarchive.storage.models import Job, Pod


def _naive(moment: datetime.datetime) -> datetime.datetime:
    return moment.astimezone(datetime.UTC).replace(tzinfo=None)


async def created_usage(
    since: datetime.datetime,
    until: datetime.datetime,
    now: datetime.datetime,
    batch: int = 1000,
) -> AsyncIterator[list[JobUsage]]:
    """The jobs created in [since, until), ordered by creation (then id), ``batch`` at a
    time; their hours counted from ``since`` to ``now`` (a running job's end), which is
    their whole life's."""
    jobs = read(Job).filter(gmt_created__gte=_naive(since), gmt_created__lt=_naive(until))
    after: tuple[datetime.datetime, int] | None = None
    while True:
        page = jobs
        if after is not None:
            created, last = after
            page = page.filter(Q(gmt_created__gt=created) | Q(gmt_created=created, id__gt=last))
        found = (
            await page.order_by("gmt_created", "id")
            .limit(batch)
            .annotate(head=Head("remark", REASON_LENGTH))
            .values("id", "head", *JOB_FIELDS)
        )
        if not found:
            return
        after = found[-1]["gmt_created"], found[-1]["id"]
        uids = [job["job_id"] for job in found]
        of: dict[str, list[dict[str, object]]] = {uid: [] for uid in uids}
        for pod in (
            await read(Pod)
            .filter(job_id__in=uids)
            .annotate(head=Head("remark", REASON_LENGTH))
            .values("head", *POD_FIELDS)
        ):
            of[pod["job_id"]].append(pod)
        yield [facts(job, of[job["job_id"]], since, now, now) for job in found]
        if len(found) < batch:
            return
