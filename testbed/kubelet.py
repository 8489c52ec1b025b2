"""Pods and Events whole, as a real cluster serves them: what the controller wrote
(spec, labels, owner, the defaults the API server fills in), what the kubelet's status
manager wrote (conditions, container statuses with image and container ids), and
each writer's ``managedFields``; sizes spread as a shared cluster's are, from a few kB
(a worker with a handful of variables) to tens of kB (a launcher carrying hundreds).

``testbed.objects`` builds the parts a converter reads; this module adds the rest, the
bytes that cost memory and parse time but that no row keeps. The spread is seeded by
the pod's index, so a cluster filled twice holds the same bytes.
"""

import copy
import hashlib
import json
import random
from typing import Any

from testbed.objects import Body

# (share of the pods, fewest, most environment variables of the main container): most
# workers carry a few dozen (the training operator's own and the user's), some a
# hundred, a few hundreds (a configuration passed as variables).
ENV_SPREAD = ((0.65, 2, 24), (0.30, 30, 100), (0.05, 150, 300))
STARTED = "2026-11-20T10:00:05Z"
RUNNING = "2026-11-20T10:00:07Z"


def _digest(*parts: object) -> str:
    return hashlib.sha256(repr(parts).encode()).hexdigest()


def _fields(keys: list[str]) -> Body:
    """A fieldsV1 set: each key an (empty) member, as the server writes leaves."""
    return {key: {} for key in keys}


def _env(rng: random.Random) -> list[Body]:
    (_, fewest, most), *_ = rng.choices(ENV_SPREAD, weights=[part for part, _, _ in ENV_SPREAD])
    return [
        {
            "name": f"TRAINING_OPTION_{index:03d}",
            "value": _digest(rng.random())[: rng.randint(4, 64)],
        }
        for index in range(rng.randint(fewest, most))
    ]


def _controller_fields(container: Body) -> Body:
    """What the training operator's create owns: labels, owner, the container's fields."""
    env: Body = {
        f'k:{{"name":"{var["name"]}"}}': {".": {}, "f:name": {}, "f:value": {}}
        for var in container.get("env", [])
    }
    return {
        "f:metadata": {
            "f:labels": {
                ".": {},
                **_fields(
                    [
                        f"f:{key}"
                        for key in (
                            "training.kubeflow.org/job-name",
                            "training.kubeflow.org/operator-name",
                            "training.kubeflow.org/replica-index",
                            "training.kubeflow.org/replica-type",
                        )
                    ]
                ),
            },
            "f:ownerReferences": {".": {}, 'k:{"uid":"owner"}': {}},
        },
        "f:spec": {
            "f:containers": {
                f'k:{{"name":"{container["name"]}"}}': {
                    ".": {},
                    "f:command": {},
                    "f:env": {".": {}, **env},
                    "f:image": {},
                    "f:imagePullPolicy": {},
                    "f:name": {},
                    "f:ports": {".": {}, 'k:{"containerPort":23456,"protocol":"TCP"}': {}},
                    "f:resources": {".": {}, "f:limits": {}, "f:requests": {}},
                    "f:terminationMessagePath": {},
                    "f:terminationMessagePolicy": {},
                }
            },
            **_fields(
                [
                    "f:dnsPolicy",
                    "f:enableServiceLinks",
                    "f:restartPolicy",
                    "f:schedulerName",
                    "f:securityContext",
                    "f:terminationGracePeriodSeconds",
                ]
            ),
        },
    }


def _kubelet_fields(pod_ip: str) -> Body:
    """What the kubelet's status manager owns: the status, condition by condition."""
    conditions: Body = {
        f'k:{{"type":"{kind}"}}': {
            ".": {},
            "f:lastProbeTime": {},
            "f:lastTransitionTime": {},
            "f:status": {},
            "f:type": {},
        }
        for kind in ("ContainersReady", "Initialized", "PodReadyToStartContainers", "Ready")
    }
    return {
        "f:status": {
            "f:conditions": conditions,
            "f:containerStatuses": {},
            "f:hostIP": {},
            "f:hostIPs": {},
            "f:phase": {},
            "f:podIP": {},
            "f:podIPs": {".": {}, 'k:{"ip":"' + pod_ip + '"}': {".": {}, "f:ip": {}}},
            "f:startTime": {},
        }
    }


def _managed(manager: str, operation: str, fields: Body, subresource: str = "") -> Body:
    entry = {
        "manager": manager,
        "operation": operation,
        "apiVersion": "v1",
        "time": STARTED,
        "fieldsType": "FieldsV1",
        "fieldsV1": fields,
    }
    if subresource:
        entry["subresource"] = subresource
    return entry


def _condition(kind: str) -> Body:
    return {"type": kind, "status": "True", "lastProbeTime": None, "lastTransitionTime": STARTED}


