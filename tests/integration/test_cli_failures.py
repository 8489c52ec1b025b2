"""``jobarchive`` without a usable database: one line naming the cause, never a
traceback, never the password, never a file created; exit status 2 for a setting
to change, 1 for a database that cannot be read."""

import pathlib
import uuid
from urllib.parse import urlsplit

import pytest

from jobarchive.cli import PASSWORD_WARNING
from jobarchive.config import redact_url
from testbed.ports import free_port
from tests.support.commands import jobarchive

PASSWORD = "hunter2-wrong"
NO_ARCHIVE = "run the operator first or set JOBARCHIVE_DB_URL"


@pytest.fixture
def empty(tmp_path: pathlib.Path) -> pathlib.Path:
    path = tmp_path / "empty"
    path.mkdir()
    return path


@pytest.mark.parametrize(
    "args",
    [
        ["jobs"],
        ["job", "team-a/mnist"],
        ["events"],
        ["stats"],
        ["prune", "--days", "30"],
        ["serve", "--host", "127.0.0.1", "--port", str(free_port())],
    ],
)
def test_in_an_empty_directory_every_command_says_there_is_no_archive_and_creates_none(
    empty: pathlib.Path, args: list[str]
) -> None:
    result = jobarchive(*args, cwd=empty)

    assert result.stderr.splitlines() == [
        f"Error: no archive at {empty}/jobarchive.sqlite3: {NO_ARCHIVE}"
    ]
    assert (result.stdout, result.returncode) == ("", 1)
    assert list(empty.iterdir()) == []


def test_a_sqlite_url_to_a_missing_file_creates_none(
    empty: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    missing = tmp_path / "elsewhere.sqlite3"

    result = jobarchive("jobs", cwd=empty, env={"JOBARCHIVE_DB_URL": f"sqlite://{missing}"})

    assert result.stderr.splitlines() == [f"Error: no archive at {missing}: {NO_ARCHIVE}"]
    assert result.returncode == 1
    assert not missing.exists() and list(empty.iterdir()) == []


def test_a_file_that_is_no_database_is_named_as_such(empty: pathlib.Path) -> None:
    notes = empty / "notes.txt"
    notes.write_text("not SQLite\n" * 100)

    result = jobarchive(
        "jobs", "--limit", "5", cwd=empty, env={"JOBARCHIVE_DB_URL": f"sqlite://{notes}"}
    )

    assert result.stderr.splitlines() == [
        f"Error: cannot use the archive at sqlite://{notes}: file is not a database"
    ]
    assert result.returncode == 1


@pytest.mark.parametrize(
    ("url", "message"),
    [
        (
            f"postgres://alice:{PASSWORD}@db.example.com/archive",
            "JOBARCHIVE_DB_URL: scheme 'postgres' is not supported (use one of: mysql, sqlite)",
        ),
        ("mysql:///archive", "JOBARCHIVE_DB_URL: no host in mysql:///archive"),
        (
            f"mysql://alice:{PASSWORD}@/archive",
            "JOBARCHIVE_DB_URL: no host in mysql://alice:***@/archive",
        ),
        (
            "mysql://alice@db.example.com:0/archive",
            "JOBARCHIVE_DB_URL: port 0 in mysql://alice@db.example.com:0/archive",
        ),
    ],
)
@pytest.mark.parametrize("given_as", ["option", "environment"])
def test_a_url_the_operator_would_refuse_is_refused_the_same_way_with_exit_status_2(
    empty: pathlib.Path, url: str, message: str, given_as: str
) -> None:
    if given_as == "option":
        result = jobarchive("--db-url", url, "jobs", cwd=empty)
        # Named as the option it came from; a password in it is warned about first.
        warning = [PASSWORD_WARNING] if PASSWORD in url else []
        expected = [*warning, f"Error: {message.replace('JOBARCHIVE_DB_URL', '--db-url')}"]
    else:
        result = jobarchive("jobs", cwd=empty, env={"JOBARCHIVE_DB_URL": url})
        expected = [f"Error: {message}"]

    assert result.stderr.splitlines() == expected
    assert (result.stdout, result.returncode) == ("", 2)
    assert PASSWORD not in result.stderr


def test_an_unknown_mysql_database_is_named(empty: pathlib.Path, mysql_url: str) -> None:
    name = f"jobarchive_absent_{uuid.uuid4().hex[:8]}"
    url = urlsplit(mysql_url)._replace(path=f"/{name}").geturl()

    result = jobarchive("jobs", cwd=empty, env={"JOBARCHIVE_DB_URL": url})

    assert result.stderr.splitlines() == [
        f"Error: cannot use the archive at {redact_url(url)}: Unknown database '{name}'"
    ]
    assert (result.stdout, result.returncode) == ("", 1)


def test_a_wrong_password_is_named_without_the_password(
    empty: pathlib.Path, mysql_url: str
) -> None:
    server = urlsplit(mysql_url)
    user, host, port, name = server.username, server.hostname, server.port, server.path[1:]
    url = f"mysql://{user}:{PASSWORD}@{host}:{port}/{name}"

    result = jobarchive("jobs", cwd=empty, env={"JOBARCHIVE_DB_URL": url})

    [line] = result.stderr.splitlines()
    prefix = f"Error: cannot use the archive at mysql://{user}:***@{host}:{port}/{name}: "
    assert line.startswith(f"{prefix}Access denied for user '{user}'@'")
    assert line.endswith("' (using password: YES)")
    assert (result.stdout, result.returncode) == ("", 1)
    assert PASSWORD not in result.stdout + result.stderr


def test_a_refused_connection_is_named(empty: pathlib.Path) -> None:
    port = free_port()
    url = f"mysql://alice:{PASSWORD}@127.0.0.1:{port}/archive"

    result = jobarchive("stats", cwd=empty, env={"JOBARCHIVE_DB_URL": url})

    assert result.stderr.splitlines() == [
        f"Error: cannot use the archive at mysql://alice:***@127.0.0.1:{port}/archive: "
        "Can't connect to MySQL server on '127.0.0.1' (Connection refused)"
    ]
    assert (result.stdout, result.returncode) == ("", 1)
