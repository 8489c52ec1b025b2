"""The ``container_log_tail`` rows: which are stored already, and writing new ones.

A tail is written once: the insert leaves alone a row whose key (pod uid, container,
restart count) is stored already, so a read repeated after a restart, or by a second
replica, adds nothing. Rows are stamped by ``Stamped.stamp`` as every table's are.
Statements carry a few megabytes at most, well under MySQL's packet size.
"""

import datetime
from collections.abc import Iterable, Sequence
from typing import Any

from tortoise.backends.base.client import BaseDBAsyncClient

from jobarchive.cutting import clip
from jobarchive.logtails.text import Tail
from jobarchive.logtails.triggers import Failure
from jobarchive.rows import SHORT_TEXT_LENGTH
from jobarchive.storage import database as db
from jobarchive.storage import dialects
from jobarchive.storage.models import LOG_TAIL_TABLE, NOTE_LENGTH, LogTail, utcnow

Key = tuple[str, str, int]
Row = dict[str, Any]
# Bytes of tail text one statement carries at most (a row over it goes alone).
STATEMENT_BYTES = 4 * 2**20


def row(
    failure: Failure,
    job_uid: str,
    tail: Tail | None,
    note: str | None,
    now: datetime.datetime | None = None,
) -> Row:
    """The row of one failure: its tail, or (``tail`` None) the note why there is none."""
    values: Row = {
        "pod_id": failure.pod_uid,
        "container": failure.container,
        "restart_count": failure.restart_count,
        "container_type": failure.container_type,
        "job_id": job_uid,
        "namespace": failure.namespace,
        "pod_name": failure.pod,
        "exit_code": failure.exit_code,
        "reason": clip(failure.reason, SHORT_TEXT_LENGTH),
        "gmt_failed": failure.finished_at,
        "captured": tail is not None,
        "truncated": tail is not None and tail.truncated,
        "note": clip(note, NOTE_LENGTH),
        "log_tail": tail.text if tail is not None else None,
        "gmt_created": None,
    }
    LogTail.stamp(values, now or utcnow())
    return values


def statements(rows: Sequence[Row]) -> list[list[Row]]:
    """Rows grouped into statements of at most ``STATEMENT_BYTES`` of text each."""
    groups: list[list[Row]] = []
    size = 0
    for item in rows:
        weight = len(item["log_tail"] or "") * 4
        if not groups or size + weight > STATEMENT_BYTES:
            groups.append([])
            size = 0
        groups[-1].append(item)
        size += weight
    return groups


class TailStore:
    """Reads and writes ``container_log_tail`` on the writer's database connection."""

    def __init__(self, connection: BaseDBAsyncClient | None = None) -> None:
        self._connection = connection

    @property
    def connection(self) -> BaseDBAsyncClient:
        """The connection in use: the one given, else the writer's."""
        return self._connection or db.connection()

    async def existing(self, keys: Iterable[Key]) -> set[Key]:
        """Which of these keys have a row (captured or not: either is done)."""
        wanted = set(keys)
        if not wanted:
            return set()
        pods = sorted({pod for pod, _, _ in wanted})
        found = (
            await LogTail.filter(pod_id__in=pods)
            .using_db(self.connection)
            .values_list("pod_id", "container", "restart_count")
        )
        stored = {(str(pod), str(container), int(restart)) for pod, container, restart in found}
        return wanted & stored

    async def insert(self, rows: Sequence[Row]) -> None:
        """Insert rows, each whose key is stored already left as it is."""
        conn = self.connection
        dialect = dialects.of(conn)
        for group in statements(rows):
            sql = dialect.insert_new_sql(LOG_TAIL_TABLE, len(group))
            await conn.execute_query(sql, dialect.params(LOG_TAIL_TABLE, group))
