"""Which containers of a pod failed, read from its status as the kubelet writes it.

A container instance is named by its restart count. The kubelet reports the newest
instance in ``state`` and the one before in ``lastState``, with ``restartCount``
the number of the newest: so a terminated ``state`` is instance ``restartCount``,
and a terminated ``lastState`` is instance ``restartCount - 1`` while a newer one
runs or has ended, but instance ``restartCount`` itself while the container waits
to be restarted (``CrashLoopBackOff``: the dead instance is still the newest). Its
log is then the previous one (``previous=true``), whichever of the two it is.

A failure is a terminated instance with a non-zero exit code, or one the kernel
killed for memory (``OOMKilled``). Init containers count, and so do sidecars
(init containers with ``restartPolicy: Always``), but not an instance the kubelet
itself stopped: a sidecar stopped when its pod ended, or any container stopped
because its pod is being deleted, exits with SIGTERM's 143 or SIGKILL's 137, which
says nothing about the program. Pure functions of the pod body: no I/O.
"""

import dataclasses
import datetime
from collections.abc import Mapping
from typing import Any

from jobarchive.core.times import timestamp
from jobarchive.core.untrusted import integer, mapping, sequence, text
from jobarchive.infra.logs import shown

OOM_KILLED = "OOMKilled"
# 128 + SIGKILL, 128 + SIGTERM: how a container the kubelet stopped exits.
STOPPED_BY_KUBELET = frozenset({137, 143})
TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})
CONTAINER = "container"
INIT = "init"
SIDECAR = "sidecar"


@dataclasses.dataclass(frozen=True)
class Failure:
    """One terminated container instance whose log tail is wanted."""

    namespace: str
    pod: str
    pod_uid: str
    container: str
    # "container", "init" or "sidecar".
    container_type: str
    restart_count: int
    exit_code: int | None
    reason: str | None
    finished_at: datetime.datetime | None
    # Read with previous=true: the instance is in lastState, not state.
    previous: bool

    @property
    def key(self) -> tuple[str, str, int]:
        """What names the instance in the table: pod uid, container, restart count."""
        return (self.pod_uid, self.container, self.restart_count)

    def describe(self) -> str:
        """``namespace/pod container c (restart n)``, for a log line (each cut)."""
        where = f"{shown(self.namespace)}/{shown(self.pod)}"
        return f"{where} container {shown(self.container)} (restart {self.restart_count})"


def is_failure(terminated: Mapping[str, Any], succeeded_too: bool) -> bool:
    """Whether a terminated state is one whose log is wanted."""
    exit_code = integer(terminated.get("exitCode"))
    if terminated.get("reason") == OOM_KILLED:
        return True
    if exit_code is None:
        return False
    return exit_code != 0 or succeeded_too


def stopped_by_kubelet(
    terminated: Mapping[str, Any], container_type: str, pod: Mapping[str, Any]
) -> bool:
    """Whether the kubelet stopped the instance: its pod was being deleted, or it is a
    sidecar stopped because its pod ended; the exit code says so, and no OOM kill."""
    if terminated.get("reason") == OOM_KILLED:
        return False
    if integer(terminated.get("exitCode")) not in STOPPED_BY_KUBELET:
        return False
    if mapping(pod.get("metadata")).get("deletionTimestamp"):
        return True
    phase = mapping(pod.get("status")).get("phase")
    return container_type == SIDECAR and phase in TERMINAL_PHASES


def _sidecars(pod: Mapping[str, Any]) -> set[str]:
    """The names of the pod's init containers that are sidecars."""
    spec = mapping(pod.get("spec"))
    return {
        str(container.get("name"))
        for container in map(mapping, sequence(spec.get("initContainers")))
        if container.get("restartPolicy") == "Always"
    }


def failures(pod: Mapping[str, Any], succeeded_too: bool = False) -> list[Failure]:
    """Every failed container instance a pod's status shows: in ``state`` and in
    ``lastState``, of its containers, init containers and sidecars; with
    ``succeeded_too``, instances that exited 0 as well. Malformed parts are skipped."""
    meta = mapping(pod.get("metadata"))
    status = mapping(pod.get("status"))
    namespace, name, uid = ((text(meta.get(k)) or None) for k in ("namespace", "name", "uid"))
    if name is None or uid is None:
        return []
    sidecars = _sidecars(pod)
    kinds = (("initContainerStatuses", INIT), ("containerStatuses", CONTAINER))
    found: list[Failure] = []
    for field, kind in kinds:
        for container in map(mapping, sequence(status.get(field))):
            container_name = text(container.get("name")) or None
            if container_name is None:
                continue
            container_type = SIDECAR if kind == INIT and container_name in sidecars else kind
            restarts = max(integer(container.get("restartCount")) or 0, 0)
            state = mapping(container.get("state"))
            current = mapping(state.get("terminated"))
            last = mapping(mapping(container.get("lastState")).get("terminated"))
            # While the container waits to be restarted, lastState is the newest instance.
            last_number = restarts if "waiting" in state else restarts - 1
            instances = ((current, restarts, False), (last, last_number, True))
            for terminated, number, previous in instances:
                if not terminated or number < 0:
                    continue
                if not is_failure(terminated, succeeded_too):
                    continue
                if stopped_by_kubelet(terminated, container_type, pod):
                    continue
                found.append(
                    Failure(
                        namespace=namespace or "default",
                        pod=name,
                        pod_uid=uid,
                        container=container_name,
                        container_type=container_type,
                        restart_count=number,
                        exit_code=integer(terminated.get("exitCode")),
                        reason=text(terminated.get("reason")) or None,
                        finished_at=timestamp(terminated.get("finishedAt")),
                        previous=previous,
                    )
                )
    return found
