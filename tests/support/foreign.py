"""The database servers a test run did not start, and whether the run left them alone.

A process is identified by its pid and its start time (field 22 of /proc/PID/stat), so
a server that was stopped and started again, even under a reused pid, counts as
stopped. The private servers of other test runs (``testbed.mariadb``: their data
directories are named so) come and go with those runs and are not recorded. Linux
only; elsewhere nothing is recorded and nothing can be lost.
"""

import pathlib

from testbed.mariadb import PRIVATE_PREFIX

SERVER_NAMES = frozenset({"mariadbd", "mysqld"})
PRIVATE_MARK = PRIVATE_PREFIX.encode()
_PROC = pathlib.Path("/proc")


def _identity(pid_dir: pathlib.Path) -> tuple[str, str] | None:
    """(name, start time) of a live process, None for a zombie or a vanished one."""
    try:
        stat = (pid_dir / "stat").read_text()
    except OSError:
        return None
    # The name is in parentheses and may hold spaces; the fields after it are plain.
    name = stat[stat.index("(") + 1 : stat.rindex(")")]
    fields = stat[stat.rindex(")") + 2 :].split()
    state, start_time = fields[0], fields[19]
    if state == "Z":
        return None
    return name, start_time


def _private(pid_dir: pathlib.Path) -> bool:
    """Whether the process is a test run's private server, by its data directory."""
    try:
        return PRIVATE_MARK in (pid_dir / "cmdline").read_bytes()
    except OSError:
        return False


class ForeignServers:
    """Records the running MariaDB/MySQL servers, then tells which of them are gone."""

    def __init__(self) -> None:
        self.servers: dict[int, tuple[str, str]] = {}

    def record(self) -> None:
        """Note every database server process running now."""
        if not _PROC.is_dir():
            return
        for pid_dir in _PROC.iterdir():
            if not pid_dir.name.isdigit():
                continue
            found = _identity(pid_dir)
            if found is not None and found[0] in SERVER_NAMES and not _private(pid_dir):
                self.servers[int(pid_dir.name)] = found

    def lost(self) -> list[str]:
        """``name (pid N)`` of each recorded server that no longer runs as it did."""
        return [
            f"{name} (pid {pid})"
            for pid, (name, start_time) in sorted(self.servers.items())
            if _identity(_PROC / str(pid)) != (name, start_time)
        ]
