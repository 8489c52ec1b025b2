"""Other sessions on the test's MariaDB server: one that holds a table locked, so that
reads of it wait as a genuinely slow statement would, and a look at what runs there."""

import contextlib
from collections.abc import Iterator
from urllib.parse import urlsplit

from testbed.mariadb import connect


def _server_and_database(database_url: str) -> tuple[str, str]:
    return database_url.rsplit("/", 1)[0], urlsplit(database_url).path.strip("/")


@contextlib.contextmanager
def locked(database_url: str, table: str) -> Iterator[None]:
    """``table`` write-locked by a session of its own until the block ends: every other
    session's statement reading it waits for the lock, on the server, meanwhile."""
    server, database = _server_and_database(database_url)
    with connect(server, database=database) as conn, conn.cursor() as cursor:
        cursor.execute(f"LOCK TABLES `{table}` WRITE")
        try:
            yield
        finally:
            cursor.execute("UNLOCK TABLES")


def running(database_url: str, table: str = "", user: str = "") -> int:
    """How many statements run on the database now (this look aside), only those that
    name ``table`` or only those of ``user`` if given: sleeping sessions are not counted."""
    server, database = _server_and_database(database_url)
    with connect(server) as conn, conn.cursor() as cursor:
        cursor.execute(
            "SELECT COUNT(*) FROM information_schema.PROCESSLIST "
            "WHERE DB = %s AND COMMAND NOT IN ('Sleep', 'Daemon') AND ID <> CONNECTION_ID() "
            "AND INFO LIKE %s AND USER LIKE %s",
            [database, f"%{table}%", user or "%"],
        )
        (count,) = cursor.fetchone()
        return int(count)


def sessions_by_user(database_url: str) -> dict[str, int]:
    """How many sessions each account has open on the database (this look aside)."""
    server, database = _server_and_database(database_url)
    with connect(server) as conn, conn.cursor() as cursor:
        cursor.execute(
            "SELECT USER, COUNT(*) FROM information_schema.PROCESSLIST "
            "WHERE DB = %s AND ID <> CONNECTION_ID() GROUP BY USER",
            [database],
        )
        return {str(user): int(count) for user, count in cursor.fetchall()}
