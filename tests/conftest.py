"""Shared fixtures: real databases (MariaDB and SQLite), the emulated cluster and the
operator process.

The run starts a MariaDB server of its own (``testbed.mariadb``: a temporary data
directory, a free port on loopback) and removes it at the end; every test works in
databases it creates there. ``JOBARCHIVE_TEST_MYSQL_URL`` names an external server
instead: then only the databases the tests create are touched, and the tests that
must stop a server are skipped. Either way no MariaDB or MySQL process that the run
did not start may be stopped: the session checks it (see ``pytest_sessionfinish``).

``make test`` runs the files in two processes (pytest-xdist). Each worker is a session
of its own, with its own of every session fixture here: its own MariaDB, TLS server
and Galera cluster, under its own temporary folders, on ports from its own slice of
the range (``testbed.ports``). The Galera files share one worker, so that only one
cluster runs at a time (``tests.support.scheduling``).
"""

import asyncio
import os
import pathlib
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from tortoise import Tortoise

from jobarchive.config import DbTls
from jobarchive.core.kinds import BUILTIN_KINDS
from jobarchive.storage import database as db
from jobarchive.storage.readpool import ReadPool
from testbed.cluster import EVENTS, PODS, Cluster, emulated_cluster, job_resource
from testbed.galera import GaleraCluster, galera_cluster
from testbed.galera import missing as galera_missing
from testbed.mariadb import Databases, MariaDBServer, MariaDBUnavailable, server_for_run
from testbed.operator import OperatorProcess
from tests.support.certificates import TLS_DATABASE, TlsServer, start_tls_server
from tests.support.foreign import ForeignServers
from tests.support.metrics_bed import MetricsBed, metrics_bed
from tests.support.operators import OperatorFactory, operators_of
from tests.support.scheduling import GroupedFiles

EXTERNAL_MYSQL_URL = os.environ.get("JOBARCHIVE_TEST_MYSQL_URL") or None
_FOREIGN = ForeignServers()


