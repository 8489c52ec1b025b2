"""The base of every table: its bookkeeping columns (``gmt_created``, ``gmt_modified``,
``cluster``) and their stamping, which every write path runs (decision 5); and the
clock the stamping reads."""

import datetime
from collections.abc import Iterable, MutableMapping
from typing import Any, ClassVar

from tortoise import fields
from tortoise.backends.base.client import BaseDBAsyncClient
from tortoise.models import Model

from jobarchive.core.cutting import clip, fit_json
from jobarchive.core.rows import CLUSTER_LENGTH


def utcnow() -> datetime.datetime:
    """The current time in UTC, timezone-aware."""
    return datetime.datetime.now(tz=datetime.UTC)


class Stamped(Model):
    """Base of every table: the two bookkeeping timestamps and their stamping."""

    gmt_created = fields.DatetimeField()
    gmt_modified = fields.DatetimeField()
    # The cluster the row came from (decision 35), filled by the store on every write;
    # NULL only in rows KubeDL's writer inserted beside jobarchive.
    cluster = fields.CharField(max_length=CLUSTER_LENGTH, null=True)

    # The columns ``stamp`` may write.
    STAMPED: ClassVar[tuple[str, ...]] = ("gmt_created", "gmt_modified")
    # Free-text columns and their bounds in characters, cut with a mark past them.
    BOUNDS: ClassVar[dict[str, int]] = {}
    # JSON columns and their bounds, cut so that they stay JSON.
    JSON_BOUNDS: ClassVar[dict[str, int]] = {}
    # Columns an upsert keeps at their earliest value (``Table.earliest``).
    EARLIEST: ClassVar[tuple[str, ...]] = ()

    class Meta:
        abstract = True

    @classmethod
    def stamp(cls, row: MutableMapping[str, Any], now: datetime.datetime | None = None) -> None:
        """Stamp a row in place: gmt_modified always, gmt_created if unset; and cut its
        free text and JSON to their bounds (a value within its bound is left as it is)."""
        now = now or utcnow()
        row["gmt_modified"] = now
        if row.get("gmt_created") is None:
            row["gmt_created"] = now
        for column, length in cls.BOUNDS.items():
            value = row.get(column)
            if isinstance(value, str) and len(value) > length:
                row[column] = clip(value, length)
        for column, length in cls.JSON_BOUNDS.items():
            value = row.get(column)
            if isinstance(value, str) and len(value) > length:
                row[column] = fit_json(value, length)

    async def save(
        self,
        using_db: BaseDBAsyncClient | None = None,
        update_fields: Iterable[str] | None = None,
        force_create: bool = False,
        force_update: bool = False,
    ) -> None:
        """Stamp the timestamps, then save as Tortoise does."""
        row = {name: getattr(self, name) for name in self._meta.db_fields}
        self.stamp(row)
        for name in (*self.STAMPED, *self.BOUNDS, *self.JSON_BOUNDS):
            setattr(self, name, row[name])
        if update_fields is not None:
            update_fields = [
                *update_fields,
                *(name for name in self.STAMPED if name != "gmt_created"),
            ]
        await super().save(
            using_db=using_db,
            update_fields=update_fields,
            force_create=force_create,
            force_update=force_update,
        )
