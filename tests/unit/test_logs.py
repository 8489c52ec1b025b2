"""The redaction of the libraries' own logging: Tortoise's DEBUG line keeps a third of
the password, aiomysql's records may carry anything."""

import logging

import pytest
from tortoise import Tortoise
from tortoise.backends.base.config_generator import expand_db_url

from jobarchive.infra import logs

PASSWORD = "Qz8#Vx/Kj?W@m"
URL = "mysql://alice:Qz8%23Vx%2FKj%3FW%40m@db.example.com:3306/archive"


def slices(secret: str) -> list[str]:
    return [secret[index : index + 3] for index in range(len(secret) - 2)]


def test_tortoises_startup_line_keeps_no_part_of_the_password(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    logs.redact({"Qz8%23Vx%2FKj%3FW%40m", PASSWORD})
    settings = Tortoise.star_password({"mysql": expand_db_url(URL)})
    assert PASSWORD[:4] + "***" in settings  # what Tortoise itself would show

    logging.getLogger("tortoise").debug("Tortoise-ORM startup\n    connections: %s", settings)

    [record] = caplog.records
    assert "'password': '***'" in record.getMessage()
    assert "alice" in record.getMessage()
    assert not [piece for piece in slices(PASSWORD) if piece in caplog.text]


def test_arguments_tracebacks_and_every_credential_logger_are_redacted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    logs.redact(["s3cret-value"])

    for name in logs.CREDENTIAL_LOGGERS:
        logging.getLogger(name).debug("connecting with %r", {"password": "s3cret-value"})
    try:
        raise RuntimeError("refused: s3cret-value")
    except RuntimeError:
        logging.getLogger("aiomysql").exception("failed")

    assert len(caplog.records) == len(logs.CREDENTIAL_LOGGERS) + 1
    assert "s3cret" not in caplog.text
    assert caplog.text.count("'password': '***'") == len(logs.CREDENTIAL_LOGGERS)
    assert "RuntimeError: refused: ***" in caplog.text


def test_the_filter_is_installed_once_and_secrets_accumulate() -> None:
    logs.redact(["first-secret"])
    logs.redact(["second-secret", ""])

    tortoise = logging.getLogger("tortoise")
    redactors = [kept for kept in tortoise.filters if isinstance(kept, logs.Redactor)]
    assert len(redactors) == 1
    assert {"first-secret", "second-secret"} <= redactors[0].secrets
    assert "" not in redactors[0].secrets
    assert redactors[0].redact("a first-secret and a second-secret") == "a *** and a ***"


def test_a_record_without_a_secret_is_left_as_it_was() -> None:
    logs.redact(["s3cret-value"])
    record = logging.LogRecord("tortoise", logging.DEBUG, __file__, 1, "%s: %s", ("a", 1), None)

    assert logging.getLogger("tortoise").filter(record)
    assert (record.msg, record.args) == ("%s: %s", ("a", 1))


def test_user_text_is_shown_whole_when_short_and_printable() -> None:
    for text in ("mnist-worker-0", "引用 \U0001f680 ok", "", "a" * logs.SHOWN):
        assert logs.shown(text) == text
    assert logs.shown(None) == "None"
    assert logs.shown(ValueError("bad value")) == "bad value"


def test_user_text_is_cut_saying_how_long_it_was() -> None:
    shown = logs.shown("n" * 100_000)
    assert shown == "n" * logs.SHOWN + "…(100000 characters)"
    assert logs.shown("abcdef", limit=3) == "abc…(6 characters)"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("evil\nINFO forged line", "evil\\nINFO forged line"),
        ("a\r\x1b[31mred\x00", "a\\r\\x1b[31mred\\x00"),
        ("right\u202eto left\u2028", "right\\u202eto left\\u2028"),
        ("back\\slash", "back\\slash"),
        ("lone \ud800 surrogate", "lone \\ud800 surrogate"),
    ],
)
def test_user_text_can_start_no_line_of_its_own(text: str, expected: str) -> None:
    assert logs.shown(text) == expected
    assert logs.shown(text).isprintable()


def test_escapes_count_against_the_limit_so_no_text_widens_a_line() -> None:
    shown = logs.shown("\x00" * 100_000)
    assert shown == "\\x00" * (logs.SHOWN // 4) + "…(100000 characters)"
    assert len(logs.shown("\U0010ffff\x00" * 1000)) <= logs.SHOWN + len("…(2000 characters)")
