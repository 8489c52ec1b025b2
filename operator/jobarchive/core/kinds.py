"""The registry of tracked training-job kinds.

A kind is identified by its API group and kind name, never by the kind alone:
``TFJob`` exists both in Kubeflow's ``kubeflow.org`` and KubeDL's
``training.kubedl.io``. The version is only what the operator watches; an
ownerReference naming another served version of the same group and kind still
links a pod to its job.

Each kind names the strategy that reads it (``convert.strategies``): the Kubeflow
v1 shape (replica specs in a map under one spec key, conditions in
``status.conditions``) is one; Trainer v2's TrainJob, KubeRay's RayJob and
Volcano's Job have their own. More kinds of the Kubeflow v1 shape can be added
through configuration (``JOBARCHIVE_EXTRA_KINDS``) without code.
"""

import dataclasses
import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from jobarchive.core.untrusted import controller_of


@dataclasses.dataclass(frozen=True)
class JobKind:
    """One tracked job kind and what the converters need to read it."""

    group: str
    version: str
    plural: str
    kind: str
    replica_specs_key: str = ""
    main_container: str = ""
    strategy: str = "kubeflow"

    @property
    def api_version(self) -> str:
        """The ``group/version`` string as Kubernetes writes it in apiVersion."""
        return f"{self.group}/{self.version}"


KUBEFLOW, KUBEDL = ("kubeflow.org", "v1"), ("training.kubedl.io", "v1alpha1")
BUILTIN_KINDS: tuple[JobKind, ...] = (
    JobKind(*KUBEFLOW, "tfjobs", "TFJob", "tfReplicaSpecs", "tensorflow"),
    JobKind(*KUBEFLOW, "pytorchjobs", "PyTorchJob", "pytorchReplicaSpecs", "pytorch"),
    JobKind(*KUBEFLOW, "xgboostjobs", "XGBoostJob", "xgbReplicaSpecs", "xgboost"),
    JobKind(*KUBEFLOW, "paddlejobs", "PaddleJob", "paddleReplicaSpecs", "paddle"),
    JobKind(*KUBEFLOW, "jaxjobs", "JAXJob", "jaxReplicaSpecs", "jax"),
    JobKind("kubeflow.org", "v2beta1", "mpijobs", "MPIJob", "mpiReplicaSpecs", "mpi"),
    JobKind(*KUBEDL, "tfjobs", "TFJob", "tfReplicaSpecs", "tensorflow"),
    JobKind(*KUBEDL, "pytorchjobs", "PyTorchJob", "pytorchReplicaSpecs", "pytorch"),
    JobKind(*KUBEDL, "xgboostjobs", "XGBoostJob", "xgbReplicaSpecs", "xgboostjob"),
    JobKind(*KUBEDL, "xdljobs", "XDLJob", "xdlReplicaSpecs", "xdl"),
    JobKind(*KUBEDL, "marsjobs", "MarsJob", "marsReplicaSpecs", "mars"),
    JobKind(*KUBEDL, "elasticdljobs", "ElasticDLJob", "elasticdlReplicaSpecs", "elasticdl"),
    JobKind(*KUBEDL, "mpijobs", "MPIJob", "mpiReplicaSpecs", "mpi"),
    JobKind("trainer.kubeflow.org", "v1alpha1", "trainjobs", "TrainJob", "", "node", "trainjob"),
    JobKind("ray.io", "v1", "rayjobs", "RayJob", strategy="rayjob"),
    JobKind("batch.volcano.sh", "v1alpha1", "jobs", "Job", strategy="volcano"),
)


# Objects between a training job and its pods: a TrainJob's JobSet and the JobSet's
# batch Jobs, a RayJob's RayClusters (one per retry) and its submitter Job, an MPIJob's
# launcher Job. They are watched only to learn, by uid, which job owns them.
INTERMEDIATE_KINDS: tuple[JobKind, ...] = (
    JobKind("jobset.x-k8s.io", "v1alpha2", "jobsets", "JobSet"),
    JobKind("batch", "v1", "jobs", "Job", strategy="batch"),
    JobKind("ray.io", "v1", "rayclusters", "RayCluster"),
)
# A plain batch Job recorded as a training job of its own (opted in by a label selector).
BATCH_JOB = INTERMEDIATE_KINDS[1]


