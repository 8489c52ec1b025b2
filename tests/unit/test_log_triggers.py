"""Which containers' logs are read: the trigger rules on pod statuses shaped as the
kubelet writes them (containers, init containers, sidecars, restarts, OOM kills)."""

import copy
import datetime
from typing import Any

import pytest

from jobarchive.logtails.triggers import CONTAINER, INIT, SIDECAR, failures

UID = "6f1c0d52-0c8a-4d0e-9a43-7f8c2b1e5d10"


def terminated(exit_code: int, reason: str, finished: str = "2026-11-20T10:20:00Z") -> Any:
    return {
        "terminated": {
            "exitCode": exit_code,
            "reason": reason,
            "startedAt": "2026-11-20T10:00:07Z",
            "finishedAt": finished,
            "containerID": "containerd://0b9e1d5c3f",
        }
    }


def status(name: str, restarts: int, state: Any, last: Any | None = None) -> Any:
    return {
        "name": name,
        "image": "docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727",
        "imageID": "docker.io/kubeflowkatib/pytorch-mnist@sha256:1e0c",
        "ready": False,
        "started": False,
        "restartCount": restarts,
        "state": state,
        "lastState": last or {},
    }


def pod(
    containers: list[Any],
    init: list[Any] | None = None,
    phase: str = "Running",
    sidecars: tuple[str, ...] = (),
) -> Any:
    init_specs = [
        {
            "name": s["name"],
            "image": "busybox",
            **({"restartPolicy": "Always"} if s["name"] in sidecars else {}),
        }
        for s in init or []
    ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "mnist-worker-0", "namespace": "ml", "uid": UID},
        "spec": {
            "initContainers": init_specs,
            "containers": [{"name": c["name"], "image": "x"} for c in containers],
        },
        "status": {
            "phase": phase,
            "initContainerStatuses": init or [],
            "containerStatuses": containers,
        },
    }


def found(body: Any, succeeded_too: bool = False) -> list[tuple[str, str, int, bool, int | None]]:
    return [
        (f.container, f.container_type, f.restart_count, f.previous, f.exit_code)
        for f in failures(body, succeeded_too)
    ]


def test_a_worker_that_exits_non_zero_is_read_once_from_its_current_instance() -> None:
    body = pod([status("pytorch", 0, terminated(1, "Error"))], phase="Failed")
    [failure] = failures(body)
    assert (failure.namespace, failure.pod, failure.pod_uid) == ("ml", "mnist-worker-0", UID)
    assert (failure.container, failure.container_type, failure.restart_count) == (
        "pytorch",
        CONTAINER,
        0,
    )
    assert (failure.exit_code, failure.reason, failure.previous) == (1, "Error", False)
    assert failure.finished_at == datetime.datetime(2026, 11, 20, 10, 20, tzinfo=datetime.UTC)


def test_a_container_that_succeeded_is_read_only_when_configured() -> None:
    body = pod([status("pytorch", 0, terminated(0, "Completed"))], phase="Succeeded")
    assert found(body) == []
    assert found(body, succeeded_too=True) == [("pytorch", CONTAINER, 0, False, 0)]


def test_an_oom_killed_container_is_read() -> None:
    body = pod([status("pytorch", 0, terminated(137, "OOMKilled"))], phase="Failed")
    assert found(body) == [("pytorch", CONTAINER, 0, False, 137)]


def test_running_and_waiting_containers_are_not_read() -> None:
    running = status("pytorch", 0, {"running": {"startedAt": "2026-11-20T10:00:07Z"}})
    waiting = status("sidecar", 0, {"waiting": {"reason": "ContainerCreating"}})
    assert found(pod([running, waiting])) == []


def test_after_a_restart_the_dead_instance_is_read_as_the_previous_one() -> None:
    # Instance 0 died; instance 1 runs: restartCount 1, lastState is instance 0.
    running = status(
        "pytorch", 1, {"running": {"startedAt": "2026-11-20T10:21:00Z"}}, terminated(1, "Error")
    )
    assert found(pod([running])) == [("pytorch", CONTAINER, 0, True, 1)]


