"""A cluster's worth of training jobs of every tracked kind, recorded through
jobarchive's real write path, for the KubeDL compatibility suite.

Each job is shaped as its controller writes it (``testbed.objects``, the fixtures),
in a chosen status, with or without KubeDL's ``kubedl.io/tenancy`` annotation, and
comes with what KubeDL's console must show for it. Pods are shaped as the
training-operator or KubeDL's controller creates them and as the kubelet reports
them. All times are UTC; each job has its own creation time, so KubeDL's
``ORDER BY gmt_created DESC`` has one answer.
"""

import copy
import dataclasses
import datetime
import itertools
import json
import uuid
from collections.abc import Iterator
from typing import Any

from jobarchive.config import DbTls, load
from jobarchive.recording.attribution import Attribution
from jobarchive.recording.recorder import Recorder
from jobarchive.storage import database as db
from jobarchive.storage.models import Job, Pod
from jobarchive.storage.store import Store
from jobarchive.storage.writer import Writer
from testbed import objects as o
from testbed.objects import Body

TENANCY = "kubedl.io/tenancy"
# What the console is asked for: the day before and the day after the jobs were made.
WINDOW = (datetime.datetime(2026, 11, 19), datetime.datetime(2026, 11, 22))
_VERSIONS = itertools.count(300_000)
# KubeDL kinds of the Kubeflow v1 shape: kind -> (spec key, main container).
KUBEDL_KINDS = {
    "TFJob": ("tfReplicaSpecs", "tensorflow"),
    "PyTorchJob": ("pytorchReplicaSpecs", "pytorch"),
    "XGBoostJob": ("xgbReplicaSpecs", "xgboostjob"),
    "XDLJob": ("xdlReplicaSpecs", "xdl"),
    "MarsJob": ("marsReplicaSpecs", "mars"),
    "ElasticDLJob": ("elasticdlReplicaSpecs", "elasticdl"),
    "MPIJob": ("mpiReplicaSpecs", "mpi"),
}


def at(text: str) -> datetime.datetime:
    """An RFC 3339 UTC time as the naive UTC DATETIME the database holds."""
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).replace(tzinfo=None)


def rfc3339(when: datetime.datetime) -> str:
    """A naive UTC time as Kubernetes writes it."""
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def shifted(text: str, seconds: int) -> str:
    """An RFC 3339 time moved by some seconds."""
    return rfc3339(at(text) + datetime.timedelta(seconds=seconds))


def version() -> str:
    """A fresh resourceVersion, newer than every earlier one."""
    return str(next(_VERSIONS))


def later(body: Body, **status: Any) -> Body:
    """The object at its next resourceVersion, with status fields replaced."""
    result = o.with_meta(body, resourceVersion=version())
    result["status"] = {**result.get("status", {}), **status}
    return result


def succeeded(job: Body, when: str) -> Body:
    """A Kubeflow v1 / KubeDL job's next version: Succeeded and completed at ``when``."""
    status = copy.deepcopy(job["status"])
    for earlier in status["conditions"][1:]:
        earlier["status"] = "False"
    status["conditions"].append(o.condition("Succeeded", at=when))
    return later(job, conditions=status["conditions"], completionTime=when)


def pod_succeeded(pod: Body, when: str) -> Body:
    """A running pod's next version: its main container exited 0 at ``when``."""
    container, image = _main_container(pod)
    status = pod["status"]
    index = int(pod["metadata"]["name"].rsplit("-", 1)[1])
    return later(
        pod, **pod_status(container, image, "Succeeded", status["startTime"], index, finished=when)
    )


def _identify(body: Body, name: str, namespace: str, created: str, tenancy: Body | None) -> Body:
    annotations = {TENANCY: json.dumps(tenancy)} if tenancy is not None else {}
    return o.with_meta(
        body,
        name=name,
        namespace=namespace,
        uid=str(uuid.uuid4()),
        resourceVersion=version(),
        creationTimestamp=created,
        annotations=annotations,
    )


def conditions(created: str, *steps: tuple[str, str]) -> list[Body]:
    """A Kubeflow v1 / KubeDL condition list: Created, then (type, time) steps, the
    earlier ones turned False as the controllers do when a later one comes."""
    listed = [o.condition("Created", at=created)]
    for kind, when in steps:
        for earlier in listed[1:]:
            earlier["status"] = "False"
        listed.append(o.condition(kind, at=when))
    return listed


