"""The pods/log subresource, served as an API server serves it, for the log tails.

An API server answers ``GET /api/v1/namespaces/NS/pods/NAME/log`` from the node's
container logs: ``container`` names the container (needed when a pod has several),
``previous=true`` the instance in the container's ``lastState`` (400 "previous
terminated container ... not found" when there is none), ``tailLines`` keeps the
last lines, and ``limitBytes`` then stops after so many bytes of them (the first
bytes: a long tail loses its end). A pod that does not exist is 404; a container it
does not have is 400. The answer is ``text/plain``.

``Logs`` keeps what each container instance printed, keyed by pod, container and
restart count, and answers from the pod as the emulator stores it (its status says
which instance is current, as the kubelet's does). It counts the requests, the ones
at once and the most at once, and can hold every answer for a while (``delay``), as
a busy node does, or until told (``pause``), so a test can see that a limit holds.
"""

import asyncio
import dataclasses
from typing import Any

import kmock
from kmock import Response  # type: ignore[attr-defined]  # exported, not in __all__

from testbed.cluster import PODS, Cluster
from testbed.objects import Body


@dataclasses.dataclass(frozen=True)
class LogRequest:
    """One read of a log, as the server got it."""

    namespace: str
    pod: str
    params: dict[str, str]


def _status(code: int, reason: str, message: str) -> Response:
    body = {
        "apiVersion": "v1",
        "kind": "Status",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    return Response(status=code, payload=body)


def select(data: bytes, params: dict[str, str]) -> bytes:
    """``tailLines``, then ``limitBytes``, as the kubelet applies them."""
    lines = params.get("tailLines")
    if lines is not None:
        count = int(lines)
        ending = b"\n" if data.endswith(b"\n") else b""
        parts = data[: len(data) - len(ending)].split(b"\n") if data else []
        data = b"\n".join(parts[-count:]) + ending if count and parts else b""
    limit = params.get("limitBytes")
    if limit is not None:
        data = data[: int(limit)]
    return data


def instance(status: Body, previous: bool) -> int | str:
    """The restart count of the instance a read is of, or the message refusing it."""
    name = status.get("name")
    restarts = int(status.get("restartCount") or 0)
    state = status.get("state") or {}
    last = (status.get("lastState") or {}).get("terminated")
    if previous:
        if not last:
            return f'previous terminated container "{name}" in pod "%s" not found'
        return restarts if "waiting" in state else restarts - 1
    if "waiting" in state:
        if last:
            return restarts
        reason = (state.get("waiting") or {}).get("reason") or "ContainerCreating"
        return f'container "{name}" in pod "%s" is waiting to start: {reason}'
    return restarts


class Logs:
    """What containers printed, served through the pods/log subresource."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.printed: dict[tuple[str, str, str, int], bytes] = {}
        self.requests: list[LogRequest] = []
        self.active = 0
        self.peak = 0
        # Seconds every answer is held, as a slow node holds it.
        self.delay = 0.0
        # Cleared: every answer waits until it is set again (``pause``, ``resume``).
        self._open = asyncio.Event()
        self._open.set()
        self._target = kmock.resource(PODS.group, PODS.version, PODS.plural)
        fetch = (kmock.action.FETCH, self._target, kmock.subresource("log"))
        cluster.emulator[fetch] << self._answer

    def write(self, pod: Body, container: str, text: str | bytes, restart: int = 0) -> None:
        """What one instance of a container of a pod printed."""
        meta = pod["metadata"]
        data = text.encode() if isinstance(text, str) else text
        self.printed[meta.get("namespace", "default"), meta["name"], container, restart] = data

    def pause(self) -> None:
        """Hold every answer from now until ``resume``, as a node that stalls."""
        self._open.clear()

    def resume(self) -> None:
        """Answer again, the held reads first."""
        self._open.set()

    def reads_of(self, pod: Body) -> list[dict[str, str]]:
        """The query of every read of a pod's logs, in order."""
        meta = pod["metadata"]
        return [
            r.params
            for r in self.requests
            if (r.namespace, r.pod) == (meta.get("namespace", "default"), meta["name"])
        ]

    async def _answer(self, request: Any) -> Response:
        params = {key: str(value) for key, value in request.params.items()}
        self.requests.append(LogRequest(request.namespace, request.name, params))
        self.active += 1
        self.peak = max(self.peak, self.active)
        try:
            await self._open.wait()
            if self.delay:
                await asyncio.sleep(self.delay)
            return self._log(request.namespace, request.name, params)
        finally:
            self.active -= 1

    def _log(self, namespace: str, name: str, params: dict[str, str]) -> Response:
        key = (self._target, namespace, name)
        objects = self.cluster.emulator.objects
        if key not in objects or objects[key].deleted:
            return _status(404, "NotFound", f'pods "{name}" not found')
        pod: Body = objects[key].raw
        spec, status = pod.get("spec") or {}, pod.get("status") or {}
        declared = [c.get("name") for c in spec.get("containers") or []]
        declared += [c.get("name") for c in spec.get("initContainers") or []]
        container = params.get("container")
        if container is None:
            if len(spec.get("containers") or []) != 1:
                choices = " ".join(str(c) for c in declared)
                message = f"a container name must be specified for pod {name}, "
                return _status(400, "BadRequest", f"{message}choose one of: [{choices}]")
            container = str(declared[0])
        if container not in declared:
            return _status(400, "BadRequest", f"container {container} is not valid for pod {name}")
        statuses = (status.get("initContainerStatuses") or []) + (
            status.get("containerStatuses") or []
        )
        found = next((s for s in statuses if s.get("name") == container), None)
        if found is None:
            message = (
                f'container "{container}" in pod "{name}" is waiting to start: PodInitializing'
            )
            return _status(400, "BadRequest", message)
        which = instance(found, params.get("previous") == "true")
        if isinstance(which, str):
            return _status(400, "BadRequest", which % name)
        data = self.printed.get((namespace, name, container, which), b"")
        return Response(
            status=200,
            payload=select(data, params),
            headers={"Content-Type": "text/plain"},
        )
