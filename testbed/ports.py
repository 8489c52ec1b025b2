"""Free TCP ports on loopback, for the servers the test bed starts.

The ports are taken below the kernel's ephemeral range. A port the kernel hands out
for ``bind(0)`` is one it also hands out as the source port of outgoing connections:
a server stopped and started again on it (a Galera node killed and rejoining, the
outage tests' MariaDB) could find it held by a client's connection and abort with
"Address already in use". Below the range only another listener can take it.

The workers of a parallel test run (pytest-xdist) each take ports from a slice of the
range of their own, and so do the processes they start (the demo's), which inherit
their variables: a port a worker holds for a server it stopped, to start again, is
never handed out by another.
"""

import os
import pathlib
import random
import socket
from collections.abc import Mapping

_RANGE = pathlib.Path("/proc/sys/net/ipv4/ip_local_port_range")
_LOWEST = 10000
_handed_out: set[int] = set()
# Its own generator: a test that seeds the module-wide one must not replay the ports.
_random = random.Random()


def worker_share(environ: Mapping[str, str]) -> tuple[int, int]:
    """(index, count): the slice of the range of worker ``gwINDEX`` of COUNT, as
    pytest-xdist names them in ``PYTEST_XDIST_WORKER`` and ``PYTEST_XDIST_WORKER_COUNT``;
    (0, 1), the whole range, outside such a run."""
    worker = environ.get("PYTEST_XDIST_WORKER", "")
    count = environ.get("PYTEST_XDIST_WORKER_COUNT", "")
    if not (worker.startswith("gw") and worker[2:].isdigit() and count.isdigit()):
        return 0, 1
    index = int(worker[2:])
    return (index, int(count)) if index < int(count) else (0, 1)


def port_range(share: tuple[int, int], ceiling: int) -> range:
    """The ports of slice ``share`` of those from 10000 up to ``ceiling`` (the ephemeral
    range's floor); empty where there is no room below it."""
    index, count = share
    width = max(0, ceiling - _LOWEST) // count
    return range(_LOWEST + index * width, _LOWEST + (index + 1) * width)


_SHARE = worker_share(os.environ)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now, in this process's slice
    of the range below the ephemeral one where there is room (else one the kernel picks),
    never the same one twice in a run."""
    ports = port_range(_SHARE, _ephemeral_floor())
    for _ in range(200 if ports else 0):
        port = _random.choice(ports)
        if port not in _handed_out and _bindable(port):
            _handed_out.add(port)
            return port
    while True:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            picked: int = probe.getsockname()[1]
        if picked not in _handed_out:
            _handed_out.add(picked)
            return picked


def _ephemeral_floor() -> int:
    try:
        return int(_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _bindable(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True
