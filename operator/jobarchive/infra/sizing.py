"""What the catch-up will hold in memory, told before Kopf begins to list.

Kopf's listing has no backpressure: every object listed waits in memory for its
worker, so a catch-up's peak grows with the pods, Events, jobs and Kueue Workloads in
scope. At start the operator counts them (metadata-only lists, paged), predicts the
peak from the memory model of ARCHITECTURE.md decision 38, reads its container's
memory limit from the cgroup files, and when the prediction passes the limit says so
in one line with the figures and the remedy, then goes on: the count is a forecast,
not a gate.
"""

import asyncio
import dataclasses
import logging
import math
import pathlib
from collections.abc import Iterable, Sequence

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from jobarchive.core.kinds import KUEUE_GROUP, WORKLOAD_VERSIONS, WORKLOADS, JobKind
from jobarchive.infra.cluster import api_client, list_path, pages
from jobarchive.infra.logs import shown
from jobarchive.infra.scope import Scope

# A count keeps no object, so its pages are twice a listing's: half the requests where
# the server does not say what remains.
COUNT_PAGE = 1000

logger = logging.getLogger(__name__)

MIB = 1024 * 1024
# The memory model (decision 38): resident bytes at the catch-up's peak, a base plus a
# share per object in scope (pods, Events and jobs alike: the bench's catch-ups hold an
# Event per pod, so the two are not told apart), fitted from `make bench`'s memory section
# on kubelet-written bodies (pods 6-53 kB of JSON, Events 1.2-2.1 kB). A shard holds more
# per namespace it serves: two busy streams each, each with its worker limit in flight
# and a page listed ahead (decision 22).
# The classifying pass (decision 42) holds one job's evidence at a time, its log tails
# at most ``classifying.TAILS`` of JOBARCHIVE_LOG_TAIL_BYTES (64 KiB by default) each.
CLASSIFYING_BYTES = 4 * MIB
# The summarising pass (decision 45) holds a round's pod rows and, at the default
# JOBARCHIVE_PROMETHEUS_CONCURRENCY of 4, four answers of at most
# ``infra.prometheus.MAX_BODY`` (4 MiB) each, read and parsed; answers are kilobytes in
# practice. Counted whether or not Prometheus is asked: a bound, not an estimate.
SUMMARISING_BYTES = 4 * 2 * 4 * MIB
BASE_BYTES = 150 * MIB + CLASSIFYING_BYTES + SUMMARISING_BYTES
OBJECT_BYTES = 1434
NAMESPACE_BYTES = 34 * MIB
# cgroup v1 writes "no limit" as 2**63 rounded down to a page; anything this large is none.
UNLIMITED = 2**60
# Lists in flight at once, and how long the whole count may take before it is left out.
CONCURRENCY = 8
WITHIN = 60.0
NOT_FOUND = 404


@dataclasses.dataclass(frozen=True)
class Counts:
    """The objects in scope that the catch-up will list."""

    pods: int = 0
    events: int = 0
    jobs: int = 0
    # Kueue's Workloads (decision 43), weighed as pods are: none without Kueue.
    workloads: int = 0

    def __add__(self, other: "Counts") -> "Counts":
        return Counts(
            self.pods + other.pods,
            self.events + other.events,
            self.jobs + other.jobs,
            self.workloads + other.workloads,
        )

    def describe(self) -> str:
        """The counts for a log line (Workloads only where there are some)."""
        if not self.workloads:
            return f"{self.pods:,} pods, {self.events:,} Events and {self.jobs:,} jobs"
        return (
            f"{self.pods:,} pods, {self.events:,} Events, {self.jobs:,} jobs and "
            f"{self.workloads:,} Kueue Workloads"
        )


def predict(counts: Counts, namespaces: int | None = None) -> int:
    """The catch-up's predicted peak resident memory, in bytes, for one operator over
    every namespace (``namespaces`` None) or a shard serving that many."""
    objects = counts.pods + counts.events + counts.jobs + counts.workloads
    return BASE_BYTES + objects * OBJECT_BYTES + (namespaces or 0) * NAMESPACE_BYTES


def memory_limit(root: pathlib.Path) -> int | None:
    """The memory limit of the cgroup mounted at ``root``, in bytes: cgroup v2's
    ``memory.max``, else v1's ``memory/memory.limit_in_bytes``; None when there is no
    limit ("max", or a v1 value too large to be one) or no file can be read."""
    for path in (root / "memory.max", root / "memory" / "memory.limit_in_bytes"):
        try:
            text = path.read_text().strip()
        except OSError:
            continue
        if text == "max":
            return None
        try:
            limit = int(text)
        except ValueError:
            return None
        return limit if 0 < limit < UNLIMITED else None
    return None


