"""The write path: multi-row upserts by uid with a stale-write guard, and the lookups
the handlers need to attribute pods and Events to jobs.

Upserts are hand-written SQL because Tortoise's ``bulk_create(update_fields=...)``
emits MySQL 8 syntax that MariaDB rejects, and because the stale-write guard
(DESIGN decision 3) must be evaluated by the database, row by row, against what is
stored: a row whose stored resourceVersion is newer keeps every column.
resourceVersions are compared as integers when both are decimal digit strings
(shorter is smaller, then lexical, so no cast can overflow); otherwise the
incoming write wins, as Kubernetes calls them opaque.

Every row goes through ``Stamped.stamp`` here, the same code ``save()`` runs, so
``gmt_modified`` is fresh on this path too. ``gmt_created`` is written on insert
only.
"""

import asyncio
import contextlib
import dataclasses
import datetime
import functools
from collections.abc import Awaitable, Callable, Hashable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

import pymysql
from aiomysql.cursors import DictCursor
from tortoise.backends.base.client import BaseDBAsyncClient
from tortoise.exceptions import DBConnectionError
from tortoise.expressions import Q
from tortoise.transactions import in_transaction

from jobarchive.storage import database as db
from jobarchive.storage.models import Event, Job, Pod, Stamped, utcnow

# Keeps one statement well under SQLite's 32,766 bound parameters and MySQL's packet size.
ROWS_PER_STATEMENT = 500
K = TypeVar("K", bound=Hashable)
_INSERT_ONLY = frozenset({"gmt_created"})


def is_older(version: str, than: str) -> bool:
    """Whether resourceVersion ``version`` is older than ``than``: the SQL guard's rule."""
    if not (version.isdigit() and than.isdigit() and version.isascii() and than.isascii()):
        return False
    return (len(version), version) < (len(than), than)


# InnoDB rolls back one of two transactions that lock the same index gaps in opposite
# orders (1213), or one that waited too long for a lock (1205); done again, it succeeds.
RETRYABLE_ERRORS = frozenset({1205, 1213})


# The server is unreachable, restarting, or dropped the connection: not the rows' fault.
UNAVAILABLE_ERRORS = frozenset({1040, 1053, 1927, 2002, 2003, 2006, 2013, 2055})


def _causes(error: BaseException) -> list[BaseException]:
    """The error and what it wraps: Tortoise wraps driver errors in args or as causes."""
    chain: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and all(current is not seen for seen in chain):
        chain.append(current)
        nested = [arg for arg in current.args if isinstance(arg, BaseException)]
        current = nested[0] if nested else (current.__cause__ or current.__context__)
    return chain


def _code(error: BaseException) -> int | None:
    first = error.args[0] if error.args else None
    return first if isinstance(first, int) and not isinstance(first, bool) else None


def is_retryable(error: BaseException) -> bool:
    """Whether a failed transaction may simply be run again (a deadlock, a lock timeout)."""
    return any(_code(cause) in RETRYABLE_ERRORS for cause in _causes(error))


def is_unavailable(error: BaseException) -> bool:
    """Whether the database, not the data, failed: worth waiting for, never skipping rows."""
    for cause in _causes(error):
        if _code(cause) in UNAVAILABLE_ERRORS:
            return True
        if isinstance(cause, ConnectionError | TimeoutError | asyncio.IncompleteReadError):
            return True
        if isinstance(cause, DBConnectionError | pymysql.err.InterfaceError):
            return True
        if "database is locked" in str(cause):
            return True
    return False


@dataclasses.dataclass(frozen=True)
class _Table:
    """What the upsert needs to know of a model, computed once."""

    name: str
    columns: tuple[str, ...]
    key: str


def _table(model: type[Stamped], key: str) -> _Table:
    columns = tuple(
        column
        for field, column in model._meta.fields_db_projection.items()
        if field != model._meta.pk_attr
    )
    return _Table(model._meta.db_table, columns, key)


TABLES: dict[type[Stamped], _Table] = {
    Job: _table(Job, "job_id"),
    Pod: _table(Pod, "pod_id"),
    Event: _table(Event, "event_id"),
}


