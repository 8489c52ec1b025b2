"""The test bed's ports lie below the ephemeral range, so that a server it restarts
never finds its port held by a client connection's source port."""

import socket

from testbed.ports import free_port


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