# A test's folder says what it needs, and so which marker selects it (make check runs
# none of these).
FOLDER_MARKERS = {
    "browser": "browser",
    "e2e": "e2e",
    "integration": "integration",
    "compat": "integration",
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test by its folder: ``-m "not e2e"`` and the like select by what it needs."""
    for item in items:
        folder = item.path.parent.name
        if folder in FOLDER_MARKERS:
            item.add_marker(FOLDER_MARKERS[folder])


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> GroupedFiles | None:
    """With ``--dist loadfile`` (make test's), the files of a group share a worker."""
    if config.getvalue("dist") != "loadfile":
        return None
    return GroupedFiles(config, log)


def pytest_sessionstart(session: pytest.Session) -> None:
    """Note the database servers running before the run: none may be stopped by it."""
    _FOREIGN.record()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the run if a database server it did not start is gone or was replaced."""
    lost = _FOREIGN.lost()
    if lost:
        print(f"\nThe test run stopped database servers it did not start: {', '.join(lost)}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="session")
def mysql_server() -> Iterator[tuple[str, MariaDBServer | None]]:
    """The run's MariaDB: its URL, and the server object when the run started it."""
    with server_for_run(EXTERNAL_MYSQL_URL) as found:
        yield found


@pytest.fixture(scope="session")
def private_mariadb(mysql_server: tuple[str, MariaDBServer | None]) -> MariaDBServer:
    """The run's own server, for tests that stop and start it; skipped on an external one."""
    server = mysql_server[1]
    if server is None:
        pytest.skip("stops the database server: not done to JOBARCHIVE_TEST_MYSQL_URL's")
    return server


@pytest.fixture(scope="session")
def galera_for_run() -> Iterator[GaleraCluster]:
    """A three-node MariaDB Galera cluster of the run's own, removed at the end; skipped
    only where galera-4, rsync or the ``mysql`` user is missing (CI installs them)."""
    reason = galera_missing()
    if reason is not None:
        pytest.skip(reason)
    with galera_cluster() as cluster:
        yield cluster


@pytest.fixture
def galera(galera_for_run: GaleraCluster) -> GaleraCluster:
    """The run's Galera cluster with every node up and synced, whatever the test before
    left it in (a failed one may leave a node killed or isolated)."""
    galera_for_run.heal()
    return galera_for_run


@pytest.fixture(scope="session")
def mysql_databases(mysql_server: tuple[str, MariaDBServer | None]) -> Iterator[Databases]:
    """Databases created on the run's server, dropped at the end."""
    databases = Databases(mysql_server[0])
    yield databases
    databases.drop_all()


@pytest.fixture(scope="session")
def mysql_url(mysql_databases: Databases) -> str:
    """One MariaDB database for the in-process integration tests of this run."""
    return mysql_databases.create("jobarchive_test")


@pytest.fixture(params=["mysql", "sqlite"])
def db_url(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> str:
    """Each database the store supports: the same test runs on both."""
    if request.param == "mysql":
        return str(request.getfixturevalue("mysql_url"))
    return f"sqlite://{tmp_path / 'archive.sqlite3'}"


def schema_tables() -> list[str]:
    """Every table of the schema, as Tortoise registered its models (an open database)."""
    return sorted(
        {model._meta.db_table for app in Tortoise.apps.values() for model in app.values()}
    )


@pytest.fixture
async def database(db_url: str) -> AsyncIterator[str]:
    """An open, empty database: the schema created, every table emptied; its read side
    open too, for the queries."""
    await db.open_database(db_url, encryption=DbTls(), read_pool=ReadPool(db_url))
    conn = db.connection()
    for table in schema_tables():
        await conn.execute_script(f"DELETE FROM {table}")
    yield conn.capabilities.dialect
    await db.close_database()


@pytest.fixture(scope="session")
def tls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsServer]:
    """A second private MariaDB server, offering TLS, with the archive's schema created
    and an account that must use TLS (its password needs percent-encoding in a URL).
    Started even when the run uses an external server, if MariaDB's binaries are here."""
    try:
        found = start_tls_server(tmp_path_factory.mktemp("tls"), "Qz8#Vx/Kj?W@m")
    except MariaDBUnavailable:
        if EXTERNAL_MYSQL_URL:
            pytest.skip("needs MariaDB's binaries for a TLS server of its own")
        raise

    async def create_schema() -> None:
        await db.open_database(f"{found.server.url}/{TLS_DATABASE}", encryption=DbTls())
        await db.close_database()

    try:
        asyncio.run(create_schema())
        yield found
    finally:
        found.server.remove()


@pytest.fixture(scope="session")
def metrics_for_run() -> Iterator[MetricsBed]:
    """The run's own Prometheus (Debian's binary, a temporary data directory, a free
    port) scraping the test bed's dcgm-exporter and cAdvisor endpoints every second
    (``tests.support.metrics_bed``); one per worker, removed at the end. A missing
    binary fails the tests that need it, as MariaDB's does: CI installs it."""
    with metrics_bed() as bed:
        yield bed


@pytest.fixture
def cluster_metrics(metrics_for_run: MetricsBed) -> MetricsBed:
    """The run's Prometheus running, its endpoints serving no series and scraped since,
    whatever the test before left them in (a fault test may stop Prometheus)."""
    metrics_for_run.reset()
    return metrics_for_run


@pytest.fixture
async def cluster() -> AsyncIterator[Cluster]:
    """The emulated API server, serving every built-in kind, Pods, Events and CRDs."""
    async with emulated_cluster() as api:
        yield api


@pytest.fixture
async def west() -> AsyncIterator[Cluster]:
    """A second emulated cluster (the fleet's tests): another API server, another
    kube-system uid."""
    async with emulated_cluster() as api:
        yield api


@pytest.fixture
async def start_west(
    west: Cluster, archive: str, operator_env: dict[str, str | None], tmp_path: pathlib.Path
) -> AsyncIterator[OperatorFactory]:
    """Operators of the west cluster, on the same database as ``start_operator``'s."""
    async with operators_of(west, operator_env, tmp_path / "west") as start:
        yield start


@pytest.fixture
def e2e_db_url(mysql_databases: Databases) -> str:
    """A fresh MariaDB database for one operator run."""
    return mysql_databases.create("jobarchive_e2e")


@pytest.fixture
async def archive(e2e_db_url: str) -> AsyncIterator[str]:
    """The test's own Tortoise connection to the operator's database, for assertions
    (its read side too, for the queries)."""
    await db.open_database(e2e_db_url, encryption=DbTls(), read_pool=ReadPool(e2e_db_url))
    yield e2e_db_url
    await db.close_database()


@pytest.fixture
def operator_env(e2e_db_url: str) -> dict[str, str | None]:
    """The environment operators start with: the e2e database, and neither a region nor
    MySQL settings inherited from the test runner."""
    return {
        "JOBARCHIVE_DB_URL": e2e_db_url,
        "REGION": None,
        "MYSQL_HOST": None,
        "JOBARCHIVE_DB_URL_FILE": None,
        "JOBARCHIVE_READ_DB_URL": None,
        "JOBARCHIVE_READ_DB_URL_FILE": None,
        "JOBARCHIVE_DB_TLS": None,
        "JOBARCHIVE_DB_TLS_CA": None,
        "JOBARCHIVE_CLUSTER": None,
    }


@pytest.fixture
async def start_operator(
    cluster: Cluster, archive: str, operator_env: dict[str, str | None], tmp_path: pathlib.Path
) -> AsyncIterator[OperatorFactory]:
    """Starts real operator processes against the emulated cluster and the e2e database;
    stops them all at the end and prints their logs (shown for failing tests)."""
    async with operators_of(cluster, operator_env, tmp_path) as start:
        yield start


@pytest.fixture
async def operator(start_operator: OperatorFactory, cluster: Cluster) -> OperatorProcess:
    """One real operator process, watching everything before the test creates objects."""
    process = await start_operator()
    await cluster.wait_watching([PODS, EVENTS, *(job_resource(kind) for kind in BUILTIN_KINDS)])
    return process
