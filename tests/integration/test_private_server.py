"""The run's MariaDB is its own: stopping and starting it leaves every other server alone."""

import pathlib
import shutil
import tempfile
from collections.abc import Iterator

import pymysql
import pytest

from testbed.mariadb import MariaDBServer, connect
from tests.support.foreign import ForeignServers


def foreign_server() -> MariaDBServer:
    """A server in a folder not named as the test bed names its own: one the run did
    not start, as a developer's real database is."""
    return MariaDBServer(base=pathlib.Path(tempfile.mkdtemp(prefix="sentinel-")))


@pytest.fixture
def sentinel() -> Iterator[MariaDBServer]:
    """Another server on the machine, standing for a developer's real database."""
    server = foreign_server()
    server.start()
    yield server
    server.remove()
    shutil.rmtree(server.base, ignore_errors=True)


def version(url: str) -> str:
    with connect(url) as conn, conn.cursor() as cursor:
        cursor.execute("SELECT VERSION()")
        row = cursor.fetchone()
        return str(row[0])


def test_stopping_and_starting_a_private_server_leaves_every_other_server_running(
    sentinel: MariaDBServer,
) -> None:
    others = ForeignServers()
    others.record()
    mine = MariaDBServer()
    try:
        mine.start()
        mine.stop()
        with pytest.raises(pymysql.err.OperationalError):
            connect(mine.url, connect_timeout=1)
        mine.start()
        assert "MariaDB" in version(mine.url)
    finally:
        mine.remove()
    assert sentinel.pid in others.servers
    assert others.lost() == []
    assert "MariaDB" in version(sentinel.url)
    assert not mine.base.exists()


def test_a_restarted_server_keeps_its_port_and_its_data(sentinel: MariaDBServer) -> None:
    with connect(sentinel.url) as conn, conn.cursor() as cursor:
        cursor.execute("CREATE DATABASE kept")
    port = sentinel.port
    sentinel.stop()
    sentinel.start()
    with connect(sentinel.url) as conn, conn.cursor() as cursor:
        cursor.execute("SHOW DATABASES LIKE 'kept'")
        assert cursor.fetchall() == (("kept",),)
    assert sentinel.port == port


def test_the_record_of_foreign_servers_sees_a_server_stopped() -> None:
    server = foreign_server()
    server.start()
    record = ForeignServers()
    record.record()
    pid = server.pid
    server.remove()
    shutil.rmtree(server.base, ignore_errors=True)
    assert record.lost() == [f"mariadbd (pid {pid})"]


def test_another_test_runs_private_server_may_come_and_go() -> None:
    other_run = MariaDBServer()
    other_run.start()
    record = ForeignServers()
    record.record()
    assert other_run.pid not in record.servers
    other_run.remove()
    assert record.lost() == []
