"""``make run`` without a cluster, as a newcomer meets it: one line saying what is
missing and what to try, a non-zero exit within seconds, no file created and no
port opened."""

import pathlib

import pytest

from testbed.operator import write_kubeconfig
from testbed.ports import free_port
from tests.support.first_run import Finished, SilentServer, held_port, run_to_the_end

pytestmark = pytest.mark.e2e
DEMO_HINT = "or try `make demo`, which needs no cluster"
# The pre-flight check's tries and how long it waits for each answer.
TRIES = 3
PATIENCE = 2.0


@pytest.fixture
def home(tmp_path: pathlib.Path) -> pathlib.Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def workdir(tmp_path: pathlib.Path) -> pathlib.Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


async def run_without_cluster(workdir: pathlib.Path, home: pathlib.Path, **env: str) -> Finished:
    """Run the operator on its defaults (SQLite in the working directory) but for the
    metrics port, which the test holds meanwhile."""
    with held_port() as metrics_port:
        return await run_to_the_end(
            workdir,
            {
                "PATH": "/usr/bin:/bin",
                "HOME": str(home),
                "JOBARCHIVE_METRICS_PORT": str(metrics_port),
                **env,
            },
        )


async def test_without_a_kubeconfig_it_says_so_in_one_line_and_touches_nothing(
    workdir: pathlib.Path, home: pathlib.Path
) -> None:
    finished = await run_without_cluster(workdir, home)

    assert finished.lines == [
        "jobarchive: no Kubernetes cluster: not running in a pod, and no kubeconfig at "
        f"{home}/.kube/config; point KUBECONFIG at one, as for kubectl, {DEMO_HINT}"
    ]
    assert finished.returncode == 1
    # How soon (within 10 s) is `make bench --only firstrun`'s figure.
    # Holding the metrics port, the test would have seen "Cannot serve Prometheus metrics"
    # among the lines had the operator tried to open it.
    assert list(workdir.iterdir()) == []
    assert list(home.iterdir()) == []


async def test_with_a_cluster_on_a_closed_port_it_says_so_in_one_line_and_touches_nothing(
    workdir: pathlib.Path, home: pathlib.Path
) -> None:
    server = f"http://127.0.0.1:{free_port()}"
    kubeconfig = home / ".kube" / "config"
    kubeconfig.parent.mkdir()
    write_kubeconfig(kubeconfig, server)

    finished = await run_without_cluster(workdir, home)

    assert finished.lines == [
        f"jobarchive: the Kubernetes API at {server} (kubeconfig {kubeconfig}, context emulator) "
        f"does not answer (Connection refused, {TRIES} tries); check `kubectl cluster-info`, "
        f"{DEMO_HINT}"
    ]
    assert finished.returncode == 1
    # How soon (within 10 s) is `make bench --only firstrun`'s figure.
    assert list(workdir.iterdir()) == []


async def test_with_a_cluster_that_never_answers_it_gives_up_within_seconds(
    workdir: pathlib.Path, home: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    async with SilentServer() as server:
        write_kubeconfig(kubeconfig, server.url)
        finished = await run_without_cluster(workdir, home, KUBECONFIG=str(kubeconfig))

    assert finished.lines == [
        f"jobarchive: the Kubernetes API at {server.url} (kubeconfig {kubeconfig}, context "
        f"emulator) does not answer (no answer within {PATIENCE:g} s, {TRIES} tries); check "
        f"`kubectl cluster-info`, {DEMO_HINT}"
    ]
    assert finished.returncode == 1
    assert len(server.arrivals) == TRIES
    # Each try waited its patience (exactly: the clock started before the process), and
    # the last one's end was the run's: the ten seconds beyond only tell an exit from
    # a wait for an answer, and are generous, so that a busy machine never fails them.
    assert finished.took >= TRIES * PATIENCE
    assert finished.ended - server.arrivals[-1] < PATIENCE + 10
    assert list(workdir.iterdir()) == []
