"""Identifiers are quoted, not trusted: a name holding the quote character stays one
identifier on MariaDB, and ``jobarchive migrate`` leaves alone a column it does not
know, however it is named, even when another account gave it a name that is SQL."""

import pathlib

import pymysql
import pytest

from jobarchive.storage.dialects import MYSQL
from testbed.mariadb import Databases, limited_account
from tests.support.commands import jobarchive
from tests.support.legacy import T0, KubeDLJob, create_kubedl_tables, insert_kubedl_rows, query

# The probe's column: unquoted as it was, it ended the name, set `name` to what only
# root may read, and commented out the rest of the UPDATE, its WHERE included.
# The cluster whose KubeDL wrote the tables (decision 35).
A_CLUSTER = {"JOBARCHIVE_CLUSTER": "kubedl-east"}
HOSTILE = "remark`=1,`name`=(SELECT MAX(User)FROM mysql.user)#"
# The same name as MariaDB reads it, written out by hand, not by the code under test.
HOSTILE_SQL = "`remark``=1,``name``=(SELECT MAX(User)FROM mysql.user)#`"
NAMES = ("a`b", "``", "`", 'a"b', "a#b", "a-- b", "a/*b", "a;b", "a'b", "a\\b", "a\nb", "é")


def test_each_hostile_name_is_one_identifier_on_mariadb(mysql_databases: Databases) -> None:
    url = mysql_databases.create("quoting")
    table = MYSQL.quote("t`; DROP TABLE x; #")
    columns = ", ".join(f"{MYSQL.quote(name)} text" for name in NAMES)
    query(url, f"CREATE TABLE {table} (id int PRIMARY KEY, {columns})")
    marks = ", ".join(["%s"] * len(NAMES))
    listed = ", ".join(MYSQL.quote(name) for name in NAMES)
    query(url, f"INSERT INTO {table} (id, {listed}) VALUES (1, {marks})", *NAMES)

    found = query(
        url,
        "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() "
        "ORDER BY ORDINAL_POSITION",
    )
    assert [name for (name,) in found] == ["id", *NAMES]
    # Each column holds its own name: every value went to the column it was meant for.
    assert query(url, f"SELECT {listed} FROM {table} WHERE id = %s", 1) == [NAMES]


def test_migrating_leaves_a_column_named_as_sql_alone_and_reads_nothing_through_it(
    mysql_databases: Databases, tmp_path: pathlib.Path
) -> None:
    url = mysql_databases.create("kubedl_hostile")
    create_kubedl_tables(url)
    insert_kubedl_rows(url, [KubeDLJob("uid-b", "bert", "50", namespace="team-b")], [])
    with limited_account(url, "SELECT, INSERT, UPDATE, ALTER") as hostile_url:
        with pytest.raises(pymysql.err.OperationalError):
            query(hostile_url, "SELECT MAX(User) FROM mysql.user")
        query(hostile_url, f"ALTER TABLE job_info ADD COLUMN {HOSTILE_SQL} text")
        insert_kubedl_rows(
            hostile_url,
            [
                KubeDLJob("uid-a", "mnist", "100", "Running", namespace="team-a", running=T0),
                KubeDLJob("uid-a", "mnist", "120", "Succeeded", namespace="team-a"),
            ],
            [],
        )
        marking = f"UPDATE job_info SET {HOSTILE_SQL} = %s WHERE version = %s"
        for version, mark in (("100", "older"), ("120", "newest"), ("50", "team-b's")):
            query(hostile_url, marking, mark, version)
    declared = (
        "SELECT ORDINAL_POSITION, COLUMN_TYPE, IS_NULLABLE FROM information_schema.COLUMNS "
        "WHERE TABLE_SCHEMA = DATABASE() AND COLUMN_NAME = %s"
    )
    before = query(url, declared, HOSTILE)

    result = jobarchive("migrate", cwd=tmp_path, env={"JOBARCHIVE_DB_URL": url, **A_CLUSTER})

    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    notice = (
        "job_info: leave alone the columns jobarchive does not know, "
        "'remark`=1,`name`=(SELECT MAX(User)FROM mysql.user)#': 1"
    )
    assert [line for line in lines if "mysql.user" in line] == [notice]
    assert "job_info: merge duplicate rows of 1 uids: 1" in lines
    assert lines[-1].startswith("Migrated in ")
    users = {user for (user,) in query(url, "SELECT User FROM mysql.user")}
    rows = query(
        url,
        f"SELECT job_id, namespace, name, version, status, gmt_job_running, {HOSTILE_SQL} "
        "FROM job_info ORDER BY job_id",
    )
    assert not users & {row[2] for row in rows}
    # The newest row kept, its start taken from the older one; its own value of the
    # unknown column, as the other row's, as they were.
    assert rows == [
        ("uid-a", "team-a", "mnist", "120", "Succeeded", T0, "newest"),
        ("uid-b", "team-b", "bert", "50", "Running", None, "team-b's"),
    ]
    assert query(url, declared, HOSTILE) == before
    again = jobarchive("migrate", cwd=tmp_path, env={"JOBARCHIVE_DB_URL": url, **A_CLUSTER})
    assert again.stdout.splitlines() == [
        notice,
        "Nothing to migrate: the database has jobarchive's schema",
    ]