def kubeflow_job(
    example: str,
    name: str,
    namespace: str,
    created: str,
    steps: tuple[tuple[str, str], ...] = (),
    completion: str | None = None,
    tenancy: Body | None = None,
) -> Body:
    """A Kubeflow v1 job (kubeflow.org) from a published example, in a status."""
    body = _identify(o.example(example), name, namespace, created, tenancy)
    body["status"] = o.job_status(*conditions(created, *steps), completion=completion)
    body["status"]["startTime"] = created
    return body


def kubedl_job(
    kind: str,
    name: str,
    created: str,
    steps: tuple[tuple[str, str], ...] = (),
    completion: str | None = None,
    tenancy: Body | None = None,
    namespace: str = "kubedl",
) -> Body:
    """A KubeDL job (training.kubedl.io/v1alpha1) of the Kubeflow v1 shape: the KubeDL
    TFJob fixture's replicas under the kind's spec key and main container."""
    body = copy.deepcopy(o.fixture("kubedl-tfjob.yaml"))
    specs_key, container = KUBEDL_KINDS[kind]
    body["kind"] = kind
    specs = body["spec"].pop("tfReplicaSpecs")
    for spec in specs.values():
        for main in spec["template"]["spec"]["containers"]:
            if main["name"] == "tensorflow":
                main["name"] = container
    body["spec"][specs_key] = specs
    body["metadata"].pop("annotations", None)
    body = _identify(body, name, namespace, created, tenancy)
    body["status"] = o.job_status(*conditions(created, *steps), completion=completion)
    body["status"]["startTime"] = created
    return body


def pod_status(
    container: str,
    image: str,
    phase: str,
    started: str,
    index: int,
    finished: str | None = None,
    exit_code: int = 0,
    reason: str = "Completed",
    message: str | None = None,
) -> Body:
    """A pod's status as the kubelet reports it: Running since ``started``, or
    terminated at ``finished`` with an exit code."""
    state: Body = {"running": {"startedAt": shifted(started, 2)}}
    if finished is not None:
        terminated: Body = {
            "exitCode": exit_code,
            "reason": reason,
            "startedAt": shifted(started, 2),
            "finishedAt": finished,
            "containerID": f"containerd://{uuid.uuid4().hex}",
        }
        if message:
            terminated["message"] = message
        state = {"terminated": terminated}
    return {
        "phase": phase,
        "hostIP": f"10.0.3.{10 + index}",
        "podIP": f"172.20.1.{10 + index}",
        "startTime": started,
        "qosClass": "Burstable",
        "containerStatuses": [
            {
                "name": container,
                "image": image,
                "ready": finished is None,
                "restartCount": 0,
                "state": state,
            }
        ],
    }


def _main_container(pod: Body) -> tuple[str, str]:
    main = pod["spec"]["containers"][0]
    return str(main["name"]), str(main["image"])


def _with_status(pod: Body, phase: str, started: str | None, index: int, **ended: Any) -> Body:
    if phase == "Pending" or started is None:
        pod["status"] = {"phase": "Pending", "qosClass": "Burstable"}
    else:
        container, image = _main_container(pod)
        pod["status"] = pod_status(container, image, phase, started, index, **ended)
    return pod


def kubeflow_pod(
    job: Body,
    replica_type: str,
    index: int,
    phase: str = "Pending",
    started: str | None = None,
    **ended: Any,
) -> Body:
    """A pod the training-operator made for a replica of a Kubeflow v1 job."""
    specs_key = next(key for key in job["spec"] if key.endswith("ReplicaSpecs"))
    pod = o.with_meta(
        o.kubeflow_pod(job, specs_key, replica_type, index),
        uid=str(uuid.uuid4()),
        resourceVersion=version(),
        creationTimestamp=shifted(job["metadata"]["creationTimestamp"], 5),
    )
    return _with_status(pod, phase, started, index, **ended)


def kubedl_pod(
    job: Body,
    replica_type: str,
    index: int,
    phase: str = "Pending",
    started: str | None = None,
    **ended: Any,
) -> Body:
    """A pod KubeDL's controller made for a replica of a KubeDL job: its labels
    (group-name, job-name, replica-type lowercased, replica-index) and its controller
    ownerReference, which is how KubeDL's persist controller links it."""
    meta = job["metadata"]
    specs_key = next(key for key in job["spec"] if key.endswith("ReplicaSpecs"))
    template = copy.deepcopy(job["spec"][specs_key][replica_type]["template"])
    pod: Body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{meta['name']}-{replica_type.lower()}-{index}",
            "namespace": meta["namespace"],
            "uid": str(uuid.uuid4()),
            "resourceVersion": version(),
            "creationTimestamp": shifted(meta["creationTimestamp"], 5),
            "labels": {
                "group-name": "training.kubedl.io",
                "job-name": meta["name"],
                "replica-type": replica_type.lower(),
                "replica-index": str(index),
            },
            "ownerReferences": [o.owner_ref(job)],
        },
        "spec": template["spec"],
    }
    return _with_status(pod, phase, started, index, **ended)


