"""The ``container_log_tail`` rows: which are stored already, and the rows themselves.

A tail is written once: the writer's insert (``storage.models.INSERTED``) leaves alone
a row whose key (pod uid, container, restart count) is stored already, so a read
repeated after a restart, or by a second replica, adds nothing. The store stamps the
rows as every table's, and its statements carry a few megabytes of tails at most
(``storage.store.statements``), well under MySQL's packet size.
"""

import datetime
from collections.abc import Iterable

from jobarchive.core.cutting import clip
from jobarchive.core.rows import SHORT_TEXT_LENGTH, LogTailRow
from jobarchive.logtails.text import Tail
from jobarchive.logtails.triggers import Failure
from jobarchive.storage.models import NOTE_LENGTH, LogTail, utcnow
from jobarchive.storage.store import Store

Key = tuple[str, str, int]


def row(
    failure: Failure,
    job_uid: str,
    tail: Tail | None,
    note: str | None,
    now: datetime.datetime | None = None,
) -> LogTailRow:
    """The row of one failure: its tail, or (``tail`` None) the note why there is none;
    created ``now``, when it was read (the store stamps ``gmt_modified`` as it writes)."""
    return {
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
        "gmt_created": now or utcnow(),
    }


class TailStore:
    """Reads ``container_log_tail`` through the writer's store; the rows are written by
    the writer (``capture``)."""

    def __init__(self, store: Store | None = None) -> None:
        self.store = store or Store()

    async def existing(self, keys: Iterable[Key]) -> set[Key]:
        """Which of these keys have a row (captured or not: either is done)."""
        wanted = set(keys)
        if not wanted:
            return set()
        pods = sorted({pod for pod, _, _ in wanted})
        found = (
            await LogTail.filter(pod_id__in=pods)
            .using_db(self.store.connection)
            .values_list("pod_id", "container", "restart_count")
        )
        stored = {(str(pod), str(container), int(restart)) for pod, container, restart in found}
        return wanted & stored
