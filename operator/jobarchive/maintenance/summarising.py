"""The efficiency pass (decision 45): each finished pod of a recorded job summarised
from Prometheus, off the recording path, kept as long as the archive keeps its job.

A pod is due ``delay`` seconds after it finished (Prometheus has scraped its last
samples by then) and until ``horizon`` days after (Prometheus has forgotten it). The
queue is the archive itself: a due pod without a ``pod_efficiency`` row, so that pods
survive a restart and pods that ended while the operator was away are summarised when it
returns. Rounds read due pods in the order they finished, from a mark that moves past
the pods summarised and goes back to the horizon every ``RESCAN`` seconds (for a pod
whose row arrived late). Each pod costs one query (``core.promql``), at most
``concurrency`` at a time and ``rate`` a second. A Prometheus that cannot be reached,
or answers 5xx, 429 or what it would answer any query (a wrong path, credentials not
granted: ``infra.prometheus``), stops the round: the pod stays due, and the next round waits the
database's backoff (``storage.waiting.Backoff``), said once when it begins and once
when it ends. A refusal (4xx, a PromQL error, an answer of another type) is kept as
the pod's ``refused`` row with Prometheus' words, and said in a line naming the pods,
so one bad pod never stalls the others; the pod stays queued all the same: due again
a ``RESCAN`` after its refusal (a configuration fixed since, a Prometheus upgraded),
until the horizon, its row replaced by the answer.
"""

import asyncio
import dataclasses
import datetime
import json
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

from tortoise.expressions import Q, Subquery

from jobarchive.config import Settings
from jobarchive.core import efficiency, promql
from jobarchive.core.efficiency import PodEfficiency, Sample, allocated
from jobarchive.core.rows import SummaryRow
from jobarchive.core.times import aware
from jobarchive.infra.logs import shown
from jobarchive.infra.prometheus import Prometheus
from jobarchive.infra.scope import CLUSTER, Scope
from jobarchive.maintenance.peering import Activity
from jobarchive.storage.models import Pod, utcnow
from jobarchive.storage.summaries import Summary
from jobarchive.storage.waiting import Backoff

logger = logging.getLogger(__name__)
# Pods per round: each one's row and answer held in turn (``infra.sizing`` counts them).
BATCH_PODS = 64
# Pods one query asks at most: its answer stays far below the client's bound on bytes
# (a pod of eight GPUs answers about 100 series).
GROUP_PODS = 16
# How often the mark goes back to the horizon.
RESCAN = 3600.0
# Between rounds that found nothing to do.
IDLE = 10.0
# While Prometheus is away: the database's backoff rule, over a longer range.
BACKOFF = (1.0, 60.0)

Write = Callable[[list[SummaryRow]], Awaitable[None]]
_POD = (
    "pod_id",
    "version",
    "job_id",
    "namespace",
    "name",
    "gpus",
    "cpu_millis",
    "memory_bytes",
    "resources",
    "gmt_started",
    "gmt_finished",
)


class Unreachable(Exception):
    """Prometheus could not answer now; the round stops and the pods stay due."""


class Asker(Protocol):
    """Prometheus' instant query: the vector at ``at``; raises an error whose
    ``retryable`` says whether asking again later may answer."""

    async def query(self, expression: str, at: datetime.datetime) -> Sequence[Sample]: ...


@dataclasses.dataclass(frozen=True)
class Asking:
    """How pods are asked of Prometheus (the JOBARCHIVE_PROMETHEUS_* settings)."""

    delay: float = 60.0
    scrape_interval: float = 30
    horizon_days: int = 15
    concurrency: int = 4
    rate: float = 20.0
    label_pairs: tuple[tuple[str, str], ...] = (
        ("namespace", "pod"),
        ("exported_namespace", "exported_pod"),
    )


class Pace:
    """At most ``rate`` starts a second, spaced evenly."""

    def __init__(self, rate: float) -> None:
        self.spacing = 1.0 / rate
        self.next = time.monotonic()

    async def wait(self) -> None:
        """Wait for the next start's turn."""
        now = time.monotonic()
        turn = max(now, self.next)
        self.next = turn + self.spacing
        if turn > now:
            await asyncio.sleep(turn - now)


