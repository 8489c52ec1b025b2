"""Where the database is and how it is reached: the URL (its variable, its file, KubeDL's
variables), the characters its password may not hold unencoded, and TLS."""

import logging
import pathlib

import pytest

from jobarchive.config import (
    ConfigError,
    DbTls,
    has_password,
    load,
    read_url_file,
    url_secrets,
    validate_db_url,
)

PASSWORD = "Qz8Vx-Kj_Wm"


def slices(secret: str) -> list[str]:
    """Every three-character piece of a secret: none may show anywhere."""
    return [secret[index : index + 3] for index in range(len(secret) - 2)]


def assert_hidden(secret: str, text: str) -> None:
    shown = [piece for piece in slices(secret) if piece in text]
    assert not shown, f"{shown} of the password in: {text}"


@pytest.mark.parametrize("char", ["#", "/", "?", "@", "[", "]"])
@pytest.mark.parametrize("where", ["password", "user"])
def test_an_unencoded_reserved_character_is_refused_without_echoing_the_password(
    char: str, where: str
) -> None:
    password = f"Qz8Vx{char}Kj_Wm"
    user = f"ali{char}ce" if where == "user" else "alice"
    url = f"mysql://{user}:{password}@db.example.com:3306/archive"

    with pytest.raises(ConfigError) as error:
        load({"JOBARCHIVE_DB_URL": url})

    message = str(error.value)
    assert message.startswith("JOBARCHIVE_DB_URL: the user name or password holds an unencoded")
    assert "percent-encode" in message and "MYSQL_PASSWORD" in message
    assert_hidden(password, message)
    assert "\n" not in message


def test_the_same_password_percent_encoded_is_taken_and_decoded_for_redaction() -> None:
    url = "mysql://alice:Qz8%23Vx%2FKj%3FW%40m@db.example.com:3306/archive"

    settings = load({"JOBARCHIVE_DB_URL": url})

    assert settings.db_url == url
    assert settings.db_url_redacted == "mysql://alice:***@db.example.com:3306/archive"
    assert url_secrets(url) == {"Qz8%23Vx%2FKj%3FW%40m", "Qz8#Vx/Kj?W@m"}


@pytest.mark.parametrize(
    "url",
    [
        # No '@': what follows the ':' is taken for a port, and urllib's error quotes it.
        f"mysql://alice:{PASSWORD}/archive",
        f"mysql://alice:{PASSWORD}",
        f"mysql://[alice:{PASSWORD}@db/archive",
    ],
)
def test_a_url_that_does_not_parse_echoes_nothing_of_its_user_information(url: str) -> None:
    with pytest.raises(ConfigError) as error:
        load({"JOBARCHIVE_DB_URL": url})

    assert_hidden(PASSWORD, str(error.value))
    assert "alice" not in str(error.value)


@pytest.mark.parametrize("char", ["\t", "\n", "\r"])
def test_a_url_with_a_tab_or_line_break_is_refused_without_echoing_it(char: str) -> None:
    url = f"mysql://alice:Qz8Vx{char}Kj_Wm@db.example.com/archive"
    with pytest.raises(ConfigError, match="tab or a line break") as error:
        load({"JOBARCHIVE_DB_URL": url})
    assert_hidden(PASSWORD, str(error.value))


@pytest.mark.parametrize("query", ["ssl=true", "ssl-mode=REQUIRED", "sslmode=require", "tls=1"])
def test_tls_asked_for_in_the_url_is_refused_pointing_to_the_variables(query: str) -> None:
    url = f"mysql://alice:{PASSWORD}@db.example.com/archive?{query}"

    with pytest.raises(ConfigError) as error:
        load({"JOBARCHIVE_DB_URL": url})

    assert "does not turn TLS on here; set JOBARCHIVE_DB_TLS" in str(error.value)
    assert_hidden(PASSWORD, str(error.value))


