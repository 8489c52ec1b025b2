"""Kueue's part of the demo, written as Kueue v0.19 writes it (the shapes of
tests/fixtures/kueue/): two ClusterQueues of A100s, ``research`` and ``nlp-a100``
(whose quota an administrator raises mid-story), and the Workload of each job that
carries Kueue's queue label, moved from state to state as the job's life needs:
pending with the flavor assigner's message, quota reserved and admitted, its pods
ready, preempted by a higher-priority Workload, requeued, admitted again, finished.
Times are relative to now, as the stories' (``controllers.ago``)."""

import collections
import copy
import hashlib
from typing import Any

from demo.controllers import GPU, SPECS_KEYS, Plan, ago
from testbed import objects as o
from testbed.cluster import CLUSTER_QUEUES, EVENTS, WORKLOADS, Cluster
from testbed.objects import Body

FLAVOR = "a100"
# When the demo's ClusterQueues were set up (minutes ago): their quota counts from then.
SET_UP = 120
# ClusterQueue -> its nominal A100s, and nlp-a100's raised quota and when (minutes ago).
NOMINAL = {"research": 8, "nlp-a100": 8}
RAISED = ("nlp-a100", 16, 46)
# Kueue's WorkloadPriorityClasses: what each demo job's Workload is given.
PRIORITIES = {"preemptible": 10, "research": 100}
ADMISSION = "kueue-admission"


def cluster_queue(name: str, gpus: int, written: str) -> Body:
    """A ClusterQueue of ``gpus`` A100s (flavor ``a100``) and CPU and memory, preempting
    lower priorities within itself, its spec last written at ``written``."""
    return {
        "metadata": {
            "name": name,
            "creationTimestamp": ago(SET_UP),
            "managedFields": [
                {
                    "manager": "kubectl-client-side-apply",
                    "operation": "Update",
                    "apiVersion": WORKLOADS.api_version,
                    "time": written,
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:spec": {}},
                }
            ],
        },
        "spec": {
            "namespaceSelector": {},
            "queueingStrategy": "BestEffortFIFO",
            "resourceGroups": [
                {
                    "coveredResources": ["cpu", "memory"],
                    "flavors": [
                        {
                            "name": "default",
                            "resources": [
                                {"name": "cpu", "nominalQuota": "256"},
                                {"name": "memory", "nominalQuota": "2Ti"},
                            ],
                        }
                    ],
                },
                {
                    "coveredResources": [GPU],
                    "flavors": [
                        {"name": FLAVOR, "resources": [{"name": GPU, "nominalQuota": gpus}]}
                    ],
                },
            ],
            "preemption": {"withinClusterQueue": "LowerPriority"},
        },
    }


async def set_up_queues(cluster: Cluster) -> None:
    """The ClusterQueues as set up ``SET_UP`` minutes ago, then nlp-a100's quota raised."""
    for name, gpus in NOMINAL.items():
        await cluster.create(CLUSTER_QUEUES, cluster_queue(name, gpus, ago(SET_UP)))
    name, gpus, raised = RAISED
    changed = cluster_queue(name, gpus, ago(raised))
    managed = changed["metadata"]["managedFields"]
    patch = {"spec": changed["spec"], "metadata": {"managedFields": managed}}
    await cluster.patch(CLUSTER_QUEUES, "", name, patch)


def no_room(more: int) -> str:
    """The flavor assigner's message when the queue's free quota is short."""
    return (
        f"couldn't assign flavors to pod set worker: insufficient unused quota for {GPU} "
        f"in flavor {FLAVOR}, {more} more needed"
    )


def over_capacity(considered: int, request: int, capacity: int) -> str:
    """The flavor assigner's message when the pod sets need more than the queue holds."""
    return (
        f"couldn't assign flavors to pod set worker: insufficient quota for {GPU} in flavor "
        f"{FLAVOR}, previously considered podsets requests ({considered}) + current podset "
        f"request ({request}) > maximum capacity ({capacity})"
    )