def summary_row(pod: dict[str, Any], found: PodEfficiency, note: str | None = None) -> SummaryRow:
    """The ``pod_efficiency`` row of a pod's figures."""
    per_gpu = [dataclasses.asdict(gpu) for gpu in found.per_gpu]
    return {
        "pod_id": pod["pod_id"],
        "version": pod["version"],
        "job_id": pod["job_id"],
        "namespace": pod["namespace"],
        "pod_name": pod["name"],
        "outcome": found.outcome,
        "source": found.source,
        "gpus_seen": found.gpus_seen,
        "gpu_activity_mean": found.gpu_activity_mean,
        "gpu_activity_peak": found.gpu_activity_peak,
        "gpu_memory_peak": found.gpu_memory_peak,
        "unused_gpus": found.unused_gpus,
        "energy_joules": found.energy_joules,
        "cpu_seconds": found.cpu_seconds,
        "cpu_efficiency": found.cpu_efficiency,
        "memory_peak_bytes": found.memory_peak_bytes,
        "memory_peak_ratio": found.memory_peak_ratio,
        "per_gpu": json.dumps(per_gpu, separators=(",", ":")),
        "note": note,
        "gmt_created": None,
    }


class Summariser:
    """Summarises the store's cluster's finished pods from ``prometheus``."""

    def __init__(
        self,
        prometheus: Asker,
        cluster: Callable[[], str],
        write: Write,
        asking: Asking = Asking(),
        scope: Scope = CLUSTER,
    ) -> None:
        self.prometheus = prometheus
        self.cluster = cluster
        self.write = write
        self.asking = asking
        self.scope = scope
        self.mark: datetime.datetime | None = None
        self.rescanned = time.monotonic()
        self.pace = Pace(asking.rate)
        self.slots = asyncio.Semaphore(asking.concurrency)
        # What Prometheus last said when it could not answer, for the outage's line.
        self.last_error = ""

    async def round(self) -> int:
        """Summarise the next due pods; returns how many. Raises Unreachable, having
        written those summarised before Prometheus went away."""
        if time.monotonic() - self.rescanned > RESCAN:
            self.mark, self.rescanned = None, time.monotonic()
        due = await self.due()
        if not due:
            return 0
        answered = await asyncio.gather(*(self.ask(group) for group in windows(due)))
        found = {uid: row for answer in answered for uid, row in answer.items()}
        rows = [row for row in found.values() if row is not None]
        if rows:
            await self.write(rows)
        if len(rows) < len(due):
            unanswered = next(pod for pod in due if found.get(pod["pod_id"]) is None)
            self.mark = min(self.mark or unanswered["gmt_finished"], unanswered["gmt_finished"])
            raise Unreachable(f"{self.last_error} ({len(due) - len(rows)} pods wait)")
        self.mark = due[-1]["gmt_finished"]
        return len(rows)

    async def due(self) -> list[dict[str, Any]]:
        """The next pods finished between the horizon and ``delay`` ago, after the mark,
        without a summary (or refused a ``RESCAN`` ago), in the order they finished."""
        now = utcnow()
        horizon = now - datetime.timedelta(days=self.asking.horizon_days)
        again = now - datetime.timedelta(seconds=RESCAN)
        # Q, not exclude(): Tortoise negates each of exclude()'s terms apart.
        refused_then = Q(outcome=efficiency.REFUSED, gmt_modified__lt=again)
        done = Summary.filter(~refused_then, cluster=self.cluster()).values("pod_id")
        found = Pod.filter(
            cluster=self.cluster(),
            gmt_finished__gte=max(horizon, aware(self.mark) or horizon),
            gmt_finished__lte=now - datetime.timedelta(seconds=self.asking.delay),
        ).exclude(pod_id__in=Subquery(done))
        if not self.scope.clusterwide and self.scope.exact:
            found = found.filter(namespace__in=sorted(set(self.scope.patterns)))
        rows = await found.order_by("gmt_finished").limit(BATCH_PODS).values(*_POD)
        return [row for row in rows if self.scope.matches(str(row["namespace"]))]

    async def ask(self, pods: list[dict[str, Any]]) -> dict[str, SummaryRow | None]:
        """The rows of pods that ran over one window, by uid, from one answer; None for
        each when Prometheus could not answer now."""
        given = {pod["pod_id"]: allocated(pod) for pod in pods}
        first = pods[0]
        run = given[first["pod_id"]].run_seconds
        if first["gmt_started"] is None or efficiency.too_short(run, self.asking.scrape_interval):
            return {
                pod["pod_id"]: summary_row(pod, PodEfficiency(efficiency.TOO_SHORT)) for pod in pods
            }
        target = promql.Target(
            namespace=first["namespace"],
            pods=[(pod["name"], pod["pod_id"]) for pod in pods],
            run_seconds=run,
            scrape_interval=self.asking.scrape_interval,
            label_pairs=self.asking.label_pairs,
        )
        finished = aware(first["gmt_finished"]) or utcnow()
        async with self.slots:
            await self.pace.wait()
            try:
                answer = await self.prometheus.query(promql.query(target), finished)
            except Exception as exc:
                if getattr(exc, "retryable", True):
                    self.last_error = str(exc)
                    return dict.fromkeys(given)
                logger.warning(
                    "Not summarised, Prometheus refused the query of %s: %s",
                    named(pods),
                    shown(str(exc)),
                )
                refused = PodEfficiency(efficiency.REFUSED)
                return {pod["pod_id"]: summary_row(pod, refused, note=str(exc)) for pod in pods}
        samples: dict[str | None, list[Sample]] = {}
        for sample in answer:
            samples.setdefault(promql.owner(sample.labels, target), []).append(sample)
        return {
            pod["pod_id"]: summary_row(
                pod, efficiency.summarise(samples.get(pod["name"], []), given[pod["pod_id"]])
            )
            for pod in pods
        }


