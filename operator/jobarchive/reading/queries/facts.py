"""Usage per job over a window: what each job's pods cost (GPU- and CPU-hours, in all
and per replica type), how long it waited and ran, how it ended (decision 33)."""

import dataclasses
import datetime
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from tortoise.expressions import Q

from jobarchive.core.efficiency import JobEfficiency
from jobarchive.core.times import aware, seconds
from jobarchive.reading.params import EARLIEST, LATEST, check_namespace
from jobarchive.reading.queries.classes import FAILED, classes_of
from jobarchive.reading.queries.measured import jobs_efficiency
from jobarchive.reading.queries.preemptions import KueueFacts, kueue_facts
from jobarchive.reading.queries.source import Head, read
from jobarchive.reading.usage import overlap
from jobarchive.storage.models import Job, Pod

# Enough of a remark for its head (``OOMKilled (exit code 137)``).
REASON_LENGTH = 200
JOB_FIELDS = (
    "job_id",
    "name",
    "namespace",
    "owner",
    "tenant",
    "queue",
    "cluster",
    "kind",
    "status",
    "gmt_created",
    "gmt_job_running",
    "gmt_finished",
)
T = TypeVar("T", datetime.datetime, float)
POD_FIELDS = (
    "job_id",
    "replica_type",
    "gpus",
    "cpu_millis",
    "status",
    "gmt_started",
    "gmt_finished",
)


@dataclasses.dataclass(frozen=True)
class JobUsage:
    """One job's usage facts. ``gpu_hours``/``cpu_hours`` are its pods' hours cut to the
    window asked for; ``all_gpu_hours``/``all_cpu_hours`` its whole life's (to now while
    it runs). ``queue_wait_s``: creation to the first Running; ``gang_wait_s``: to every
    recorded replica running; ``run_s``: the first Running to the finish (or now). Times
    are UTC. ``failure_class`` and ``kueue`` are read only where asked for
    (``with_attempts``): a failed job's class (decision 42), and Kueue's figures of a
    job it admitted (decision 43)."""

    job_uid: str
    name: str
    namespace: str
    owner: str
    tenant: str
    queue: str | None
    cluster: str | None
    kind: str
    status: str
    reason: str | None
    created: datetime.datetime
    started: datetime.datetime | None
    finished: datetime.datetime | None
    queue_wait_s: float | None
    gang_wait_s: float | None
    run_s: float | None
    gpu_hours: float
    cpu_hours: float
    all_gpu_hours: float
    all_cpu_hours: float
    replicas: int
    # Its pods' GPUs added up (a pod replaced is counted again).
    gpus: int
    # (replica type, GPU-hours in the window), by replica type.
    gpu_hours_by_type: tuple[tuple[str, float], ...]
    failure_class: str | None = None
    kueue: KueueFacts | None = None
    # Its pods' efficiency from Prometheus (decision 45), where one of them was summarised.
    efficiency: JobEfficiency | None = None


async def job_usage(
    since: datetime.datetime,
    until: datetime.datetime,
    namespace: str | None = None,
    batch: int = 1000,
) -> AsyncIterator[list[JobUsage]]:
    """The jobs whose life (creation to finish, or now) overlaps [since, until), in the
    order they were recorded, ``batch`` at a time, each with its usage facts: one
    statement for the jobs of a batch, one for their pods."""
    jobs = (
        read(Job)
        .filter(gmt_created__lt=until)
        .filter(Q(gmt_finished__isnull=True) | Q(gmt_finished__gte=since))
    )
    if namespace is not None:
        jobs = jobs.filter(namespace=check_namespace(namespace))
    last = 0
    while True:
        found = (
            await jobs.filter(id__gt=last)
            .order_by("id")
            .limit(batch)
            .annotate(head=Head("remark", REASON_LENGTH))
            .values("id", "head", *JOB_FIELDS)
        )
        if not found:
            return
        last = found[-1]["id"]
        now = datetime.datetime.now(datetime.UTC)
        yield await with_pods(found, since, until, now)
        if len(found) < batch:
            return


async def with_pods(
    jobs: Sequence[Mapping[str, Any]],
    since: datetime.datetime,
    until: datetime.datetime,
    now: datetime.datetime,
) -> list[JobUsage]:
    """The usage facts of job rows (``JOB_FIELDS`` and their remark's ``head``), in their
    order, their pods read in one statement."""
    of: dict[str, list[dict[str, Any]]] = {job["job_id"]: [] for job in jobs}
    for pod in (
        await read(Pod)
        .filter(job_id__in=list(of))
        .annotate(head=Head("remark", REASON_LENGTH))
        .values("head", *POD_FIELDS)
    ):
        of[pod["job_id"]].append(pod)
    return [facts(job, of[job["job_id"]], since, until, now) for job in jobs]