def test_in_crash_loop_back_off_the_last_state_is_the_newest_instance() -> None:
    # Instance 2 died and waits to be restarted: restartCount is still 2.
    waiting = status(
        "pytorch",
        2,
        {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 20s restarting"}},
        terminated(2, "Error"),
    )
    assert found(pod([waiting])) == [("pytorch", CONTAINER, 2, True, 2)]


def test_one_instance_has_one_key_through_its_whole_crash_loop() -> None:
    died = pod([status("pytorch", 0, terminated(1, "Error"))])
    backing_off = pod(
        [status("pytorch", 0, {"waiting": {"reason": "CrashLoopBackOff"}}, terminated(1, "Error"))]
    )
    restarted = pod([status("pytorch", 1, {"running": {"startedAt": "x"}}, terminated(1, "Error"))])
    died_again = pod([status("pytorch", 1, terminated(3, "Error"), terminated(1, "Error"))])
    keys = [{f.key for f in failures(body)} for body in (died, backing_off, restarted, died_again)]
    first = (UID, "pytorch", 0)
    assert keys == [{first}, {first}, {first}, {first, (UID, "pytorch", 1)}]


def test_an_oom_killed_init_container_is_read() -> None:
    init = [status("download-dataset", 0, terminated(137, "OOMKilled"))]
    pending = status("pytorch", 0, {"waiting": {"reason": "PodInitializing"}})
    body = pod([pending], init=init, phase="Failed")
    assert found(body) == [("download-dataset", INIT, 0, False, 137)]


def test_a_sidecar_that_crashes_while_its_pod_runs_is_read() -> None:
    sidecar = status("log-shipper", 1, {"running": {"startedAt": "x"}}, terminated(2, "Error"))
    body = pod(
        [status("pytorch", 0, {"running": {"startedAt": "x"}})],
        [sidecar],
        sidecars=("log-shipper",),
    )
    assert found(body) == [("log-shipper", SIDECAR, 0, True, 2)]


@pytest.mark.parametrize("exit_code", [137, 143])
def test_a_sidecar_the_kubelet_stopped_at_the_end_of_its_pod_is_not_read(exit_code: int) -> None:
    sidecar = status("istio-proxy", 0, terminated(exit_code, "Error"))
    main = status("pytorch", 0, terminated(0, "Completed"))
    body = pod([main], [sidecar], phase="Succeeded", sidecars=("istio-proxy",))
    assert found(body) == []
    # A plain init container that exits 143 failed by itself: it is read.
    plain = pod([main], [status("setup", 0, terminated(143, "Error"))], phase="Failed")
    assert found(plain) == [("setup", INIT, 0, False, 143)]


def test_containers_stopped_because_their_pod_is_deleted_are_not_read_unless_oom_killed() -> None:
    body = pod(
        [
            status("pytorch", 0, terminated(143, "Error")),
            status("exporter", 0, terminated(137, "OOMKilled")),
            status("helper", 0, terminated(1, "Error")),
        ],
        phase="Failed",
    )
    body["metadata"]["deletionTimestamp"] = "2026-11-20T10:30:00Z"
    assert [name for name, *_ in found(body)] == ["exporter", "helper"]


@pytest.mark.parametrize(
    "mangle",
    [
        lambda b: b["status"].update(containerStatuses="oops"),
        lambda b: b["status"]["containerStatuses"][0].update(state=None, lastState=7),
        lambda b: b["status"]["containerStatuses"][0].update(name=None),
        lambda b: b["status"]["containerStatuses"][0]["state"]["terminated"].update(
            exitCode="1", finishedAt="yesterday"
        ),
        lambda b: b["metadata"].pop("uid"),
        lambda b: b.update(status=[]),
    ],
)
def test_malformed_statuses_are_skipped_without_raising(mangle: Any) -> None:
    body = copy.deepcopy(pod([status("pytorch", 0, terminated(1, "Error"))]))
    mangle(body)
    assert found(body) in ([], [("pytorch", CONTAINER, 0, False, 1)])


def test_a_negative_restart_count_names_no_previous_instance() -> None:
    body = pod([status("pytorch", 0, {"running": {}}, terminated(1, "Error"))])
    assert found(body) == []
