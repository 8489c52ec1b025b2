"""The database password and ``jobarchive``: in no line it prints, DEBUG records of every
library included, however the URL is given; a URL whose password is not encoded is
refused without a piece of it; ``--db-url`` with a password is warned about; the URL
may come from a file."""

import json
import pathlib
import urllib.parse

import pytest

from jobarchive.cli import PASSWORD_WARNING
from jobarchive.config import DbTls
from jobarchive.storage import database as db
from tests.support.commands import jobarchive

# Every character a URL reserves in its user information, and nothing a log says by chance.
PASSWORD = "Qz8#Vx/Kj?W@m"
ENCODED = urllib.parse.quote(PASSWORD, safe="")
WAYS = [
    "JOBARCHIVE_DB_URL",
    "MYSQL_*",
    "--db-url",
    "--db-url-file",
    "JOBARCHIVE_DB_URL_FILE",
    "JOBARCHIVE_READ_DB_URL",
    "JOBARCHIVE_READ_DB_URL_FILE",
]
UNENCODED = (
    "the user name or password holds an unencoded '/', '?', '#', '@', '[' or ']', so the URL "
    "does not say what was meant: percent-encode them ('/' %2F, '?' %3F, '#' %23, '@' %40, "
    "'[' %5B, ']' %5D), or give the password in MYSQL_PASSWORD (taken verbatim) with "
    "MYSQL_HOST and the other MYSQL_* variables"
)


def assert_hidden(secret: str, text: str) -> None:
    """Neither the secret nor any three characters of it in a row, nor its encoding."""
    shown = [secret[i : i + 3] for i in range(len(secret) - 2) if secret[i : i + 3] in text]
    assert not shown, f"{shown} of the password shown"
    assert urllib.parse.quote(secret, safe="") not in text


@pytest.fixture
def empty(tmp_path: pathlib.Path) -> pathlib.Path:
    path = tmp_path / "empty"
    path.mkdir()
    return path


def given(way: str, url: str, folder: pathlib.Path) -> tuple[list[str], dict[str, str]]:
    """The arguments and environment that give ``url`` to ``jobarchive`` one way (as the
    URL it reads, beside a URL to write to without a password, for the read side's ways)."""
    file = folder / "db-url"
    file.write_text(url + "\n")
    # Its owner's only, as a secret should be (every user's is warned of).
    file.chmod(0o600)
    parts = urllib.parse.urlsplit(url)
    written = parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()
    if way == "MYSQL_*":
        parts = urllib.parse.urlsplit(url)
        return [], {
            "MYSQL_HOST": parts.hostname or "",
            "MYSQL_PORT": str(parts.port),
            "MYSQL_USER": parts.username or "",
            "MYSQL_PASSWORD": urllib.parse.unquote(parts.password or ""),
            "MYSQL_DB_NAME": parts.path.lstrip("/"),
        }
    return {
        "JOBARCHIVE_DB_URL": ([], {"JOBARCHIVE_DB_URL": url}),
        "--db-url": (["--db-url", url], {}),
        "--db-url-file": (["--db-url-file", str(file)], {}),
        "JOBARCHIVE_DB_URL_FILE": ([], {"JOBARCHIVE_DB_URL_FILE": str(file)}),
        "JOBARCHIVE_READ_DB_URL": (
            [],
            {"JOBARCHIVE_DB_URL": written, "JOBARCHIVE_READ_DB_URL": url},
        ),
        "JOBARCHIVE_READ_DB_URL_FILE": (
            [],
            {"JOBARCHIVE_DB_URL": written, "JOBARCHIVE_READ_DB_URL_FILE": str(file)},
        ),
    }[way]


def refused_unshown(args: list[str], env: dict[str, str], cwd: pathlib.Path, shown: str) -> str:
    """Run ``jobarchive jobs`` at DEBUG on a URL whose password the server refuses: its
    last line names the URL as ``shown``, and no piece of the password shows anywhere;
    the whole output, for what else the caller asserts."""
    result = jobarchive(*args, "jobs", cwd=cwd, env=env, debug=True)
    output = result.stdout + result.stderr
    assert "Tortoise-ORM startup" in output
    assert result.stderr.splitlines()[-1].startswith(
        f"Error: cannot use the archive at {shown}: Access denied for user 'root'@"
    )
    assert result.returncode == 1
    assert_hidden(PASSWORD, output)
    return output


@pytest.mark.parametrize("way", WAYS)
def test_a_refused_password_shows_nowhere_even_at_debug_level(
    way: str, empty: pathlib.Path, tmp_path: pathlib.Path, mysql_url: str
) -> None:
    server = urllib.parse.urlsplit(mysql_url)
    address, name = f"{server.hostname}:{server.port}", server.path[1:]
    args, env = given(way, f"mysql://root:{ENCODED}@{address}/{name}", tmp_path)

    output = refused_unshown(args, env, empty, f"mysql://root:***@{address}/{name}")

    # The line that kept a third of the password, and aiomysql's own records.
    assert "'password': '***'" in output


