"""Free TCP ports on loopback, for the servers the test bed starts.

The ports are taken below the kernel's ephemeral range. A port the kernel hands out
for ``bind(0)`` is one it also hands out as the source port of outgoing connections:
a server stopped and started again on it (a Galera node killed and rejoining, the
outage tests' MariaDB) could find it held by a client's connection and abort with
"Address already in use". Below the range only another listener can take it.
"""

import pathlib
import random
import socket

_RANGE = pathlib.Path("/proc/sys/net/ipv4/ip_local_port_range")
_LOWEST = 10000
_handed_out: set[int] = set()
# Its own generator: a test that seeds the module-wide one must not replay the ports.
_random = random.Random()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now, below the ephemeral
    range where there is room (else one the kernel picks), never the same one twice in
    a run."""
    ceiling = _ephemeral_floor()
    for _ in range(200 if ceiling > _LOWEST else 0):
        port = _random.randrange(_LOWEST, ceiling)
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