def is_intermediate(api_version: object, kind: object) -> bool:
    """Whether an apiVersion/kind names an intermediate kind, whatever its version."""
    return _INTERMEDIATES.find(api_version, kind) is not None


# Kueue's Workload (decision 43), watched in the version the API server prefers: v1beta2
# where served (Kueue 0.16 and later), else v1beta1; counted at start in this order.
KUEUE_GROUP = "kueue.x-k8s.io"
WORKLOAD = "Workload"
WORKLOADS = "workloads"
WORKLOAD_VERSIONS = ("v1beta2", "v1beta1")
# Kueue's ClusterQueue (decision 44): cluster-scoped, its quotas recorded over time.
CLUSTER_QUEUES = "clusterqueues"


def is_workload(api_version: object, kind: object) -> bool:
    """Whether an apiVersion/kind names Kueue's Workload, whatever its version."""
    group = api_version.rpartition("/")[0] if isinstance(api_version, str) else None
    return group == KUEUE_GROUP and kind == WORKLOAD


# What JOBARCHIVE_EXTRA_KINDS may (and must) give: kinds of the Kubeflow v1 shape.
_EXTRA_KIND_FIELDS = ("group", "version", "plural", "kind", "replica_specs_key", "main_container")


def parse_extra_kinds(text: str) -> tuple[JobKind, ...]:
    """Parse ``JOBARCHIVE_EXTRA_KINDS``: a JSON list of objects with JobKind's fields.

    Raises ValueError with a message naming the offending entry and field.
    """
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON ({exc.msg} at position {exc.pos})") from None
    if not isinstance(data, list):
        raise ValueError("must be a JSON list of objects")
    return tuple(_parse_extra_kind(index, entry) for index, entry in enumerate(data))


def _parse_extra_kind(index: int, entry: Any) -> JobKind:
    if not isinstance(entry, dict):
        raise ValueError(f"entry {index} is not a JSON object")
    unknown = set(entry) - set(_EXTRA_KIND_FIELDS)
    if unknown:
        raise ValueError(f"entry {index} has unknown fields: {', '.join(sorted(unknown))}")
    values: dict[str, str] = {}
    for name in _EXTRA_KIND_FIELDS:
        value = entry.get(name)
        if not isinstance(value, str) or not value:
            raise ValueError(f"entry {index} needs a non-empty string {name!r}")
        values[name] = value
    return JobKind(**values)


class KindRegistry:
    """Lookups over the tracked kinds: by (group, kind) and by apiVersion + kind."""

    def __init__(self, kinds: Iterable[JobKind]) -> None:
        self._by_group_kind: dict[tuple[str, str], JobKind] = {}
        for job_kind in kinds:
            key = (job_kind.group, job_kind.kind)
            if key in self._by_group_kind:
                raise ValueError(f"kind {job_kind.kind} of group {job_kind.group} is listed twice")
            self._by_group_kind[key] = job_kind

    def __iter__(self) -> Iterator[JobKind]:
        return iter(self._by_group_kind.values())

    def __len__(self) -> int:
        return len(self._by_group_kind)

    def find(self, api_version: object, kind: object) -> JobKind | None:
        """The tracked kind an apiVersion/kind pair names, whatever its version; else None."""
        if not isinstance(api_version, str) or not isinstance(kind, str):
            return None
        group = api_version.rpartition("/")[0]
        return self._by_group_kind.get((group, kind))

    def find_owner(self, owner_references: object) -> Mapping[str, Any] | None:
        """The controller ownerReference that names a tracked kind, if any."""
        ref = controller_of(owner_references)
        if ref is not None and self.find(ref.get("apiVersion"), ref.get("kind")) is not None:
            return ref
        return None


_INTERMEDIATES = KindRegistry(INTERMEDIATE_KINDS)
