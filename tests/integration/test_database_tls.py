"""TLS to MariaDB, for real: a private server with a throwaway CA's certificate, and an
account the server itself refuses in clear text (``REQUIRE SSL``)."""

import json
import pathlib
import urllib.parse

import pytest

from jobarchive.config import DbTls
from jobarchive.storage import database as db
from jobarchive.storage import dialects, tls
from tests.support.certificates import TlsServer
from tests.support.commands import jobarchive


def assert_hidden(secret: str, text: str) -> None:
    shown = [secret[i : i + 3] for i in range(len(secret) - 2) if secret[i : i + 3] in text]
    assert not shown, f"{shown} of the password shown"


async def cipher() -> str:
    rows = await db.connection().execute_query_dict("SHOW STATUS LIKE 'Ssl_cipher'")
    return str(rows[0]["Value"])


@pytest.mark.parametrize("mode", ["required", "verify-ca", "verify-identity"])
async def test_each_mode_connects_encrypted_and_writes(
    tls_server: TlsServer, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    ca = str(tls_server.ca) if mode != "required" else None
    caplog.set_level("INFO", logger="jobarchive")

    await db.open_database(tls_server.url(), encryption=DbTls(mode, ca))
    try:
        assert await cipher()
        # A write on a pooled connection of its own: the account logs in only over TLS.
        async with dialects.of(db.connection()).transaction(db.connection()) as execute:
            await execute("DELETE FROM event_info WHERE event_id = %s", ["none"])
    finally:
        await db.close_database()

    address = f"127.0.0.1:{tls_server.server.port}"
    assert f"Database mysql://archivist:***@{address}/tls_archive (mysql via aiomysql, " in (
        caplog.text
    )
    assert f"TLS {mode}: " in caplog.text


def test_without_tls_the_account_is_refused_by_the_server(
    tls_server: TlsServer, tmp_path: pathlib.Path
) -> None:
    result = jobarchive("jobs", cwd=tmp_path, env={"JOBARCHIVE_DB_URL": tls_server.url()})

    [line] = result.stderr.splitlines()
    assert "Access denied for user 'archivist'@" in line
    assert result.returncode == 1


@pytest.mark.parametrize("mode", ["required", "verify-ca", "verify-identity"])
def test_the_cli_reads_over_tls_and_shows_no_password_at_debug_level(
    tls_server: TlsServer, tmp_path: pathlib.Path, mode: str
) -> None:
    env = {"JOBARCHIVE_DB_URL": tls_server.url(), "JOBARCHIVE_DB_TLS": mode}
    if mode != "required":
        env["JOBARCHIVE_DB_TLS_CA"] = str(tls_server.ca)

    result = jobarchive("jobs", "-o", "json", cwd=tmp_path, env=env, debug=True)

    assert result.returncode == 0, result.stderr[-2000:]
    # The database is the session's: the operator's TLS test may have recorded a job.
    assert isinstance(json.loads(result.stdout)["items"], list)
    assert f"TLS {mode}: TLS_" in result.stderr
    assert "Tortoise-ORM startup" in result.stderr
    assert_hidden(tls_server.password, result.stdout + result.stderr)
    assert urllib.parse.quote(tls_server.password, safe="") not in result.stderr


def test_a_certificate_from_another_ca_is_refused_in_one_line(
    tls_server: TlsServer, tmp_path: pathlib.Path
) -> None:
    env = {
        "JOBARCHIVE_DB_URL": tls_server.url(),
        "JOBARCHIVE_DB_TLS": "verify-ca",
        "JOBARCHIVE_DB_TLS_CA": str(tls_server.other_ca),
    }

    result = jobarchive("jobs", cwd=tmp_path, env=env)

    address = f"127.0.0.1:{tls_server.server.port}"
    assert result.stderr.splitlines() == [
        f"Error: cannot use the archive at mysql://archivist:***@{address}/tls_archive: "
        "Can't connect to MySQL server on '127.0.0.1' (TLS: the server's certificate is not "
        # MariaDB sends its CA's certificate along: a chain that ends in one not trusted.
        "trusted: self-signed certificate in certificate chain)"
    ]
    assert (result.stdout, result.returncode) == ("", 1)


def test_verify_identity_refuses_a_certificate_for_another_host(
    tls_server: TlsServer, tmp_path: pathlib.Path
) -> None:
    # The certificate names 127.0.0.1 only; the CA is the right one.
    env = {
        "JOBARCHIVE_DB_URL": tls_server.url(host="localhost"),
        "JOBARCHIVE_DB_TLS": "verify-identity",
        "JOBARCHIVE_DB_TLS_CA": str(tls_server.ca),
    }

    result = jobarchive("jobs", cwd=tmp_path, env=env)

    [line] = result.stderr.splitlines()
    assert "(TLS: the server's certificate is not trusted: Hostname mismatch" in line
    assert result.returncode == 1
    verify_ca = jobarchive("jobs", cwd=tmp_path, env={**env, "JOBARCHIVE_DB_TLS": "verify-ca"})
    assert verify_ca.returncode == 0, verify_ca.stderr


async def test_a_server_that_offers_no_tls_is_refused_not_used_in_clear_text(
    mysql_url: str, tmp_path: pathlib.Path
) -> None:
    result = jobarchive(
        "jobs", cwd=tmp_path, env={"JOBARCHIVE_DB_URL": mysql_url, "JOBARCHIVE_DB_TLS": "required"}
    )

    [line] = result.stderr.splitlines()
    assert line.endswith(
        ": the server does not offer TLS, which JOBARCHIVE_DB_TLS=required requires"
    )
    assert result.returncode == 1
    with pytest.raises(tls.NotEncrypted):
        await db.open_database(mysql_url, encryption=DbTls("required"))
    await db.close_database()
