"""The real operator (``kopf run --verbose``: every library's DEBUG records) and the
database password: in no line of its log, however the URL is given; and TLS to the
database, for real."""

import pathlib
import urllib.parse

import pytest

from testbed import objects as o
from testbed.cluster import EVENTS, PODS, Cluster, resource_of
from testbed.mariadb import connect
from testbed.operator import OperatorProcess
from tests.support.certificates import TLS_DATABASE, TlsServer
from tests.support.operators import OperatorFactory
from tests.support.waiting import eventually

pytestmark = pytest.mark.e2e
TFJOBS = resource_of("kubeflow.org", "TFJob")
PASSWORD = "Qz8#Vx/Kj?W@m"


def assert_hidden(secret: str, log: str) -> None:
    """Neither the secret, nor its encoding, nor any three characters of it in a row."""
    shown = [secret[i : i + 3] for i in range(len(secret) - 2) if secret[i : i + 3] in log]
    assert not shown, f"{shown} of the password in the log"
    assert urllib.parse.quote(secret, safe="") not in log


async def reported(operator: OperatorProcess, text: str) -> None:
    async def found() -> bool:
        return text in operator.log()

    await eventually(found)


@pytest.mark.parametrize(
    "way", ["JOBARCHIVE_DB_URL", "MYSQL_*", "JOBARCHIVE_DB_URL_FILE", "?password="]
)
async def test_a_refused_password_is_in_no_line_of_a_verbose_operators_log(
    way: str,
    start_operator: OperatorFactory,
    mysql_server: tuple[str, object],
    tmp_path: pathlib.Path,
) -> None:
    server = urllib.parse.urlsplit(mysql_server[0])
    address = f"{server.hostname}:{server.port}"
    url = f"mysql://root:{urllib.parse.quote(PASSWORD, safe='')}@{address}/nowhere"
    file = tmp_path / "db-url"
    file.write_text(url + "\n")
    # As a Secret volume mounts it by default: every user may read it.
    file.chmod(0o644)
    env: dict[str, str | None] = {"JOBARCHIVE_DB_URL": url if way == "JOBARCHIVE_DB_URL" else None}
    if way == "?password=":
        url = f"mysql://root@{address}/nowhere?password={urllib.parse.quote(PASSWORD, safe='')}"
        env["JOBARCHIVE_DB_URL"] = url
    if way == "MYSQL_*":
        env.update(
            MYSQL_HOST=server.hostname,
            MYSQL_PORT=str(server.port),
            MYSQL_USER="root",
            MYSQL_PASSWORD=PASSWORD,
            MYSQL_DB_NAME="nowhere",
        )
    if way == "JOBARCHIVE_DB_URL_FILE":
        env["JOBARCHIVE_DB_URL_FILE"] = str(file)

    operator = await start_operator("--verbose", **env)

    await reported(operator, "Cannot open the database")
    log = operator.log()
    shown = "root@{}/nowhere?password=***" if way == "?password=" else "root:***@{}/nowhere"
    assert f"Cannot open the database mysql://{shown.format(address)}: Access denied" in log
    # The DEBUG line that kept a third of the password is there, masked.
    assert "Tortoise-ORM startup" in log
    assert "'password': '***'" in log
    assert_hidden(PASSWORD, log)
    # Warned of in one line.
    exposed = [line for line in log.splitlines() if "is open to every user" in line]
    assert len(exposed) == (1 if way == "JOBARCHIVE_DB_URL_FILE" else 0)
    assert all(f"JOBARCHIVE_DB_URL_FILE: {file} is open" in line for line in exposed)


@pytest.mark.parametrize("char", ["#", "/", "?", "@"])
async def test_an_unencoded_password_stops_the_operator_in_one_line_without_it(
    char: str, start_operator: OperatorFactory
) -> None:
    password = f"Qz8Vx{char}Kj_Wm"
    url = f"mysql://alice:{password}@db.example.com:3306/archive"

    operator = await start_operator("--verbose", JOBARCHIVE_DB_URL=url)

    assert await operator.exited() == 1
    log = operator.log()
    assert (
        "jobarchive: configuration error: JOBARCHIVE_DB_URL: the user name or password holds "
        "an unencoded '/', '?', '#', '@', '[' or ']'"
    ) in log
    assert_hidden(password, log)


async def test_the_operator_records_over_verified_tls(
    cluster: Cluster, start_operator: OperatorFactory, tls_server: TlsServer
) -> None:
    operator = await start_operator(
        "--verbose",
        JOBARCHIVE_DB_URL=tls_server.url(),
        JOBARCHIVE_DB_TLS="verify-identity",
        JOBARCHIVE_DB_TLS_CA=str(tls_server.ca),
    )
    await cluster.wait_watching([PODS, EVENTS, TFJOBS])
    job = await cluster.create(TFJOBS, o.with_meta(o.example("tfjob-simple.yaml"), name="tls"))

    async def stored() -> bool:
        with connect(tls_server.server.url) as conn, conn.cursor() as cursor:
            cursor.execute(
                f"SELECT COUNT(*) FROM {TLS_DATABASE}.job_info WHERE job_id = %s",
                (job["metadata"]["uid"],),
            )
            (count,) = cursor.fetchone() or (0,)
            return bool(count)

    await eventually(stored)
    address = f"127.0.0.1:{tls_server.server.port}"
    await reported(
        operator,
        f"Database mysql://archivist:***@{address}/{TLS_DATABASE} "
        "(mysql via aiomysql, TLS verify-identity: TLS_",
    )
    assert_hidden(tls_server.password, operator.log())
