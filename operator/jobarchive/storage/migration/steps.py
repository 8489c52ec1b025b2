"""What a migration step is and says: its table, what it does, how many rows or
columns it takes, in one line; and what every part of the migration works on."""

import dataclasses
from collections.abc import Callable, Sequence

from tortoise.backends.base.client import BaseDBAsyncClient

from jobarchive.core.visible import QUOTED, visible
from jobarchive.storage import dialects, introspection
from jobarchive.storage.dialects import Dialect
from jobarchive.storage.introspection import Introspection


@dataclasses.dataclass(frozen=True)
class Step:
    """One thing a migration does (or would do), and how many rows or columns it takes."""

    table: str
    what: str
    count: int

    def describe(self, dry_run: bool) -> str:
        """A line for people: ``job_info: merge duplicate rows: 12``."""
        return f"{self.table}: {self.what}: {self.count}" + (" (dry run)" if dry_run else "")


Report = Callable[[Step], None]
# Rows a step reads or writes at a time, each batch in a transaction of its own.
BATCH = 500
# A line names at most NAMED of a table's columns it does not know.
NAMED = 10


def left_alone(table: str, unknown: Sequence[str]) -> Step:
    """The step naming a table's columns the model does not know, in one line (the first
    NAMED, each as ``visible`` cuts it to QUOTED): reported only, as nothing is done to
    them."""
    names = ", ".join(f"'{visible(name, limit=QUOTED)}'" for name in unknown[:NAMED])
    more = f", and {len(unknown) - NAMED} more" if len(unknown) > NAMED else ""
    return Step(
        table, f"leave alone the columns jobarchive does not know, {names}{more}", len(unknown)
    )


class Part:
    """A part of the migration, on one connection: its SQL and what its schema says."""

    def __init__(self, conn: BaseDBAsyncClient, batch: int) -> None:
        self.conn = conn
        self.dialect: Dialect = dialects.of(conn)
        self.schema: Introspection = introspection.of(conn)
        self.batch = batch
