"""The recorder's rows written, and what becomes of each object said: stored, refused by
the database, invalid, or given up while it waited, each named by kind, namespace and
name (decision 26) and counted.
"""

import logging
from collections import Counter
from collections.abc import Mapping
from typing import Any, TypeVar

from jobarchive.core.rows import AttemptRow, EventRow, JobRow, PodRow, QuotaRow, WaitRow
from jobarchive.core.untrusted import mapping, text
from jobarchive.infra import metrics
from jobarchive.infra.logs import shown
from jobarchive.logtails.capture import Capture
from jobarchive.recording import convert
from jobarchive.recording.attribution import Waiting
from jobarchive.storage.models import Pod, Stamped
from jobarchive.storage.writer import Writer

logger = logging.getLogger(__name__)

R = TypeVar("R", JobRow, PodRow, EventRow, AttemptRow, WaitRow, QuotaRow)
# Objects named in one line about what was dropped or expired; the rest are counted.
NAMED_IN_A_LINE = 5
# Each one's namespace/name is cut to this there, so that five fit a line.
NAMED_LENGTH = 100
# Why an object is skipped is cut to this in its log line.
REASON_LENGTH = 300


def describe(kind: str, body: Mapping[str, Any]) -> str:
    """``Kind namespace/name`` of an object, as far as it has them."""
    meta = mapping(body.get("metadata"))
    namespace = text(meta.get("namespace")) or "-"
    name = text(meta.get("name")) or "<no name>"
    return f"{kind} {shown(namespace)}/{shown(name)}"


def named(items: list[Waiting]) -> str:
    """``Kind namespace/name`` of the first few objects, and how many more."""
    names = [
        f"{i.kind} {shown((i.namespace or '-') + '/' + i.name, NAMED_LENGTH)}"
        for i in items[:NAMED_IN_A_LINE]
    ]
    more = len(items) - len(names)
    return ", ".join(names) + (f" and {more} more" if more else "")


def given_up(items: list[Waiting], outcome: str) -> None:
    """Count objects given up, by kind, as ``outcome`` (dropped, expired)."""
    for kind, count in Counter(item.kind for item in items).items():
        metrics.OBJECTS.labels(kind, outcome).inc(count)


def reason(exc: Exception) -> str:
    """What went wrong: an InvalidObject's own words, else the exception's type and its
    message (the log line cuts it)."""
    if isinstance(exc, convert.InvalidObject):
        return str(exc)
    message = str(exc)
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


class RowWriter:
    """Writes rows, logging what cannot be converted or stored; tells the log tails'
    capture (``tails``, when given) of each pod seen and of each pod row stored."""

    def __init__(self, writer: Writer, tails: Capture | None = None) -> None:
        self.writer = writer
        self.tails = tails

    def note_pod(self, body: Mapping[str, Any]) -> None:
        """A pod that may be a tracked job's: its failed containers wait for its row."""
        if self.tails is not None:
            self.tails.noted(body)

    def invalid(self, kind: str, body: Mapping[str, Any], why: object) -> None:
        """Log and count an object that cannot become a row."""
        logger.warning("Skipping %s: %s", describe(kind, body), shown(why, REASON_LENGTH))
        metrics.OBJECTS.labels(kind, "invalid").inc()

    def invalid_waiting(self, item: Waiting, why: object) -> None:
        """Log and count an object, released from waiting, that could not be attributed."""
        logger.warning("Skipping %s: %s", named([item]), shown(why, REASON_LENGTH))
        metrics.OBJECTS.labels(item.kind, "invalid").inc()

    async def write(
        self, model: type[Stamped], kind: str, rows: list[R], changed: list[float | None]
    ) -> list[R]:
        """Write rows; log each the database refused, by kind, namespace and name.

        Returns the rows that were stored.
        """
        if not rows:
            return []
        stored = []
        errors = await self.writer.write(model, rows, changed)
        for row, error in zip(rows, errors, strict=True):
            fields: Mapping[str, Any] = row
            if error is None:
                stored.append(row)
                if model is Pod and self.tails is not None:
                    self.tails.recorded(str(fields["pod_id"]), str(fields["job_id"]))
                continue
            namespace = row.get("namespace", row.get("obj_namespace")) or "-"
            # A Workload's attempt or wait is named by its Workload (a wait, by its uid); a
            # quota by its ClusterQueue.
            name = (
                fields.get("name")
                or fields.get("workload_name")
                or fields.get("workload_id")
                or fields.get("cluster_queue")
            )
            logger.error(
                "Could not store %s %s/%s: %s",
                kind,
                shown(namespace),
                shown(name),
                shown(error, REASON_LENGTH),
            )
        return stored