def test_a_url_file_is_read_without_its_line_break(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "db-url"
    path.write_text(f"mysql://alice:{PASSWORD}@db.example.com:3306/archive\n")

    settings = load({"JOBARCHIVE_DB_URL_FILE": str(path), "MYSQL_HOST": "ignored"})

    assert settings.db_url == f"mysql://alice:{PASSWORD}@db.example.com:3306/archive"


def test_a_url_file_is_checked_like_the_variable_and_named(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "db-url"
    path.write_text("mysql://alice:Qz8#Vx@db.example.com/archive")

    with pytest.raises(ConfigError, match=r"^JOBARCHIVE_DB_URL_FILE: the user name or password"):
        load({"JOBARCHIVE_DB_URL_FILE": str(path)})


def test_a_missing_unreadable_or_empty_url_file_is_one_line(tmp_path: pathlib.Path) -> None:
    missing, empty, folder = tmp_path / "missing", tmp_path / "empty", tmp_path / "folder"
    empty.write_text(" \n")
    folder.mkdir()
    binary = tmp_path / "binary"
    binary.write_bytes(b"mysql://alice:\xff\xfe@h/db")

    expected = {
        missing: f"JOBARCHIVE_DB_URL_FILE: no file at {missing}",
        empty: f"JOBARCHIVE_DB_URL_FILE: {empty} is empty",
        folder: f"JOBARCHIVE_DB_URL_FILE: cannot read {folder} (Is a directory)",
        binary: f"JOBARCHIVE_DB_URL_FILE: {binary} is not UTF-8 text",
    }
    for path, message in expected.items():
        with pytest.raises(ConfigError) as error:
            read_url_file(str(path), "JOBARCHIVE_DB_URL_FILE")
        assert str(error.value) == message


@pytest.mark.parametrize(
    ("mode", "warned"),
    [(0o644, True), (0o604, True), (0o602, True), (0o640, False), (0o400, False)],
)
@pytest.mark.parametrize("variable", ["JOBARCHIVE_DB_URL_FILE", "JOBARCHIVE_READ_DB_URL_FILE"])
def test_a_url_file_every_user_may_open_is_warned_of_once_without_its_content(
    mode: int, warned: bool, variable: str, tmp_path: pathlib.Path, caplog: pytest.LogCaptureFixture
) -> None:
    url = f"mysql://alice:{PASSWORD}@db.example.com:3306/archive"
    path = tmp_path / "db-url"
    path.write_text(url)
    path.chmod(mode)
    env = {variable: str(path)}
    if variable == "JOBARCHIVE_READ_DB_URL_FILE":
        env["JOBARCHIVE_DB_URL"] = "mysql://alice@db.example.com:3306/archive"
    caplog.set_level(logging.WARNING)

    # Loaded twice, as a process may: one line at most.
    assert load(env).db_url_redacted and load(env).read_db_url_redacted

    lines = [record.getMessage() for record in caplog.records]
    # Group access is how Kubernetes lets a pod's fsGroup read a Secret it mounts.
    expected = (
        f"{variable}: {path} is open to every user of this machine (mode {mode:04o}), and the "
        "database password in it too: chmod o-rwx it (a mounted Secret: defaultMode 0440)"
    )
    assert lines == ([expected] if warned else [])
    assert_hidden(PASSWORD, " ".join(lines))


def test_the_url_and_the_url_file_together_are_refused(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "db-url"
    path.write_text("sqlite:///tmp/x.sqlite3")
    with pytest.raises(ConfigError, match="both set"):
        load({"JOBARCHIVE_DB_URL": "sqlite:///tmp/y.sqlite3", "JOBARCHIVE_DB_URL_FILE": str(path)})


def test_a_password_is_noticed_in_any_url_and_its_secrets_are_both_spellings() -> None:
    assert has_password("mysql://alice:pw@h/db")
    assert has_password("mysql://alice:p/w#x@h/db")
    assert not has_password("mysql://alice@h/db")
    assert not has_password("mysql://alice:@h/db")
    assert not has_password("sqlite:///tmp/x@y.sqlite3")
    assert url_secrets("mysql://alice:p%40w@h/db") == {"p%40w", "p@w"}
    assert url_secrets("mysql://alice@h/db") == frozenset()


def test_validation_names_the_option_it_is_given() -> None:
    with pytest.raises(ConfigError, match=r"^--db-url: no database name"):
        validate_db_url("mysql://alice@h:3306/", "--db-url")


def test_tls_is_off_by_default_and_takes_mysqls_mode_names(tmp_path: pathlib.Path) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
    mysql = {"JOBARCHIVE_DB_URL": "mysql://alice@db.example.com/archive"}

    assert load({}).db_tls == DbTls("off", None)
    assert not load({}).db_tls.on
    assert load({**mysql, "JOBARCHIVE_DB_TLS": "required"}).db_tls == DbTls("required", None)
    verify = load({**mysql, "JOBARCHIVE_DB_TLS": "VERIFY_CA", "JOBARCHIVE_DB_TLS_CA": str(ca)})
    assert verify.db_tls == DbTls("verify-ca", str(ca))
    kubedl = {"MYSQL_HOST": "db", "JOBARCHIVE_DB_TLS": "verify-identity"}
    assert load({**kubedl, "JOBARCHIVE_DB_TLS_CA": str(ca)}).db_tls.mode == "verify-identity"


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"JOBARCHIVE_DB_TLS": "yes"}, "JOBARCHIVE_DB_TLS: 'yes' is not one of off, required"),
        ({"JOBARCHIVE_DB_TLS": "verify-ca"}, "JOBARCHIVE_DB_TLS_CA: JOBARCHIVE_DB_TLS=verify-ca"),
        (
            {"JOBARCHIVE_DB_TLS": "required", "JOBARCHIVE_DB_TLS_CA": "ca.pem"},
            "JOBARCHIVE_DB_TLS_CA: used only by JOBARCHIVE_DB_TLS=verify-ca or verify-identity",
        ),
        (
            {"JOBARCHIVE_DB_TLS": "verify-ca", "JOBARCHIVE_DB_TLS_CA": "/nonexistent/ca.pem"},
            "JOBARCHIVE_DB_TLS_CA: cannot read /nonexistent/ca.pem (No such file or directory)",
        ),
    ],
)
def test_a_tls_setting_that_cannot_work_is_refused(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError) as error:
        load({"JOBARCHIVE_DB_URL": "mysql://alice@db.example.com/archive", **env})
    assert str(error.value).startswith(message)


def test_a_ca_file_that_holds_no_certificate_is_refused(tmp_path: pathlib.Path) -> None:
    key = tmp_path / "server.key"
    key.write_text("-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n")
    env = {"JOBARCHIVE_DB_TLS": "verify-ca", "JOBARCHIVE_DB_TLS_CA": str(key)}
    with pytest.raises(ConfigError, match="holds no PEM certificate"):
        load({"JOBARCHIVE_DB_URL": "mysql://alice@db.example.com/archive", **env})


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"JOBARCHIVE_DB_TLS": "required"}, "JOBARCHIVE_DB_TLS"),
        ({"JOBARCHIVE_DB_TLS_CA": "ca.pem"}, "JOBARCHIVE_DB_TLS_CA"),
    ],
)
def test_tls_for_a_sqlite_file_is_refused_in_one_line(env: dict[str, str], named: str) -> None:
    with pytest.raises(ConfigError) as error:
        load(env)
    assert str(error.value) == (
        f"{named}: the database is a SQLite file, which TLS does not apply to"
    )
    assert load({"JOBARCHIVE_DB_TLS": "off"}).db_tls == DbTls()
