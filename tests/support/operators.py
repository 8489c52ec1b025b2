"""The type of the ``start_operator`` fixture, for the tests that start operators
themselves, and the operators of one emulated cluster, started and stopped."""

import contextlib
import pathlib
from collections.abc import AsyncIterator
from typing import Protocol

from testbed.cluster import Cluster
from testbed.operator import OperatorProcess, write_kubeconfig


class OperatorFactory(Protocol):
    """Starts one more real operator process against the test's cluster and database."""

    async def __call__(self, *args: str, **env: str | None) -> OperatorProcess:
        """Start ``kopf run`` with extra command-line ``args``; each ``env`` variable
        overrides the test's environment, None removing it."""
        ...


@contextlib.asynccontextmanager
async def operators_of(
    cluster: Cluster, env: dict[str, str | None], folder: pathlib.Path
) -> AsyncIterator[OperatorFactory]:
    """Starts real operator processes against ``cluster`` with ``env``, each in a folder
    of its own under ``folder``; stops them all at the end and prints their logs (shown
    for failing tests)."""
    folder.mkdir(parents=True, exist_ok=True)
    kubeconfig = folder / "kubeconfig"
    write_kubeconfig(kubeconfig, cluster.url)
    processes: list[OperatorProcess] = []

    async def start(*args: str, **overrides: str | None) -> OperatorProcess:
        workdir = folder / f"operator-{len(processes)}"
        workdir.mkdir()
        process = OperatorProcess(workdir, kubeconfig, {**env, **overrides})
        processes.append(process)
        await process.start(*args)
        return process

    try:
        yield start
    finally:
        for process in processes:
            await process.stop()
            print(f"--- {process.log_path}\n{process.log()[-20000:]}")
