"""Identifiers are quoted, not trusted: each dialect doubles its quote character inside
a name, so any name stays one identifier (SQLite's own parser checks it here, MariaDB's
in tests/integration/test_migrate_hostile.py); and ``jobarchive migrate`` names a
column it does not know in one bounded line."""

import sqlite3

import pytest

from jobarchive.core.visible import QUOTED
from jobarchive.storage.dialects import MYSQL, SQLITE
from jobarchive.storage.migration.steps import NAMED, left_alone

HOSTILE = (
    'a"b',
    '""',
    '"',
    'x" text, "y',
    "a`b",
    "a#b",
    "a-- b",
    "a/*b",
    "a;b",
    "a'b",
    "a\\b",
    "a\nb",
    "a%sb",
    "é",
)


def test_each_quote_character_inside_a_name_is_doubled() -> None:
    assert MYSQL.quote("a`b") == "`a``b`"
    assert MYSQL.quote("`") == "````"
    assert MYSQL.quote('a"b') == '`a"b`'
    assert SQLITE.quote('a"b') == '"a""b"'
    assert SQLITE.quote("a`b") == '"a`b"'
    assert MYSQL.quote("job_info") == "`job_info`"


def test_each_hostile_name_is_one_identifier_on_sqlite() -> None:
    table = SQLITE.quote('t"; DROP TABLE x; --')
    columns = ", ".join(f"{SQLITE.quote(name)} TEXT" for name in HOSTILE)
    listed = ", ".join(SQLITE.quote(name) for name in HOSTILE)
    with sqlite3.connect(":memory:") as conn:
        conn.execute(f"CREATE TABLE {table} (id INTEGER PRIMARY KEY, {columns})")
        marks = ", ".join("?" * len(HOSTILE))
        conn.execute(f"INSERT INTO {table} (id, {listed}) VALUES (1, {marks})", HOSTILE)
        found = [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]
        assert found == ["id", *HOSTILE]
        # Each column holds its own name: every value went to the column it was meant for.
        assert conn.execute(f"SELECT {listed} FROM {table}").fetchall() == [HOSTILE]


def test_a_name_no_statement_can_carry_is_refused_not_quoted() -> None:
    for dialect in (MYSQL, SQLITE):
        with pytest.raises(ValueError, match="refused in a name"):
            dialect.quote("a\0b")
    # The MySQL drivers read a % as a parameter mark in any statement with parameters.
    with pytest.raises(ValueError, match="refused in a name"):
        MYSQL.quote("a%sb")


def test_an_unknown_column_is_named_escaped_on_one_line_and_cut_where_long() -> None:
    hostile = left_alone("job_info", ["remark`=1,`name`=(SELECT 1)#\n\x1b[2J"])
    assert hostile.describe(dry_run=False).endswith(
        ", 'remark`=1,`name`=(SELECT 1)#\\n\\x1b[2J': 1"
    )
    long = "x" * 200
    cut = left_alone("job_info", [long]).describe(dry_run=False)
    assert cut.endswith(f", '{'x' * QUOTED}…(200 characters)': 1")
    line = left_alone("job_info", ["a\nb"]).describe(dry_run=False)
    assert line == "job_info: leave alone the columns jobarchive does not know, 'a\\nb': 1"
    many = [f"c{n:02}" for n in range(NAMED + 5)]
    line = left_alone("job_info", many).describe(dry_run=True)
    assert line.endswith("'c09', and 5 more: 15 (dry run)")
    assert "\n" not in line and len(line) < 200
    worst = left_alone("job_info", [long] * 100).describe(dry_run=False)
    assert len(worst) <= 100 + NAMED * (QUOTED + 30)