def condition(kind: str, status: str, reason: str, message: str, at: str) -> Body:
    """A Workload's condition as Kueue sets it, become so at ``at``."""
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": at,
        "observedGeneration": 1,
    }


class Workload:
    """A job's Workload in the emulated API, written as Kueue writes it: its status
    whole at each step, the time of each write in its managed fields."""

    def __init__(self, cluster: Cluster, job: Body, plan: Plan, priority: str) -> None:
        self.cluster = cluster
        self.job = job
        self.plan = plan
        self.priority = priority
        self.conditions: dict[str, Body] = {}
        self.status: Body = {}
        self.body: Body = {}

    @property
    def uid(self) -> str:
        """The Workload's uid, as the API server gave it."""
        return str(self.body["metadata"]["uid"])

    def pod_sets(self) -> list[Body]:
        """The job's replica types as Kueue's pod sets, each with its template."""
        specs = self.job["spec"][SPECS_KEYS[self.job["kind"]]]
        counts = collections.Counter(kind for kind, _ in self.plan.replicas)
        return [
            {"name": kind.lower(), "count": count, "template": specs[kind]["template"]}
            for kind, count in counts.items()
        ]

    def requests(self) -> list[Body]:
        """What each pod set asks for, all its pods (``status.resourceRequests``)."""
        return [
            {"name": pod_set["name"], "resources": self._usage(pod_set)}
            for pod_set in self.pod_sets()
        ]

    def _usage(self, pod_set: Body) -> Body:
        """The CPU, memory and GPUs of all the pod set's pods."""
        count = pod_set["count"]
        return {
            "cpu": str(int(self.plan.cpu) * count),
            "memory": f"{int(self.plan.memory.removesuffix('Gi')) * count}Gi",
            GPU: str(self.plan.gpus * count),
        }

    async def create(self, at: str) -> None:
        """The Workload as Kueue's job controller creates it for the job at ``at``."""
        meta = self.job["metadata"]
        digest = hashlib.sha256(meta["uid"].encode()).hexdigest()[:5]
        body = {
            "metadata": {
                "name": f"{self.job['kind'].lower()}-{meta['name']}-{digest}",
                "namespace": meta["namespace"],
                "creationTimestamp": at,
                "labels": {"kueue.x-k8s.io/job-uid": meta["uid"]},
                "ownerReferences": [o.owner_ref(self.job)],
                "finalizers": ["kueue.x-k8s.io/resource-in-use"],
                "managedFields": [self._managed("kueue", at, status=False)],
            },
            "spec": {
                "active": True,
                "queueName": self.plan.queue,
                "priority": PRIORITIES[self.priority],
                "priorityClassRef": {
                    "group": "kueue.x-k8s.io",
                    "kind": "WorkloadPriorityClass",
                    "name": self.priority,
                },
                "podSets": self.pod_sets(),
            },
        }
        self.body = await self.cluster.create(WORKLOADS, body)

    def _managed(self, manager: str, at: str, status: bool = True) -> Body:
        entry: Body = {
            "manager": manager,
            "operation": "Apply" if status else "Update",
            "apiVersion": WORKLOADS.api_version,
            "time": at,
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:status": {}} if status else {"f:spec": {}},
        }
        if status:
            entry["subresource"] = "status"
        return entry

    async def _write(self, at: str, **status: Any) -> None:
        """Write the status as it now stands (``status``: fields set, None to remove)."""
        self.status.update(status, conditions=list(self.conditions.values()))
        self.status["resourceRequests"] = self.requests()
        managed = [self.body["metadata"]["managedFields"][0], self._managed(ADMISSION, at)]
        meta = self.body["metadata"]
        patch = {"status": copy.deepcopy(self.status), "metadata": {"managedFields": managed}}
        self.body = await self.cluster.patch(WORKLOADS, meta["namespace"], meta["name"], patch)

    def _set(self, kind: str, status: str, reason: str, message: str, at: str) -> None:
        self.conditions[kind] = condition(kind, status, reason, message, at)

    async def pending(self, at: str, message: str) -> None:
        """Waiting for quota: the flavor assigner's ``message``, and Kueue's Event."""
        self._set("QuotaReserved", "False", "Pending", message, at)
        await self._write(at)
        event = o.event(self.body, "Pending", message, "Warning", first=at, component=ADMISSION)
        await self.cluster.create(EVENTS, event)

    async def admitted(self, at: str) -> None:
        """Quota reserved in its ClusterQueue and admitted at ``at`` (again, after an
        eviction: the eviction's conditions reset with "Previously: ")."""
        queue = self.plan.queue
        reserved = f"Quota reserved in ClusterQueue {queue}"
        self._set("QuotaReserved", "True", "QuotaReserved", reserved, at)
        self._set("Admitted", "True", "Admitted", "The workload is admitted", at)
        self._set("PodsReady", "False", "WaitForStart", "Not all pods are ready or succeeded", at)
        for kind in ("Evicted", "Preempted"):
            if kind in self.conditions:
                previous = self.conditions[kind]["message"]
                self._set(kind, "False", "QuotaReserved", f"Previously: {previous}", at)
        assignments = [
            {
                "name": pod_set["name"],
                "count": pod_set["count"],
                "flavors": {"cpu": "default", "memory": "default", GPU: FLAVOR},
                "resourceUsage": self._usage(pod_set),
            }
            for pod_set in self.pod_sets()
        ]
        await self._write(at, admission={"clusterQueue": queue, "podSetAssignments": assignments})

    async def ready(self, at: str) -> None:
        """Every pod of the attempt ready at ``at``."""
        message = "All pods reached readiness and the workload is running"
        self._set("PodsReady", "True", "Started", message, at)
        await self._write(at)

    async def preempted(self, at: str, preemptor: "Workload") -> None:
        """Preempted at ``at`` for ``preemptor``, of the same ClusterQueue, in a message
        that names the preemptor's uids as Kueue's does, and Kueue's Event."""
        queue = self.plan.queue
        message = (
            f"Preempted to accommodate a workload (UID: {preemptor.uid}, JobUID: "
            f"{preemptor.job['metadata']['uid']}) due to prioritization in the ClusterQueue; "
            f"preemptor path: /{queue}; preemptee path: /{queue}"
        )
        self._set("Evicted", "True", "Preempted", message, at)
        self._set("Preempted", "True", "InClusterQueue", message, at)
        # Kueue writes no underlying cause for a preemption (its reason is Preempted's).
        evictions = [{"reason": "Preempted", "underlyingCause": "", "count": 1}]
        await self._write(at, schedulingStats={"evictions": evictions})
        event = o.event(self.body, "Preempted", message, first=at, component=ADMISSION)
        await self.cluster.create(EVENTS, event)

    async def requeued(self, at: str) -> None:
        """Its pods stopped, its quota released and it queued again at ``at``."""
        message = self.conditions["Evicted"]["message"]
        self._set("QuotaReserved", "False", "Pending", message, at)
        self._set("Admitted", "False", "NoReservation", "The workload has no reservation", at)
        self._set("PodsReady", "False", "WaitForStart", "Not all pods are ready or succeeded", at)
        self._set("Requeued", "True", "Preempted", message, at)
        await self._write(at, admission=None)

    async def finished(self, at: str, succeeded: bool, message: str) -> None:
        """Its job finished at ``at``: succeeded, or failed with ``message``."""
        reason = "Succeeded" if succeeded else "Failed"
        self._set("Finished", "True", reason, message, at)
        await self._write(at)

    async def delete(self) -> None:
        """Deleted with its job (the garbage collector's, by its owner reference), gone
        once Kueue releases it (its finalizer removed)."""
        meta = self.body["metadata"]
        await self.cluster.delete(WORKLOADS, meta["namespace"], meta["name"])
        released: Body = {"metadata": {"finalizers": []}}
        await self.cluster.patch(WORKLOADS, meta["namespace"], meta["name"], released)