@pytest.mark.parametrize("way", ["JOBARCHIVE_DB_URL", "--db-url", "JOBARCHIVE_DB_URL_FILE"])
def test_a_password_in_the_urls_query_shows_nowhere_even_at_debug_level(
    way: str, empty: pathlib.Path, tmp_path: pathlib.Path, mysql_url: str
) -> None:
    server = urllib.parse.urlsplit(mysql_url)
    address, name = f"{server.hostname}:{server.port}", server.path[1:]
    args, env = given(way, f"mysql://root@{address}/{name}?password={ENCODED}", tmp_path)

    refused_unshown(args, env, empty, f"mysql://root@{address}/{name}?password=***")


@pytest.mark.parametrize("char", ["#", "/", "?", "@"])
@pytest.mark.parametrize("way", ["JOBARCHIVE_DB_URL", "--db-url", "--db-url-file"])
def test_a_password_with_an_unencoded_reserved_character_is_refused_unechoed(
    char: str, way: str, empty: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    password = f"Qz8Vx{char}Kj_Wm"
    args, env = given(way, f"mysql://alice:{password}@db.example.com:3306/archive", tmp_path)

    result = jobarchive(*args, "jobs", cwd=empty, env=env)

    source = "JOBARCHIVE_DB_URL" if way == "JOBARCHIVE_DB_URL" else way
    warning = [PASSWORD_WARNING] if way == "--db-url" else []
    assert result.stderr.splitlines() == [*warning, f"Error: {source}: {UNENCODED}"]
    assert (result.stdout, result.returncode) == ("", 2)
    assert_hidden(password, result.stderr)


def test_a_password_on_the_command_line_is_warned_about_and_one_without_is_not(
    empty: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    missing = tmp_path / "missing.sqlite3"

    with_password = jobarchive(
        "--db-url", f"mysql://alice:{ENCODED}@127.0.0.1:1/archive", "jobs", cwd=empty
    )
    without = jobarchive("--db-url", f"sqlite://{missing}", "jobs", cwd=empty)

    first, error = with_password.stderr.splitlines()
    assert first == PASSWORD_WARNING
    assert error.startswith("Error: cannot use the archive at mysql://alice:***@127.0.0.1:1/")
    assert_hidden(PASSWORD, with_password.stderr)
    assert without.stderr.splitlines() == [
        f"Error: no archive at {missing}: run the operator first or set JOBARCHIVE_DB_URL"
    ]


@pytest.fixture
async def sqlite_archive(tmp_path: pathlib.Path) -> str:
    """An empty archive in a SQLite file; its URL."""
    url = f"sqlite://{tmp_path / 'archive.sqlite3'}"
    await db.open_database(url, encryption=DbTls())
    await db.close_database()
    return url


@pytest.mark.parametrize("way", ["--db-url-file", "JOBARCHIVE_DB_URL_FILE"])
def test_the_url_is_read_from_a_file_and_the_command_line_outranks_the_environment(
    way: str, sqlite_archive: str, empty: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    args, env = given(way, sqlite_archive, tmp_path)
    # The environment's own URL, which a file on the command line replaces.
    if way == "--db-url-file":
        env = {"JOBARCHIVE_DB_URL": f"sqlite://{tmp_path / 'elsewhere.sqlite3'}"}

    result = jobarchive(*args, "jobs", "-o", "json", cwd=empty, env=env)

    assert (result.stderr, result.returncode) == ("", 0)
    assert json.loads(result.stdout) == {"items": [], "next_cursor": None}


def test_a_url_file_every_user_may_read_is_warned_of_in_one_line_and_still_read(
    sqlite_archive: str, empty: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    args, _ = given("--db-url-file", sqlite_archive, tmp_path)
    file = pathlib.Path(args[1])
    file.chmod(0o644)

    result = jobarchive(*args, "jobs", "-o", "json", cwd=empty)

    assert result.stderr.splitlines() == [
        f"--db-url-file: {file} is open to every user of this machine (mode 0644), and the "
        "database password in it too: chmod o-rwx it (a mounted Secret: defaultMode 0440)"
    ]
    assert (json.loads(result.stdout), result.returncode) == ({"items": [], "next_cursor": None}, 0)


def test_a_url_file_that_cannot_be_used_is_one_line_and_exit_status_2(
    empty: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    missing, blank, folder = tmp_path / "missing", tmp_path / "blank", tmp_path / "folder"
    blank.write_text("\n")
    folder.mkdir()
    cases = {
        ("--db-url-file", str(missing)): f"--db-url-file: no file at {missing}",
        ("--db-url-file", str(blank)): f"--db-url-file: {blank} is empty",
        ("--db-url-file", str(folder)): f"--db-url-file: cannot read {folder} (Is a directory)",
        (
            "--db-url-file",
            str(blank),
            "--db-url",
            "sqlite:///tmp/x.sqlite3",
        ): "--db-url and --db-url-file are both given: keep one",
    }
    for args, message in cases.items():
        result = jobarchive(*args, "jobs", cwd=empty)
        assert result.stderr.splitlines() == [f"Error: {message}"], args
        assert (result.stdout, result.returncode) == ("", 2)

    from_environment = jobarchive("jobs", cwd=empty, env={"JOBARCHIVE_DB_URL_FILE": str(blank)})
    assert from_environment.stderr.splitlines() == [
        f"Error: JOBARCHIVE_DB_URL_FILE: {blank} is empty"
    ]
    assert from_environment.returncode == 2
