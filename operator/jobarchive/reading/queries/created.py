"""The export's stream: the jobs created in a window, oldest first, with their usage
facts as ``usage.facts`` computes them for every face (decision 34). Read by creation
through the (gmt_created) index, in keyset batches."""

import datetime
from collections.abc import AsyncIterator
from typing import Literal

from tortoise.expressions import Q
from tortoise.queryset import ValuesQuery

from jobarchive.reading.queries.facts import (
    JOB_FIELDS,
    REASON_LENGTH,
    JobUsage,
    with_attempts,
    with_pods,
)
from jobarchive.reading.queries.source import Head, read
from jobarchive.storage.models import Job


def created_page(
    since: datetime.datetime,
    until: datetime.datetime,
    after: tuple[datetime.datetime, int] | None,
    batch: int,
) -> "ValuesQuery[Literal[False]]":
    """The next ``batch`` jobs created in [since, until) after (gmt_created, id) ``after``."""
    jobs = read(Job).filter(gmt_created__gte=since, gmt_created__lt=until)
    if after is not None:
        created, last = after
        jobs = jobs.filter(Q(gmt_created__gt=created) | Q(gmt_created=created, id__gt=last))
    return (
        jobs.order_by("gmt_created", "id")
        .limit(batch)
        .annotate(head=Head("remark", REASON_LENGTH))
        .values("id", "head", *JOB_FIELDS)
    )


async def created_usage(
    since: datetime.datetime,
    until: datetime.datetime,
    now: datetime.datetime,
    batch: int = 1000,
) -> AsyncIterator[list[JobUsage]]:
    """The jobs created in [since, until), ordered by creation (then id), ``batch`` at a
    time; their hours counted from ``since`` to ``now`` (a running job's end), which is
    their whole life's; with their failure class and Kueue's figures (``with_attempts``)."""
    after: tuple[datetime.datetime, int] | None = None
    while True:
        found = await created_page(since, until, after, batch)
        if not found:
            return
        after = found[-1]["gmt_created"].replace(tzinfo=datetime.UTC), found[-1]["id"]
        yield await with_attempts(await with_pods(found, since, now, now))
        if len(found) < batch:
            return