async def jobs_usage(uids: Sequence[str]) -> dict[str, JobUsage]:
    """The whole life's usage facts of the jobs of these uids (a page of a list), by uid:
    their rows and their pods, each one statement."""
    if not uids:
        return {}
    found = (
        await read(Job)
        .filter(job_id__in=list(uids))
        .annotate(head=Head("remark", REASON_LENGTH))
        .values("head", *JOB_FIELDS)
    )
    now = datetime.datetime.now(datetime.UTC)
    return {usage.job_uid: usage for usage in await with_pods(found, EARLIEST, LATEST, now)}


async def with_attempts(found: Sequence[JobUsage]) -> list[JobUsage]:
    """The usage facts of a page of jobs with their failure class (a failed job's, when
    classified), Kueue's figures (a job Kueue admitted) and their efficiency (a job a
    pod of which was summarised): one statement for the classes, ``kueue_facts``' for
    the attempts, ``jobs_efficiency``'s for the summaries."""
    uids = [usage.job_uid for usage in found]
    classes = await classes_of([usage.job_uid for usage in found if usage.status == FAILED])
    kueue = await kueue_facts(uids)
    efficiency = await jobs_efficiency(uids)
    return [
        dataclasses.replace(
            usage,
            failure_class=classes.get(usage.job_uid),
            kueue=kueue.get(usage.job_uid),
            efficiency=efficiency.get(usage.job_uid),
        )
        for usage in found
    ]


def first_ran(running: T | None, pod_starts: Iterable[T | None]) -> T | None:
    """When a job first ran, decision 32's rule, for the facts and the roll-ups alike:
    ``gmt_job_running`` when known, else its pods' first start (None when none started).
    Times as datetimes or as seconds from one origin."""
    if running is not None:
        return running
    return min((start for start in pod_starts if start is not None), default=None)


def first_ran_sql(column: str, running: str, first_pod: str) -> str:
    """``first_ran`` in SQL, for the roll-ups to rank waits by: ``running`` (the time
    ``column`` holds, as the statement counts time) when ``column`` is set, else
    ``first_pod`` (the pods' first start, read only then)."""
    return f"CASE WHEN {column} IS NULL THEN {first_pod} ELSE {running} END"


def _reason(remark: str | None) -> str | None:
    return remark.split(": ", 1)[0] if remark else None


def facts(
    job: Mapping[str, Any],
    pods: Sequence[Mapping[str, Any]],
    since: datetime.datetime,
    until: datetime.datetime,
    now: datetime.datetime,
) -> JobUsage:
    """A job's usage facts from its row and its pods' (pure): hours cut to [since,
    until) and whole, waits from its creation, its reason when it failed."""
    created: datetime.datetime = job["gmt_created"].replace(tzinfo=datetime.UTC)
    finished = aware(job["gmt_finished"])
    starts = [aware(pod["gmt_started"]) for pod in pods]
    ran = [start for start in starts if start is not None]
    started = first_ran(aware(job["gmt_job_running"]), ran)
    gpu, cpu, whole, whole_cpu = 0.0, 0.0, 0.0, 0.0
    by_type: dict[str, float] = {}
    for pod, start in zip(pods, starts, strict=True):
        end = aware(pod["gmt_finished"]) or now
        inside = overlap(start, end, since, until)
        life = overlap(start, end, EARLIEST, LATEST)
        gpus, cores = pod["gpus"] or 0, (pod["cpu_millis"] or 0) / 1000
        gpu, cpu = gpu + gpus * inside, cpu + cores * inside
        whole, whole_cpu = whole + gpus * life, whole_cpu + cores * life
        by_type[pod["replica_type"]] = by_type.get(pod["replica_type"], 0.0) + gpus * inside
    failed = sorted(
        (aware(pod["gmt_finished"]) or now, _reason(pod["head"]) or "")
        for pod in pods
        if pod["status"] == "Failed"
    )
    reason = next((why for _, why in failed if why), None) or _reason(job["head"])
    gang = max(ran) if pods and len(ran) == len(pods) else None
    return JobUsage(
        job_uid=job["job_id"],
        name=job["name"],
        namespace=job["namespace"],
        owner=job["owner"],
        tenant=job["tenant"],
        queue=job["queue"],
        cluster=job["cluster"],
        kind=job["kind"],
        status=job["status"],
        reason=reason if job["status"] == "Failed" else None,
        created=created,
        started=started,
        finished=finished,
        queue_wait_s=seconds(created, started),
        gang_wait_s=seconds(created, gang),
        run_s=seconds(started, finished or now) if started else None,
        gpu_hours=_hours(gpu),
        cpu_hours=_hours(cpu),
        all_gpu_hours=_hours(whole),
        all_cpu_hours=_hours(whole_cpu),
        replicas=len(pods),
        gpus=sum(pod["gpus"] or 0 for pod in pods),
        gpu_hours_by_type=tuple((kind, _hours(value)) for kind, value in sorted(by_type.items())),
    )


def _hours(seconds_: float) -> float:
    return round(seconds_ / 3600, 3)
