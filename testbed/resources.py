"""The resources the emulated API serves, and where each one's objects live in it:
the built-in ones, Kueue's, the reviews, and every job kind's."""

import dataclasses

from jobarchive.core.kinds import BUILTIN_KINDS, INTERMEDIATE_KINDS, JobKind


@dataclasses.dataclass(frozen=True)
class Resource:
    """A served resource: where its objects live in the API."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True

    def path(self, namespace: str | None, name: str | None = None) -> str:
        base = f"/api/{self.version}" if not self.group else f"/apis/{self.group}/{self.version}"
        if self.namespaced and namespace is not None:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        return f"{base}/{name}" if name else base

    @property
    def key(self) -> str:
        return (
            f"{self.group}/{self.version}/{self.plural}"
            if self.group
            else f"{self.version}/{self.plural}"
        )

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


PODS = Resource("", "v1", "pods", "Pod")
EVENTS = Resource("", "v1", "events", "Event")
NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
CRDS = Resource(
    "apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False
)
BATCH_JOBS = Resource("batch", "v1", "jobs", "Job")
PEERINGS = Resource("kopf.dev", "v1", "clusterkopfpeerings", "ClusterKopfPeering", False)
TOKEN_REVIEWS = Resource("authentication.k8s.io", "v1", "tokenreviews", "TokenReview", False)
ACCESS_REVIEWS = Resource(
    "authorization.k8s.io", "v1", "subjectaccessreviews", "SubjectAccessReview", False
)
# The API's authorization POSTs these, and an API server stores none of them: they
# change nothing in the cluster.
REVIEWS = (TOKEN_REVIEWS, ACCESS_REVIEWS)
# Kueue's Workload in the version Kueue 0.16 and later serve (and 0.15 and earlier's):
# served only where a test installs Kueue (``Cluster.serve``), not by default.
WORKLOADS = Resource("kueue.x-k8s.io", "v1beta2", "workloads", "Workload")
WORKLOADS_V1BETA1 = Resource("kueue.x-k8s.io", "v1beta1", "workloads", "Workload")
# Kueue's ClusterQueue: cluster-scoped, served where a test installs Kueue.
CLUSTER_QUEUES = Resource(
    "kueue.x-k8s.io", "v1beta2", "clusterqueues", "ClusterQueue", namespaced=False
)


def job_resource(kind: JobKind) -> Resource:
    return Resource(kind.group, kind.version, kind.plural, kind.kind)


def resource_of(group: str, kind: str) -> Resource:
    for job_kind in (*BUILTIN_KINDS, *INTERMEDIATE_KINDS):
        if job_kind.group == group and job_kind.kind == kind:
            return job_resource(job_kind)
    raise KeyError((group, kind))