def _mysql_upsert(table: _Table, rows: int) -> str:
    cols = ", ".join(f"`{c}`" for c in table.columns)
    one = "(" + ", ".join(["%s"] * len(table.columns)) + ")"
    old, new = "`version`", "VALUES(`version`)"
    stale = (
        f"({old} REGEXP '^[0-9]+$' AND {new} REGEXP '^[0-9]+$' AND "
        f"(CHAR_LENGTH({new}) < CHAR_LENGTH({old}) OR "
        f"(CHAR_LENGTH({new}) = CHAR_LENGTH({old}) AND {new} < {old})))"
    )
    # MySQL evaluates these assignments left to right, each seeing what the earlier ones
    # wrote. So the guard is evaluated once per row, by the first assignment, into a
    # session variable the others read (evaluating it per column cost 30% of the
    # throughput); and `version` is assigned last, so the guard reads the stored one.
    updated = [c for c in table.columns if c not in _INSERT_ONLY | {table.key, "version"}]
    updated.append("version")
    first, *rest = updated
    # A stale row also bumps a counter, so the caller learns how many the guard kept.
    counted = f"(@jobarchive_stale := {stale}) AND (@jobarchive_kept := @jobarchive_kept + 1)"
    sets = [f"`{first}` = IF({counted}, `{first}`, VALUES(`{first}`))"]
    sets += [f"`{c}` = IF(@jobarchive_stale, `{c}`, VALUES(`{c}`))" for c in rest]
    values = ", ".join([one] * rows)
    return (
        f"INSERT INTO `{table.name}` ({cols}) VALUES {values} "
        f"ON DUPLICATE KEY UPDATE {', '.join(sets)}"
    )


def _sqlite_upsert(table: _Table, rows: int) -> str:
    cols = ", ".join(f'"{c}"' for c in table.columns)
    one = "(" + ", ".join(["?"] * len(table.columns)) + ")"
    old, new = f'"{table.name}"."version"', 'excluded."version"'
    digits = "{0} <> '' AND {0} NOT GLOB '*[^0-9]*'"
    stale = (
        f"({digits.format(old)} AND {digits.format(new)} AND "
        f"(length({new}) < length({old}) OR (length({new}) = length({old}) AND {new} < {old})))"
    )
    updated = [c for c in table.columns if c not in _INSERT_ONLY and c != table.key]
    sets = ", ".join(f'"{c}" = excluded."{c}"' for c in updated)
    values = ", ".join([one] * rows)
    return (
        f'INSERT INTO "{table.name}" ({cols}) VALUES {values} '
        f'ON CONFLICT("{table.key}") DO UPDATE SET {sets} WHERE NOT {stale}'
    )


