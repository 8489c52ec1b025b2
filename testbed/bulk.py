"""A large, varied archive written through the store's upsert, for query plans and the
query benchmark: rows shaped by the real converters, then varied the way a shared
cluster varies them (many namespaces, owners, kinds, statuses, a year of history)."""

import datetime
import random
import uuid
from collections.abc import Iterator

from jobarchive.config import load
from jobarchive.core.rows import EventRow, JobRow, PodRow, Row
from jobarchive.reading.queries import JOB_STATUSES
from jobarchive.recording.convert import event_row, job_row, pod_row
from jobarchive.storage.models import Event, Job, Pod, Stamped
from jobarchive.storage.store import Store
from testbed import objects as o

START = datetime.datetime(2025, 11, 29, tzinfo=datetime.UTC)
KINDS = ("TFJob", "PyTorchJob", "MPIJob", "XGBoostJob", "PaddleJob")
REASONS = ("Scheduled", "Pulled", "Created", "Started", "BackOff", "OOMKilling", "Killing")
CHUNK = 2000


def _templates() -> tuple[JobRow, PodRow, EventRow]:
    settings = load({})
    job = o.with_meta(
        o.example("pytorch-simple.yaml"),
        uid="u",
        resourceVersion="1",
        creationTimestamp=o.T0,
        namespace="ns",
    )
    kind = o.job_kind(settings.kinds, job)
    pod = o.with_meta(
        o.kubeflow_pod(job, "pytorchReplicaSpecs", "Worker", 0), uid="p", resourceVersion="1"
    )
    event = o.with_meta(
        o.event(pod, "Pulled", "Container image already present"), uid="e", resourceVersion="1"
    )
    return job_row(job, kind, None), pod_row(pod, "u", None, None), event_row(event, None)


def _job(
    rng: random.Random,
    template: JobRow,
    index: int,
    created: datetime.datetime,
    namespace: str | None,
) -> JobRow:
    """The ``index``-th job's row, created at ``created``, in ``namespace`` or one of 60."""
    status = rng.choice(JOB_STATUSES)
    finished = created + datetime.timedelta(seconds=rng.randrange(60, 86400))
    job_uid = str(uuid.UUID(int=rng.getrandbits(128)))
    team = namespace or f"team-{rng.randrange(60)}"
    name = f"{rng.choice(('mnist', 'bert', 'resnet', 'llama', 'gpt'))}-{index}"
    return {
        **template,
        "job_id": job_uid,
        "name": name,
        "namespace": team,
        "version": str(index + 1),
        "kind": rng.choice(KINDS),
        "status": status,
        "owner": f"user-{rng.randrange(300)}",
        "tenant": f"tenant-{rng.randrange(20)}",
        # Not drawn from ``rng``: the rows drawn before queues were filled stay as they were.
        "queue": f"queue-{index % 8}",
        "deploy_region": rng.choice(("eu-west-1", "us-east-1", "ap-south-1")),
        "is_in_etcd": status not in ("Succeeded", "Failed", "Stopped"),
        "gmt_created": created,
        "gmt_finished": finished if status in ("Succeeded", "Failed", "Stopped") else None,
    }


def _pod(
    rng: random.Random, template: PodRow, job: JobRow, replica: int, created: datetime.datetime
) -> PodRow:
    """The row of ``job``'s worker ``replica``, started 30 s after the job's creation."""
    return {
        **template,
        "pod_id": str(uuid.UUID(int=rng.getrandbits(128))),
        "name": f"{job['name']}-worker-{replica}",
        "namespace": job["namespace"],
        "job_id": job["job_id"],
        "version": "1",
        "host_ip": f"10.0.{rng.randrange(250)}.{rng.randrange(250)}",
        "gmt_created": created,
        "gmt_started": created + datetime.timedelta(seconds=30),
    }


def _event(
    rng: random.Random, template: EventRow, pod: PodRow, index: int, created: datetime.datetime
) -> EventRow:
    """The row of one Event about ``pod`` (of the ``index``-th job, created at ``created``)."""
    reason = rng.choice(REASONS)
    return {
        **template,
        "event_id": str(uuid.UUID(int=rng.getrandbits(128))),
        "name": f"{pod['name']}.{index:x}",
        "obj_namespace": pod["namespace"],
        "obj_name": pod["name"],
        "obj_uid": pod["pod_id"],
        "job_id": pod["job_id"],
        "reason": reason,
        "type": "Warning" if reason in ("BackOff", "OOMKilling") else "Normal",
        "first_timestamp": created + datetime.timedelta(seconds=40),
        "last_timestamp": created + datetime.timedelta(seconds=rng.randrange(40, 4000)),
        "gmt_created": created,
    }


def archive(
    jobs: int, pods_per_job: int, seed: int = 7, namespace: str | None = None, events: bool = True
) -> Iterator[tuple[type[Stamped], Row]]:
    """Rows of ``jobs`` jobs, each with ``pods_per_job`` pods and (``events``) one Event
    per pod; in 60 namespaces, or all in ``namespace``."""
    rng = random.Random(seed)
    job_template, pod_template, event_template = _templates()
    for index in range(jobs):
        created = START + datetime.timedelta(seconds=rng.randrange(365 * 86400))
        job = _job(rng, job_template, index, created, namespace)
        yield Job, job
        for replica in range(pods_per_job):
            pod = _pod(rng, pod_template, job, replica, created)
            yield Pod, pod
            # Drawn when not kept too: the rows after it are the same with Events or without.
            event = _event(rng, event_template, pod, index, created)
            if events:
                yield Event, event


async def fill(
    jobs: int,
    pods_per_job: int,
    store: Store | None = None,
    namespace: str | None = None,
    events: bool = True,
) -> None:
    """Write the archive (``archive``'s) through the store, ``CHUNK`` rows per statement."""
    writer = store or Store()
    pending: dict[type[Stamped], list[Row]] = {Job: [], Pod: [], Event: []}
    for model, row in archive(jobs, pods_per_job, namespace=namespace, events=events):
        rows = pending[model]
        rows.append(row)
        if len(rows) >= CHUNK:
            await writer.upsert(model, rows)
            rows.clear()
    for model, rows in pending.items():
        await writer.upsert(model, rows)