def shards_needed(predicted: int, limit: int) -> int | None:
    """Shards of evenly spread namespaces whose peaks each fit under ``limit``, each
    taking its share of what the prediction holds above the base; None when the limit
    is below the base."""
    if limit <= BASE_BYTES:
        return None
    return max(2, math.ceil((predicted - BASE_BYTES) / (limit - BASE_BYTES)))


def warning(counts: Counts, served: Scope, namespaces: int | None, limit: int | None) -> str | None:
    """The one line saying that the catch-up of ``served`` (``namespaces`` of them, None
    for all) will pass the memory limit, naming the figures and the remedy; None when
    it fits or there is no limit."""
    predicted = predict(counts, namespaces)
    if limit is None or predicted <= limit:
        return None
    shards = shards_needed(predicted, limit)
    split = (
        f"split the namespaces into {shards} or more shards (docs/deploy.md, Shards) or raise"
        if shards
        else "raise"
    )
    return (
        f"Catching up {counts.describe()} in {served.describe()} is predicted to peak at "
        f"{predicted / MIB:,.0f} MiB, above this container's memory limit of "
        f"{limit / MIB:,.0f} MiB: it would be killed and catch up again at every restart; "
        f"{split} the limit to at least {math.ceil(predicted * 1.1 / MIB):,} MiB"
    )


async def count_list(api: client.ApiClient, path: str) -> int:
    """How many objects a list path holds: its metadata-only pages, until the server
    says how many remain (``remainingItemCount``) or the last page."""
    total = 0
    async for page in pages(api, path, COUNT_PAGE):
        items = page.get("items")
        total += len(items) if isinstance(items, list) else 0
        meta = page.get("metadata")
        remaining = meta.get("remainingItemCount") if isinstance(meta, dict) else None
        if isinstance(remaining, int) and not isinstance(remaining, bool) and remaining >= 0:
            return total + remaining
    return total


async def count(
    api: client.ApiClient, kinds: Iterable[JobKind], places: Sequence[str | None]
) -> Counts:
    """Pods, Events, jobs of ``kinds`` and Kueue's Workloads in ``places`` (None: the
    whole cluster); a kind not installed (404) counts none, a Workload in the first of
    its versions served."""
    limit = asyncio.Semaphore(CONCURRENCY)

    async def one(paths: Sequence[str], field: str) -> Counts:
        async with limit:
            for path in paths:
                try:
                    return Counts(**{field: await count_list(api, path)})
                except ApiException as exc:
                    if exc.status != NOT_FOUND:
                        raise
        return Counts()

    lists = [([list_path("", "v1", "pods", place)], "pods") for place in places]
    lists += [([list_path("", "v1", "events", place)], "events") for place in places]
    lists += [
        ([list_path(kind.group, kind.version, kind.plural, place)], "jobs")
        for kind in kinds
        for place in places
    ]
    lists += [
        (
            [list_path(KUEUE_GROUP, version, WORKLOADS, place) for version in WORKLOAD_VERSIONS],
            "workloads",
        )
        for place in places
    ]
    counted = await asyncio.gather(*(one(paths, field) for paths, field in lists))
    return sum(counted, Counts())


async def forecast(kinds: Iterable[JobKind], served: Scope, root: pathlib.Path) -> None:
    """Count what the catch-up will list, predict its peak and log it in one line; one
    more, a warning, when the peak passes the container's memory limit. Never raises:
    what cannot be counted in time is said and left out."""
    try:
        async with await asyncio.wait_for(api_client(), WITHIN) as api:
            places = await asyncio.wait_for(served.namespaces(api), WITHIN)
            counts = await asyncio.wait_for(
                count(api, kinds, [None] if places is None else places), WITHIN
            )
            namespaces = None if places is None else len(places)
    # Whatever went wrong only leaves the forecast out; the catch-up goes on as ever.
    except Exception as exc:
        logger.warning("Could not count what the catch-up will list (%s)", _failure(exc))
        return
    limit = memory_limit(root)
    logger.info(
        "Counted %s in %s before listing: catch-up peak predicted at %s MiB (memory limit: %s)",
        counts.describe(),
        served.describe(),
        f"{predict(counts, namespaces) / MIB:,.0f}",
        f"{limit / MIB:,.0f} MiB" if limit else "none",
    )
    line = warning(counts, served, namespaces, limit)
    if line:
        logger.warning("%s", line)


def _failure(exc: Exception) -> str:
    """Why the count failed, in a few words."""
    if isinstance(exc, ApiException):
        return f"{exc.status} {shown(exc.reason)}"
    return f"{type(exc).__name__} {shown(exc)}".rstrip()