def mysql_value(value: Any) -> Any:
    """A column value as MySQL takes it: booleans as 0/1, datetimes naive in UTC."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, datetime.datetime):
        # The session time zone is UTC and PyMySQL drops tzinfo: convert, then drop it.
        return value.astimezone(datetime.UTC).replace(tzinfo=None)
    return value


def _sqlite_value(value: Any) -> Any:
    return int(value) if isinstance(value, bool) else value


Execute = Callable[[str, list[Any]], Awaitable[tuple[int, Sequence[Mapping[str, Any]]]]]


async def _execute_raw(raw: Any, sql: str, params: list[Any]) -> tuple[int, list[dict[str, Any]]]:
    """One statement on an aiomysql connection: affected rows and fetched rows."""
    async with raw.cursor(DictCursor) as cursor:
        await cursor.execute(sql, params or None)
        return cursor.rowcount, list(await cursor.fetchall())


async def _upsert(
    model: type[Stamped], rows: Sequence[Mapping[str, Any]], mysql: bool, execute: Execute
) -> int:
    """The upsert statements of ``Store.upsert``, run by ``execute``; returns stale rows."""
    if not rows:
        return 0
    table = TABLES[model]
    now = utcnow()
    prepared = []
    for row in rows:
        stamped = dict(row)
        model.stamp(stamped, now)
        prepared.append(stamped)
    build = _mysql_upsert if mysql else _sqlite_upsert
    convert = mysql_value if mysql else _sqlite_value
    stale = 0
    for start in range(0, len(prepared), ROWS_PER_STATEMENT):
        chunk = prepared[start : start + ROWS_PER_STATEMENT]
        params = [convert(row[column]) for row in chunk for column in table.columns]
        if mysql:
            # MySQL's affected-rows count cannot tell a stale row from an insert plus
            # an update, so the guard counts in a session variable instead.
            await execute("SET @jobarchive_kept = 0", [])
            await execute(build(table, len(chunk)), params)
            _, found = await execute("SELECT @jobarchive_kept AS kept", [])
            stale += int(found[0]["kept"])
        else:
            # SQLite counts only rows inserted or updated; the guard's WHERE skips the rest.
            changed, _ = await execute(build(table, len(chunk)), params)
            stale += len(chunk) - changed
    return stale


class Store:
    """Writes rows and answers the attribution lookups, over the open Tortoise connection."""

    def __init__(self, connection: BaseDBAsyncClient | None = None) -> None:
        self._connection = connection

    @property
    def connection(self) -> BaseDBAsyncClient:
        """The connection in use: the one given, else Tortoise's default."""
        return self._connection or db.connection()

    async def upsert(
        self,
        model: type[Stamped],
        rows: Sequence[Mapping[str, Any]],
        connection: BaseDBAsyncClient | None = None,
    ) -> int:
        """Insert or update rows by their uid, skipping any older than the stored row.

        Returns how many rows were skipped as stale.
        """
        conn = connection or self.connection
        mysql = conn.capabilities.dialect == "mysql"
        return await _upsert(model, rows, mysql, conn.execute_query)

    async def write_batch(
        self, batch: Mapping[K, tuple[type[Stamped], Sequence[Mapping[str, Any]]]]
    ) -> dict[K, int]:
        """Upsert groups of rows, of any tables, in one transaction: one commit for all.

        Returns the number of stale rows skipped in each group.
        """
        conn = self.connection
        if conn.capabilities.dialect != "mysql":
            async with in_transaction(conn.connection_name) as transaction:
                return {
                    group: await self.upsert(model, rows, transaction)
                    for group, (model, rows) in batch.items()
                }
        # On a connection of our own, not Tortoise's pooled transaction: when BEGIN
        # fails on a dead connection, that one never gives its connection back, and
        # a few database restarts would drain the pool.
        async with conn.acquire_connection() as raw:
            execute = functools.partial(_execute_raw, raw)
            await raw.begin()
            try:
                stale = {
                    group: await _upsert(model, rows, True, execute)
                    for group, (model, rows) in batch.items()
                }
                await raw.commit()
            except BaseException:
                with contextlib.suppress(Exception):
                    await raw.rollback()
                raise
        return stale

    async def live_job_uid(self, namespace: str, name: str) -> str | None:
        """The uid of the newest job of that name still in the cluster, if any is stored."""
        job = (
            await Job.filter(namespace=namespace, name=name, is_in_etcd=True)
            .using_db(self.connection)
            .order_by("-gmt_created")
            .first()
            .only("job_id")
        )
        return job.job_id if job is not None else None

    async def pod_job_uid(self, pod_uid: str) -> str | None:
        """The job uid stored for a pod, if the pod is stored."""
        pod = await Pod.filter(pod_id=pod_uid).using_db(self.connection).first().only("job_id")
        return pod.job_id if pod is not None else None

    async def uids_in_etcd(
        self,
        model: type[Stamped],
        before: datetime.datetime,
        kinds: Iterable[tuple[str, str]] | None = None,
        kinds_without_group: Iterable[str] = (),
    ) -> list[str]:
        """Uids of rows still marked in etcd and last written before ``before``; of jobs,
        only those of the given (group, kind) pairs, and those written before
        ``api_version`` existed (it is NULL) of the kind names given apart."""
        key = TABLES[model].key
        query = model.filter(is_in_etcd=True, gmt_modified__lt=before)
        if kinds is not None:
            legacy: dict[str, Any] = {
                "api_version__isnull": True,
                "kind__in": list(kinds_without_group),
            }
            matching = Q(**legacy)
            for group, kind in sorted(set(kinds)):
                of_group: dict[str, Any] = {"kind": kind, "api_version__startswith": f"{group}/"}
                matching |= Q(**of_group)
            query = query.filter(matching)
        uids = await query.using_db(self.connection).values_list(key, flat=True)
        return [str(uid) for uid in uids]

    async def rows(self, model: type[Stamped], uids: Sequence[str]) -> list[dict[str, Any]]:
        """The stored rows of these uids, as the upsert takes them."""
        key = TABLES[model].key
        found = await model.filter(**{f"{key}__in": list(uids)}).using_db(self.connection).values()
        return [{k: v for k, v in row.items() if k != "id"} for row in found]

    async def live_jobs(self) -> list[tuple[str, str, str]]:
        """(namespace, name, uid) of every job still in the cluster, oldest first."""
        rows = (
            await Job.filter(is_in_etcd=True)
            .using_db(self.connection)
            .order_by("gmt_created")
            .values_list("namespace", "name", "job_id")
        )
        return [(str(ns), str(name), str(uid)) for ns, name, uid in rows]

    async def recent_pods(self, since: datetime.datetime, limit: int) -> list[tuple[str, str]]:
        """(pod uid, job uid) of pods still in the cluster or written since ``since``.

        Events outlive their pod by up to an hour, so a pod gone recently may still be
        the subject of Events listed at start.
        """
        rows = (
            await Pod.filter(Q(is_in_etcd=True) | Q(gmt_modified__gte=since))
            .using_db(self.connection)
            .limit(limit)
            .values_list("pod_id", "job_id")
        )
        return [(str(pod), str(job)) for pod, job in rows]
