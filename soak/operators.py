"""The operator as the soak runs it: one ``kopf run`` process at a time, each restart a new
process with a log of its own, killed with SIGKILL when the soak says, and started
again when it exits by itself, as the kubelet would (an exit is reported: the operator
is not supposed to end on its own).
"""

import asyncio
import pathlib
import re
from collections.abc import Coroutine
from typing import Any

from soak.timeline import Disruption, Timeline
from testbed.operator import OperatorProcess
from testbed.watches import Watches

# How long a started operator may take to watch everything before the soak says so.
WATCH_PATIENCE = 180.0
# The kubelet's restart delays for a container that keeps exiting: doubled each time
# from the first, up to the last (CrashLoopBackOff, shortened).
RESTART_DELAY, RESTART_DELAY_CAP = 1.0, 30.0
TRACEBACK = re.compile(r"^Traceback \(most recent call last\):$", re.MULTILINE)


class Supervisor:
    """Starts, kills and restarts the operator; notes when it watches again."""

    def __init__(
        self,
        workdir: pathlib.Path,
        kubeconfig: pathlib.Path,
        env: dict[str, str | None],
        watches: Watches,
        timeline: Timeline,
    ) -> None:
        self.workdir = workdir
        self.kubeconfig = kubeconfig
        self.env = env
        self.watches = watches
        self.timeline = timeline
        self.processes: list[OperatorProcess] = []
        # What went wrong with the operator itself: exits of its own, starts that never watched.
        self.failures: list[str] = []
        self._killed: set[OperatorProcess] = set()
        # Disruptions that end when an operator watches everything again.
        self._down: list[Disruption] = []
        # Exits since an operator last watched everything.
        self._exits = 0
        self._stopping = False
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def current(self) -> OperatorProcess | None:
        """The last operator process started, running or not."""
        return self.processes[-1] if self.processes else None

    async def start(self, cause: str = "operator starting") -> None:
        """Start a new operator process; the time until it watches everything is a
        disruption."""
        self._down.append(self.timeline.disrupted(cause))
        workdir = self.workdir / f"operator-{len(self.processes)}"
        workdir.mkdir()
        process = OperatorProcess(workdir, self.kubeconfig, self.env)
        self.processes.append(process)
        started = self.timeline.clock()
        await process.start()
        self._spawn(self._guard(process))
        self._spawn(self._until_watching(process, started))

    async def kill(self) -> int | None:
        """SIGKILL the current process; the exit code."""
        process = self.current
        if process is None or not process.running:
            return None
        self._down.append(self.timeline.disrupted("operator killed"))
        self._killed.add(process)
        return await process.kill()

    async def stop(self) -> int | None:
        """Stop for good: SIGTERM, as a rollout does; the exit code."""
        self._stopping = True
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        process = self.current
        if process is None:
            return None
        return await process.stop()

    def _spawn(self, coroutine: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _until_watching(self, process: OperatorProcess, started: float) -> None:
        deadline = started + WATCH_PATIENCE
        while not self.watches.watching_since(started):
            if not process.running:
                return
            if self.timeline.clock() > deadline:
                self.failures.append(
                    f"operator {process.workdir.name} did not watch everything within "
                    f"{WATCH_PATIENCE:.0f} s of its start"
                )
                return
            await asyncio.sleep(0.1)
        for disruption in self._down:
            self.timeline.restored(disruption)
        self._down.clear()
        self._exits = 0

    async def _guard(self, process: OperatorProcess) -> None:
        assert process.process is not None
        code = await process.process.wait()
        if self._stopping or process in self._killed:
            return
        self.failures.append(
            f"operator {process.workdir.name} exited by itself with status {code} at "
            f"+{self.timeline.offset():.1f} s"
        )
        self._down.append(self.timeline.disrupted("operator exited"))
        await asyncio.sleep(min(RESTART_DELAY * 2**self._exits, RESTART_DELAY_CAP))
        self._exits += 1
        if not self._stopping:
            await self.start("operator restarted after its exit")

    def log_tail(self, lines: int = 20) -> str:
        """The last lines of the current operator's log."""
        current = self.current
        return "\n".join(current.log().splitlines()[-lines:]) if current else ""

    def tracebacks(self) -> list[str]:
        """The last line of every traceback in the operators' logs, with its log's name."""
        found = []
        for process in self.processes:
            log = process.log()
            for match in TRACEBACK.finditer(log):
                tail = log[match.end() :].lstrip("\n").splitlines()
                last = next((line for line in tail if line and not line.startswith(" ")), "?")
                found.append(f"{process.workdir.name}: {last.strip()[:300]}")
        return found
