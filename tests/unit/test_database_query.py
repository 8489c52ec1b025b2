"""A database URL's query: a password there is masked as the user information's is,
and any URL at all is either taken (and Tortoise then reads it without a fault) or
refused with one ConfigError that shows no password."""

import string
import urllib.parse

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tortoise.backends.base.config_generator import expand_db_url

from jobarchive.config import ConfigError, first_host_url, redact_url, url_secrets, validate_db_url
from jobarchive.config.database_url import has_password

SECRET = "Zq7#Wv/Kp"
ENCODED = urllib.parse.quote(SECRET, safe="")


def test_a_password_in_the_query_is_masked_and_counted_a_secret() -> None:
    url = f"mysql://alice@db:3306/archive?charset=utf8mb4&password={ENCODED}"

    validate_db_url(url, "JOBARCHIVE_DB_URL")

    assert redact_url(url) == "mysql://alice@db:3306/archive?charset=utf8mb4&password=***"
    assert url_secrets(url) == {ENCODED, SECRET}
    assert has_password(url)


def test_any_parameter_named_as_a_secret_is_masked_even_when_refused() -> None:
    url = f"mysql://alice:pw@db/archive?passwd={ENCODED}&api_token=t0k3n"

    assert redact_url(url) == "mysql://alice:***@db/archive?passwd=***&api_token=***"
    assert url_secrets(url) >= {SECRET, "t0k3n", "pw"}


def test_a_parameter_the_driver_does_not_take_is_refused_by_name() -> None:
    cases = {
        "foo=1": "'foo' is not a parameter taken here (known: minsize, maxsize, pool_recycle, "
        "connect_timeout, charset, password)",
        "connect_timeout=abc": "the value of 'connect_timeout' is not a number of seconds",
        "maxsize=x": "the value of 'maxsize' is not a whole number of at least 1",
        "minsize=3&maxsize=1": "minsize is larger than maxsize",
        "charset=latin1": "the value of 'charset' is not one of utf8mb4",
        "maxsize=2&maxsize=3": "'maxsize' is given twice",
    }
    for query, message in cases.items():
        with pytest.raises(ConfigError) as error:
            validate_db_url(f"mysql://alice@db/archive?{query}", "JOBARCHIVE_DB_URL")
        assert str(error.value) == f"JOBARCHIVE_DB_URL: {message}", query


def test_a_sqlite_url_takes_only_the_pragmas_tortoise_sets() -> None:
    validate_db_url("sqlite:///tmp/a.sqlite3?journal_mode=wal", "JOBARCHIVE_DB_URL")
    with pytest.raises(ConfigError, match="'cache_size' is not a parameter taken here"):
        validate_db_url("sqlite:///tmp/a.sqlite3?cache_size=1;DROP", "JOBARCHIVE_DB_URL")


TEXT = st.text(string.printable + "é€\u2028", max_size=12)
PARTS = st.fixed_dictionaries(
    {
        "scheme": st.sampled_from(["mysql", "sqlite", "MySQL", "postgres", "", "mysql:"]),
        "user": TEXT,
        "password": TEXT,
        "host": st.one_of(TEXT, st.sampled_from(["db", "[::1]", "[::1", "h1,h2:x", "db:0"])),
        "port": st.one_of(TEXT, st.integers(-1, 70000).map(str)),
        "path": TEXT,
        "query": st.lists(st.tuples(TEXT, TEXT), max_size=3),
    }
)


@given(PARTS)
def test_any_url_is_taken_whole_or_refused_in_one_line_without_its_password(parts) -> None:
    query = "&".join(f"{name}={value}" for name, value in parts["query"])
    url = (
        f"{parts['scheme']}://{parts['user']}:{parts['password']}@{parts['host']}:"
        f"{parts['port']}/{parts['path']}?{query}"
    )
    try:
        validate_db_url(url, "JOBARCHIVE_DB_URL")
    except ConfigError as error:
        message = str(error)
        assert "\n" not in message
        secret = parts["password"]
        if len(secret) >= 4 and secret not in url.replace(f":{secret}@", ""):
            assert secret not in message or secret in _refusal(url, secret)
        return
    # Taken: Tortoise reads it as the operator will, without a fault of its own.
    expand_db_url(first_host_url(url))
    assert "***" in redact_url(url) or not has_password(url)


def _refusal(url: str, secret: str) -> str:
    """The refusal of the same URL with another password of the same length: the text
    every refusal holds whatever the password (a secret ``sqli`` is in its hint)."""
    other = "".join("Q" if char != "Q" else "R" for char in secret)
    try:
        validate_db_url(url.replace(f":{secret}@", f":{other}@"), "JOBARCHIVE_DB_URL")
    except ConfigError as error:
        return str(error)
    return ""


def test_a_password_read_as_the_query_is_refused_and_masked_without_being_shown() -> None:
    # An unescaped '?' in the user information: urllib reads ':0000@:/' as the query,
    # whose parameter name the refusal used to quote, password and all.
    for url in ("sqlite://0?:0000@:/?", "mysql://u?:s3cr3t@db/archive"):
        with pytest.raises(ConfigError) as error:
            validate_db_url(url, "JOBARCHIVE_DB_URL")
        assert "0000" not in str(error.value) and "s3cr3t" not in str(error.value)
        assert "0000" not in redact_url(url) and "s3cr3t" not in redact_url(url)


def test_a_sqlite_url_with_a_user_is_refused() -> None:
    with pytest.raises(ConfigError, match="a sqlite URL takes no user name or password"):
        validate_db_url("sqlite://:]@[::0:0/?", "JOBARCHIVE_DB_URL")
