"""Shared fixtures: real databases (MariaDB and SQLite), the emulated cluster and the
operator process.

Every test run works in databases of its own on the MariaDB server named by
``JOBARCHIVE_TEST_MYSQL_URL`` (default: root without a password on 127.0.0.1:3306)
and drops them at the end.
"""

import asyncio
import os
import pathlib
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any, TypeVar

import pymysql
import pytest

from jobarchive.kinds import BUILTIN_KINDS
from jobarchive.storage import database as db
from tests.support.cluster import EVENTS, PODS, Cluster, emulated_cluster, job_resource
from tests.support.operator import OperatorProcess, write_kubeconfig

MYSQL_SERVER_URL = os.environ.get("JOBARCHIVE_TEST_MYSQL_URL", "mysql://root:@127.0.0.1:3306")
T = TypeVar("T")


def _mysql_admin() -> "pymysql.connections.Connection[Any]":
    from urllib.parse import urlsplit

    parts = urlsplit(MYSQL_SERVER_URL)
    return pymysql.connect(
        host=parts.hostname or "127.0.0.1",
        port=parts.port or 3306,
        user=parts.username or "root",
        password=parts.password or "",
        autocommit=True,
    )


class MySQLDatabases:
    """Creates uniquely named databases on the test server and drops them all at the end."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def create(self, prefix: str) -> str:
        name = f"{prefix}_{uuid.uuid4().hex[:12]}"
        with _mysql_admin() as conn, conn.cursor() as cursor:
            cursor.execute(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4")
        self.names.append(name)
        return f"{MYSQL_SERVER_URL.rstrip('/')}/{name}"

    def drop_all(self) -> None:
        with _mysql_admin() as conn, conn.cursor() as cursor:
            for name in self.names:
                cursor.execute(f"DROP DATABASE IF EXISTS `{name}`")


@pytest.fixture(scope="session")
def mysql_databases() -> Iterator[MySQLDatabases]:
    databases = MySQLDatabases()
    yield databases
    databases.drop_all()


@pytest.fixture(scope="session")
def mysql_url(mysql_databases: MySQLDatabases) -> str:
    """One MariaDB database for the in-process integration tests of this run."""
    return mysql_databases.create("jobarchive_test")


@pytest.fixture(params=["mysql", "sqlite"])
def db_url(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> str:
    """Each database the store supports: the same test runs on both."""
    if request.param == "mysql":
        return str(request.getfixturevalue("mysql_url"))
    return f"sqlite://{tmp_path / 'archive.sqlite3'}"


@pytest.fixture
async def database(db_url: str) -> AsyncIterator[str]:
    """An open, empty database: the schema created, every table emptied."""
    await db.open_database(db_url)
    conn = db.connection()
    for table in ("job_info", "replica_info", "event_info"):
        await conn.execute_script(f"DELETE FROM {table}")
    yield conn.capabilities.dialect
    await db.close_database()


async def eventually(
    probe: Callable[[], Awaitable[T]], within: float = 30.0, interval: float = 0.1
) -> T:
    """Poll ``probe`` until it returns a truthy value or the timeout passes (then fail)."""
    deadline = asyncio.get_running_loop().time() + within
    while True:
        value = await probe()
        if value:
            return value
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"still {value!r} after {within} s")
        await asyncio.sleep(interval)


@pytest.fixture
async def cluster() -> AsyncIterator[Cluster]:
    """The emulated API server, serving every built-in kind, Pods, Events and CRDs."""
    async with emulated_cluster() as api:
        yield api


@pytest.fixture
def e2e_db_url(mysql_databases: MySQLDatabases) -> str:
    """A fresh MariaDB database for one operator run."""
    return mysql_databases.create("jobarchive_e2e")


@pytest.fixture
async def archive(e2e_db_url: str) -> AsyncIterator[str]:
    """The test's own Tortoise connection to the operator's database, for assertions."""
    await db.open_database(e2e_db_url)
    yield e2e_db_url
    await db.close_database()


@pytest.fixture
def operator_env(e2e_db_url: str) -> dict[str, str | None]:
    return {"JOBARCHIVE_DB_URL": e2e_db_url, "REGION": None, "MYSQL_HOST": None}


OperatorFactory = Callable[..., Awaitable[OperatorProcess]]


@pytest.fixture
async def start_operator(
    cluster: Cluster, archive: str, operator_env: dict[str, str | None], tmp_path: pathlib.Path
) -> AsyncIterator[OperatorFactory]:
    """Starts real operator processes against the emulated cluster and the e2e database;
    stops them all at the end and prints their logs (shown for failing tests)."""
    kubeconfig = tmp_path / "kubeconfig"
    write_kubeconfig(kubeconfig, cluster.url)
    processes: list[OperatorProcess] = []

    async def start(*args: str, **env: str | None) -> OperatorProcess:
        workdir = tmp_path / f"operator-{len(processes)}"
        workdir.mkdir()
        process = OperatorProcess(workdir, kubeconfig, {**operator_env, **env})
        processes.append(process)
        await process.start(*args)
        return process

    try:
        yield start
    finally:
        for process in processes:
            await process.stop()
            print(f"--- {process.log_path}\n{process.log()[-20000:]}")


@pytest.fixture
async def operator(start_operator: OperatorFactory, cluster: Cluster) -> OperatorProcess:
    """One real operator process, watching everything before the test creates objects."""
    process = await start_operator()
    await cluster.wait_watching([PODS, EVENTS, *(job_resource(kind) for kind in BUILTIN_KINDS)])
    return process