@dataclasses.dataclass
class Planned:
    """A job as its controller last wrote it, its pods, and what KubeDL's console must
    show for it: its status, owner, region, and when it finished (a gone job finished
    when jobarchive saw it deleted, so ``finished`` is None there)."""

    body: Body
    status: str
    owner: str = ""
    region: str | None = None
    finished: datetime.datetime | None = None
    gone: bool = False
    pods: list[Body] = dataclasses.field(default_factory=list)
    # Batch Jobs between the job and its pods, seen before the pods (as on a watch).
    batch_jobs: list[Body] = dataclasses.field(default_factory=list)

    @property
    def name(self) -> str:
        """metadata.name."""
        return str(self.body["metadata"]["name"])

    @property
    def namespace(self) -> str:
        """metadata.namespace."""
        return str(self.body["metadata"]["namespace"])

    @property
    def uid(self) -> str:
        """metadata.uid: KubeDL's job_id."""
        return str(self.body["metadata"]["uid"])

    @property
    def kind(self) -> str:
        """The object's kind: KubeDL's job_info.kind."""
        return str(self.body["kind"])

    @property
    def created(self) -> datetime.datetime:
        """metadata.creationTimestamp, naive UTC."""
        return at(self.body["metadata"]["creationTimestamp"])


class Estate:
    """The planned jobs, by name (names are unique across namespaces here)."""

    def __init__(self, jobs: list[Planned]) -> None:
        self.jobs = jobs
        self._by_name = {job.name: job for job in jobs}
        if len(self._by_name) != len(jobs):
            raise ValueError("job names must be unique in an estate")

    def __getitem__(self, name: str) -> Planned:
        return self._by_name[name]

    def __iter__(self) -> Iterator[Planned]:
        return iter(self.jobs)

    def __len__(self) -> int:
        return len(self.jobs)


def _kubeflow_jobs() -> list[Planned]:
    mnist = kubeflow_job(
        "tfjob-simple.yaml",
        "tf-mnist",
        "team-a",
        "2026-11-20T08:00:00Z",
        (("Running", "2026-11-20T08:01:00Z"), ("Succeeded", "2026-11-20T08:40:00Z")),
        completion="2026-11-20T08:40:00Z",
        tenancy={"tenant": "search", "user": "alice"},
    )
    bert = kubeflow_job(
        "pytorch-simple.yaml",
        "pt-bert",
        "team-b",
        "2026-11-20T08:10:00Z",
        (("Running", "2026-11-20T08:11:00Z"),),
    )
    bert["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = 11
    xgb = kubeflow_job(
        "xgboostjob.yaml",
        "xgb-iris",
        "team-a",
        "2026-11-20T08:20:00Z",
        (("Running", "2026-11-20T08:21:00Z"), ("Failed", "2026-11-20T08:50:00Z")),
        tenancy={"tenant": "ads"},
    )
    resnet = kubeflow_job(
        "tfjob-simple.yaml",
        "resnet",
        "team-a",
        "2026-11-20T08:30:00Z",
        (("Running", "2026-11-20T08:31:00Z"),),
        tenancy={"tenant": "search", "user": "bob"},
    )
    started = "2026-11-20T08:00:10Z"
    return [
        Planned(
            mnist,
            "Succeeded",
            owner="alice",
            finished=at("2026-11-20T08:40:00Z"),
            pods=[
                kubeflow_pod(
                    mnist, "Worker", i, "Succeeded", started, finished=shifted(started, 2350)
                )
                for i in range(2)
            ],
        ),
        Planned(
            bert,
            "Running",
            pods=[kubeflow_pod(bert, "Master", 0, "Running", "2026-11-20T08:10:30Z")]
            + [
                kubeflow_pod(bert, "Worker", i, "Running", "2026-11-20T08:10:30Z")
                for i in range(11)
            ],
        ),
        Planned(
            xgb,
            "Failed",
            finished=at("2026-11-20T08:50:00Z"),
            pods=[
                kubeflow_pod(
                    xgb,
                    "Master",
                    0,
                    "Failed",
                    "2026-11-20T08:20:30Z",
                    finished="2026-11-20T08:49:50Z",
                    exit_code=137,
                    reason="OOMKilled",
                ),
                kubeflow_pod(
                    xgb,
                    "Worker",
                    0,
                    "Failed",
                    "2026-11-20T08:20:30Z",
                    finished="2026-11-20T08:49:55Z",
                    exit_code=1,
                    reason="Error",
                    message="connection to master lost",
                ),
                kubeflow_pod(
                    xgb,
                    "Worker",
                    1,
                    "Succeeded",
                    "2026-11-20T08:20:30Z",
                    finished="2026-11-20T08:45:00Z",
                ),
            ],
        ),
        Planned(
            resnet,
            "Stopped",
            owner="bob",
            gone=True,
            pods=[kubeflow_pod(resnet, "Worker", 0, "Running", "2026-11-20T08:30:30Z")],
        ),
        Planned(
            kubeflow_job("paddle-simple-gpu.yaml", "paddle-ocr", "team-c", "2026-11-20T08:40:00Z"),
            "Created",
        ),
        Planned(
            kubeflow_job(
                "jaxjob-simple.yaml",
                "jax-lm",
                "team-c",
                "2026-11-20T08:50:00Z",
                (("Running", "2026-11-20T08:52:00Z"),),
                tenancy={"tenant": "search", "user": "bob", "region": "us-east-1"},
            ),
            "Running",
            owner="bob",
            region="us-east-1",
        ),
    ]


def _mpijob() -> Planned:
    """mpi-operator's pi example (MPIJob v2beta1), succeeded, with its launcher pod,
    which a batch Job owns (the link jobarchive follows; its training labels name the
    MPIJob too)."""
    job = o.with_meta(o.fixture("mpijob-v2beta1-pi.yaml"), uid=str(uuid.uuid4()))
    launcher = o.with_meta(o.fixture("mpijob-v2beta1-launcher-pod.yaml"), uid=str(uuid.uuid4()))
    [owner] = launcher["metadata"]["ownerReferences"]
    batch_job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": owner["name"],
            "namespace": job["metadata"]["namespace"],
            "uid": owner["uid"],
            "resourceVersion": version(),
            "ownerReferences": [o.owner_ref(job)],
        },
    }
    return Planned(
        job,
        "Succeeded",
        finished=at("2026-11-20T09:01:10Z"),
        pods=[launcher],
        batch_jobs=[batch_job],
    )


