"""The test bed's ports lie below the ephemeral range, so that a server it restarts
never finds its port held by a client connection's source port, and each worker of a
parallel run takes its ports from a slice of the range of its own."""

import socket

import pytest

from testbed import ports
from testbed.ports import free_port, port_range, worker_share


def _ephemeral_floor() -> int:
    with open("/proc/sys/net/ipv4/ip_local_port_range") as found:
        return int(found.read().split()[0])


def test_ports_are_below_the_ephemeral_range_distinct_and_bindable() -> None:
    ports = [free_port() for _ in range(50)]
    assert len(set(ports)) == 50
    # Where the range leaves no room below it (it begins at 10000 or lower), the kernel's.
    floor = _ephemeral_floor()
    assert floor <= 10000 or all(port < floor for port in ports)
    for port in ports:
        with socket.socket() as server:
            server.bind(("127.0.0.1", port))


def test_a_clients_source_port_never_takes_a_handed_out_port() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        with socket.socket() as client:
            client.connect(server.getsockname())
            source = client.getsockname()[1]
    assert source >= _ephemeral_floor()
    assert _ephemeral_floor() <= 10000 or free_port() < _ephemeral_floor()


def test_each_worker_of_a_parallel_run_takes_ports_from_a_slice_of_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    second = {"PYTEST_XDIST_WORKER": "gw1", "PYTEST_XDIST_WORKER_COUNT": "2"}
    assert worker_share(second) == (1, 2)
    assert worker_share({**second, "PYTEST_XDIST_WORKER": "gw0"}) == (0, 2)
    # Outside a parallel run, or with names it does not know: the whole range.
    assert worker_share({}) == (0, 1)
    assert worker_share({**second, "PYTEST_XDIST_WORKER": "master"}) == (0, 1)
    assert worker_share({**second, "PYTEST_XDIST_WORKER": "gw2"}) == (0, 1)
    low, high = port_range((0, 2), 32768), port_range((1, 2), 32768)
    assert (low.start, low.stop, high.start, high.stop) == (10000, 21384, 21384, 32768)
    assert port_range((0, 1), 32768) == range(10000, 32768)
    assert not port_range((0, 2), 10000)
    floor = _ephemeral_floor()
    monkeypatch.setattr(ports, "_SHARE", (1, 2))
    assert floor <= 10000 or all(free_port() in port_range((1, 2), floor) for _ in range(20))