def named(pods: list[dict[str, Any]], most: int = 3) -> str:
    """Pods as a log line names them: ``ns/name``, the first ``most``, then how many more."""
    names = ", ".join(shown(f"{pod['namespace']}/{pod['name']}") for pod in pods[:most])
    return names + (f" and {len(pods) - most} more" if len(pods) > most else "")


def windows(pods: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Pods grouped as one query asks them: of one namespace, started and finished at the
    same times, at most ``GROUP_PODS`` and each name once a group."""
    groups: dict[tuple[Any, ...], list[list[dict[str, Any]]]] = {}
    for pod in pods:
        key = (pod["namespace"], pod["gmt_started"], pod["gmt_finished"])
        chunks = groups.setdefault(key, [[]])
        last = chunks[-1]
        if len(last) >= GROUP_PODS or any(other["name"] == pod["name"] for other in last):
            last = []
            chunks.append(last)
        last.append(pod)
    return [chunk for chunks in groups.values() for chunk in chunks]


def from_settings(
    settings: Settings, cluster: Callable[[], str], write: Write, scope: Scope
) -> tuple[Summariser, Prometheus] | None:
    """The summariser the settings ask for, with its Prometheus client (to be closed at
    stop); None when JOBARCHIVE_PROMETHEUS_URL is not set."""
    if settings.prometheus_url is None:
        return None
    prometheus = Prometheus(
        settings.prometheus_url,
        token_file=settings.prometheus_token_file,
        ca_file=settings.prometheus_ca_file,
        timeout=settings.prometheus_timeout,
    )
    asking = Asking(
        delay=settings.prometheus_delay,
        scrape_interval=settings.prometheus_scrape_interval,
        horizon_days=settings.prometheus_horizon,
        concurrency=settings.prometheus_concurrency,
        rate=settings.prometheus_rate,
        label_pairs=settings.prometheus_pod_labels,
    )
    return Summariser(prometheus, cluster, write, asking, scope), prometheus


async def summarise_forever(summariser: Summariser, activity: Activity) -> None:
    """Rounds while this replica is the active one: at once after a full round, every
    ``IDLE`` seconds otherwise, after the backoff while Prometheus is away (said once
    when it goes, once when it is back); other errors are logged, not fatal."""
    backoff = Backoff(*BACKOFF)
    away: float | None = None
    while True:
        if activity.standing_by:
            await activity.until_active()
        try:
            done = await summariser.round()
        except Unreachable as exc:
            if away is None:
                away = time.monotonic()
                logger.warning("Prometheus cannot answer, summaries wait: %s", shown(str(exc)))
            await asyncio.sleep(backoff.next())
            continue
        except Exception as exc:
            logger.warning("Summarising pods failed, trying again later: %s", shown(str(exc)))
            done = 0
        if away is not None:
            logger.info("Prometheus answers again after %.1f s", time.monotonic() - away)
            away = None
            backoff.reset()
        if done < BATCH_PODS:
            await asyncio.sleep(IDLE)