def _kubedl_jobs() -> list[Planned]:
    mnist = o.with_meta(o.fixture("kubedl-tfjob.yaml"), uid=str(uuid.uuid4()))
    running = "2026-11-21T08:00:40Z"
    pods = [kubedl_pod(mnist, "PS", 0, "Running", running)]
    pods += [kubedl_pod(mnist, "Worker", i, "Running", running) for i in range(3)]
    mars = kubedl_job(
        "MarsJob", "kdl-mars", "2026-11-20T09:40:00Z", (("Running", "2026-11-20T09:41:00Z"),)
    )
    # A tenancy annotation that is not JSON counts as none, for KubeDL as for jobarchive.
    mars["metadata"]["annotations"] = {TENANCY: '{"tenant": "search", "user": '}
    return [
        Planned(mnist, "Running", owner="alice", region="cn-hangzhou", pods=pods),
        Planned(
            kubedl_job(
                "PyTorchJob",
                "kdl-pt",
                "2026-11-20T09:10:00Z",
                (("Running", "2026-11-20T09:11:00Z"), ("Succeeded", "2026-11-20T09:40:00Z")),
                completion="2026-11-20T09:40:00Z",
                tenancy={"tenant": "search", "user": "carol"},
            ),
            "Succeeded",
            owner="carol",
            finished=at("2026-11-20T09:40:00Z"),
        ),
        Planned(
            kubedl_job(
                "XGBoostJob",
                "kdl-xgb",
                "2026-11-20T09:20:00Z",
                (("Running", "2026-11-20T09:21:00Z"), ("Failed", "2026-11-20T09:25:00Z")),
                completion="2026-11-20T09:25:00Z",
            ),
            "Failed",
            finished=at("2026-11-20T09:25:00Z"),
        ),
        Planned(
            kubedl_job(
                "XDLJob",
                "kdl-xdl",
                "2026-11-20T09:30:00Z",
                (("Running", "2026-11-20T09:31:00Z"), ("Restarting", "2026-11-20T09:50:00Z")),
            ),
            "Restarting",
        ),
        Planned(mars, "Running"),
        Planned(kubedl_job("ElasticDLJob", "kdl-edl", "2026-11-20T09:50:00Z"), "Created"),
        Planned(
            kubedl_job(
                "MPIJob",
                "kdl-mpi",
                "2026-11-20T10:00:00Z",
                (("Running", "2026-11-20T10:01:00Z"),),
                tenancy={"tenant": "ads", "user": "dave"},
            ),
            "Stopped",
            owner="dave",
            gone=True,
        ),
    ]