def _status(pod: Body, container: Body) -> Body:
    """The status a kubelet reports for a running pod: every condition, the container's
    image and container ids, its start, its mounts."""
    status = copy.deepcopy(pod.get("status") or {})
    name, image = container["name"], container["image"]
    status.update(
        conditions=[
            _condition(kind)
            for kind in (
                "PodReadyToStartContainers",
                "Initialized",
                "Ready",
                "ContainersReady",
                "PodScheduled",
            )
        ],
        hostIPs=[{"ip": status.get("hostIP", "10.0.0.1")}],
        podIPs=[{"ip": status.get("podIP", "172.16.0.9")}],
        qosClass="Burstable",
        containerStatuses=[
            {
                "name": name,
                "state": {"running": {"startedAt": RUNNING}},
                "lastState": {},
                "ready": True,
                "restartCount": 0,
                "image": image,
                "imageID": f"{image.split(':')[0]}@sha256:{_digest(image)}",
                "containerID": f"containerd://{_digest(pod['metadata'].get('uid'), name)}",
                "started": True,
                "volumeMounts": [
                    {"name": "dshm", "mountPath": "/dev/shm"},
                    {
                        "name": "kube-api-access",
                        "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                        "readOnly": True,
                        "recursiveReadOnly": "Disabled",
                    },
                ],
            }
        ],
    )
    return status


def _volumes() -> list[Body]:
    """A training pod's volumes: its shared memory, and the service account's token
    as the API server projects it."""
    return [
        {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}},
        {
            "name": "kube-api-access",
            "projected": {
                "defaultMode": 420,
                "sources": [
                    {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                    {
                        "configMap": {
                            "name": "kube-root-ca.crt",
                            "items": [{"key": "ca.crt", "path": "ca.crt"}],
                        }
                    },
                    {
                        "downwardAPI": {
                            "items": [
                                {
                                    "path": "namespace",
                                    "fieldRef": {
                                        "apiVersion": "v1",
                                        "fieldPath": "metadata.namespace",
                                    },
                                }
                            ]
                        }
                    },
                ],
            },
        },
    ]


def _tolerations() -> list[Body]:
    """The API server's default tolerations, and the GPU nodes' taint tolerated."""
    return [
        {
            "key": "node.kubernetes.io/not-ready",
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": 300,
        },
        {
            "key": "node.kubernetes.io/unreachable",
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": 300,
        },
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
    ]


def _defaults(spec: Body, container: Body, rng: random.Random) -> None:
    """What the API server and the training operator fill into a pod's spec."""
    container.setdefault("env", []).extend(_env(rng))
    container.update(
        ports=[{"name": "pytorchjob-port", "containerPort": 23456, "protocol": "TCP"}],
        terminationMessagePath="/dev/termination-log",
        terminationMessagePolicy="File",
        volumeMounts=[
            {"name": "dshm", "mountPath": "/dev/shm"},
            {
                "name": "kube-api-access",
                "readOnly": True,
                "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
            },
        ],
    )
    spec.update(
        volumes=_volumes(),
        dnsPolicy="ClusterFirst",
        enableServiceLinks=True,
        preemptionPolicy="PreemptLowerPriority",
        priority=0,
        schedulerName="default-scheduler",
        securityContext={},
        serviceAccount="default",
        serviceAccountName="default",
        terminationGracePeriodSeconds=30,
        tolerations=_tolerations(),
    )


def pod(running: Body, index: int) -> Body:
    """A copy of a running pod (``bench.data.pod_object``) as the API server serves it,
    with the controller's defaults, the kubelet's whole status and both writers'
    managedFields; its variables spread by ``index``."""
    body = copy.deepcopy(running)
    rng = random.Random(index)
    spec, meta = body["spec"], body["metadata"]
    container = spec["containers"][0]
    _defaults(spec, container, rng)
    body["status"] = _status(body, container)
    meta.setdefault("annotations", {})["kubectl.kubernetes.io/default-container"] = container[
        "name"
    ]
    meta["generateName"] = meta["name"].rsplit("-", 1)[0] + "-"
    meta["managedFields"] = [
        _managed("training-operator", "Update", _controller_fields(container)),
        _managed("kubelet", "Update", _kubelet_fields(body["status"]["podIP"]), "status"),
    ]
    return body


def event(recorded: Body, index: int) -> Body:
    """A copy of an Event (``bench.data.event_object``) as the API server serves it:
    the kubelet's managedFields, its source and instance; one in ten a Warning with
    the long message a failed mount or pull writes."""
    body = copy.deepcopy(recorded)
    host = f"gpu-node-{index % 64}"
    keys = [
        "f:count",
        "f:firstTimestamp",
        "f:involvedObject",
        "f:lastTimestamp",
        "f:message",
        "f:reason",
        "f:reportingComponent",
        "f:reportingInstance",
        "f:source",
        "f:type",
    ]
    body["metadata"]["managedFields"] = [_managed("kubelet", "Update", _fields(keys))]
    body.update(
        source={"component": "kubelet", "host": host},
        reportingInstance=host,
        eventTime=None,
        action="",
    )
    body["involvedObject"]["fieldPath"] = "spec.containers{pytorch}"
    if index % 10 == 0:
        volumes = ", ".join(f"volume-{n}" for n in range(40))
        body.update(
            type="Warning",
            reason="FailedMount",
            message=f"Unable to attach or mount volumes: unmounted volumes=[{volumes}], "
            f"unattached volumes=[{volumes}]: timed out waiting for the condition",
        )
    return body


def size_note(bodies: list[Any]) -> str:
    """The bodies' JSON sizes, for a benchmark's header: smallest, median, largest, in kB."""
    sizes = sorted(len(json.dumps(b)) for b in bodies)
    return (
        f"{sizes[0] / 1000:.1f} / {sizes[len(sizes) // 2] / 1000:.1f} / {sizes[-1] / 1000:.1f} kB"
    )