def _other_jobs() -> list[Planned]:
    trainjob = _identify(
        o.fixture("trainjob-torch.yaml"), "llama-finetune", "team-llm", "2026-11-20T10:10:00Z", None
    )
    ray = _identify(o.fixture("rayjob.yaml"), "rl-sweep", "team-rl", "2026-11-20T10:20:00Z", None)
    ray["status"]["startTime"] = "2026-11-20T10:20:02Z"
    ray_failed = _identify(
        o.fixture("rayjob.yaml"),
        "rl-sweep-oom",
        "team-rl",
        "2026-11-20T10:30:00Z",
        {"tenant": "rl", "user": "erin"},
    )
    ray_failed["status"].update(
        jobDeploymentStatus="Failed",
        jobStatus="FAILED",
        reason="DeadlineExceeded",
        message="activeDeadlineSeconds exceeded",
        startTime="2026-11-20T10:30:02Z",
        endTime="2026-11-20T10:55:00Z",
    )
    volcano = _identify(
        o.fixture("volcano-job.yaml"), "tf-dist", "team-cv", "2026-11-20T10:40:00Z", None
    )
    volcano["status"]["state"]["lastTransitionTime"] = "2026-11-20T10:40:20Z"
    volcano_done = _identify(
        o.fixture("volcano-job.yaml"), "tf-dist-done", "team-cv", "2026-11-20T10:50:00Z", None
    )
    volcano_done["status"]["state"] = {
        "phase": "Completed",
        "lastTransitionTime": "2026-11-20T11:20:00Z",
    }
    return [
        Planned(trainjob, "Running"),
        Planned(ray, "Running"),
        Planned(ray_failed, "Failed", owner="erin", finished=at("2026-11-20T10:55:00Z")),
        Planned(volcano, "Running"),
        Planned(volcano_done, "Succeeded", finished=at("2026-11-20T11:20:00Z")),
    ]


def build_estate() -> Estate:
    """Jobs of every tracked kind: Kubeflow v1, MPIJob v2beta1, KubeDL's kinds,
    TrainJob, RayJob and Volcano Job; running, succeeded, failed, restarting, created
    and gone; with and without a tenancy annotation."""
    return Estate([*_kubeflow_jobs(), _mpijob(), *_kubedl_jobs(), *_other_jobs()])


class Archive:
    """jobarchive's real write path, Recorder -> Writer -> Store, over the database
    open in Tortoise; ``region`` is the operator's REGION."""

    def __init__(self, region: str | None = None) -> None:
        self.settings = load({"REGION": region} if region else {})
        self.writer = Writer(Store(), flushers=1)
        self.recorder = Recorder(self.settings, Store(), self.writer, Attribution())

    async def __aenter__(self) -> "Archive":
        self.writer.start()
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.writer.stop()

    async def job(self, body: Body, event: str = "ADDED") -> None:
        """A watch event about a job; fails if jobarchive stored no row for it."""
        kind = o.job_kind(self.settings.kinds, body)
        await self.recorder.job(kind, event, body)
        if not await Job.filter(job_id=body["metadata"]["uid"]).exists():
            raise AssertionError(f"jobarchive stored no row for {body['metadata']['name']}")

    async def pod(self, body: Body, event: str = "ADDED") -> None:
        """A watch event about a pod; fails if jobarchive stored no row for it."""
        await self.recorder.pod(event, body)
        if not await Pod.filter(pod_id=body["metadata"]["uid"]).exists():
            raise AssertionError(f"jobarchive stored no row for {body['metadata']['name']}")

    async def deleted(self, body: Body) -> None:
        """The DELETED event of an object: its last state at a newer resourceVersion."""
        gone = o.with_meta(body, resourceVersion=version())
        if body["kind"] == "Pod":
            await self.pod(gone, "DELETED")
        else:
            await self.job(gone, "DELETED")

    async def planned(self, job: Planned) -> None:
        """A planned job and its pods; then, for a gone one, their deletion."""
        await self.job(job.body)
        for batch_job in job.batch_jobs:
            await self.recorder.batch_job("ADDED", batch_job)
        for pod in job.pods:
            await self.pod(pod)
        if job.gone:
            for pod in job.pods:
                await self.deleted(pod)
            await self.deleted(job.body)


async def record_estate(db_url: str, estate: Estate) -> None:
    """Open ``db_url`` as the operator does (creating the schema), record every job of
    the estate through the real write path, and close it."""
    await db.open_database(db_url, encryption=DbTls())
    try:
        async with Archive() as archive:
            for job in estate:
                await archive.planned(job)
    finally:
        await db.close_database()
