"""The store: multi-row upserts by uid with a stale-write guard, inserts of rows
written once (``models.INSERTED``), and the lookups the recorder and the
reconciliation need.

The statements themselves are SQL of each dialect (``storage.dialects``); here
every row written is first stamped by ``Stamped.stamp``, the same code ``save()``
runs, so ``gmt_modified`` is fresh on this path too, and rows go out in statements
of at most ``ROWS_PER_STATEMENT`` rows (and, inserted, ``STATEMENT_BYTES`` of their
text). ``is_older`` is the guard's rule in Python, for the writer to settle two
versions of a row within one batch the way the database would.
"""

import datetime
import logging
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import Any, TypeVar, cast, overload

from tortoise.backends.base.client import BaseDBAsyncClient
from tortoise.expressions import Q

from jobarchive.core.efficiency import MEASURED
from jobarchive.core.rows import (
    DEFAULT_CLUSTER,
    AttemptRow,
    EventRow,
    JobRow,
    PodRow,
    QuotaRow,
    Row,
    WrittenRow,
)
from jobarchive.core.times import aware
from jobarchive.infra.logs import shown
from jobarchive.storage import daily, dialects
from jobarchive.storage import database as db
from jobarchive.storage.kueue import Attempt, Quota
from jobarchive.storage.models import INSERTED, TABLES, Event, Job, Pod, Stamped, Table, utcnow
from jobarchive.storage.summaries import Summary

# Keep one statement well under SQLite's 32,766 bound parameters and MySQL's packet
# size: at most this many rows, and this many bytes of the text weighed (``_weight``).
ROWS_PER_STATEMENT = 500
STATEMENT_BYTES = 4 * 2**20
# The rows of one statement named in the log when another cluster holds their uids.
FOREIGN_SAID = 10
K = TypeVar("K", bound=Hashable)
logger = logging.getLogger(__name__)
M = TypeVar("M", bound=Mapping[str, Any])


def is_older(version: str, than: str) -> bool:
    """Whether resourceVersion ``version`` is older than ``than``: the SQL guard's rule."""
    if not (version.isdigit() and than.isdigit() and version.isascii() and than.isascii()):
        return False
    return (len(version), version) < (len(than), than)


def statements(rows: Sequence[M], weigh: Callable[[M], int] | None = None) -> list[list[M]]:
    """Rows grouped one statement each: at most ``ROWS_PER_STATEMENT`` rows, and at most
    ``STATEMENT_BYTES`` as ``weigh`` counts a row's bytes (a row heavier goes alone)."""
    groups: list[list[M]] = []
    size = 0
    for row in rows:
        weight = weigh(row) if weigh is not None else 0
        if not groups or len(groups[-1]) == ROWS_PER_STATEMENT or size + weight > STATEMENT_BYTES:
            groups.append([])
            size = 0
        groups[-1].append(row)
        size += weight
    return groups


def _weight(row: Mapping[str, Any]) -> int:
    """The bytes a row's text may take in a statement: four per character, at most."""
    return 4 * sum(len(value) for value in row.values() if isinstance(value, str))


def _stamped(
    model: type[Stamped], rows: Sequence[WrittenRow], cluster: str
) -> list[dict[str, Any]]:
    """The rows as written: stamped by their model (``gmt_modified``), of ``cluster``."""
    now = utcnow()
    prepared: list[dict[str, Any]] = []
    for row in rows:
        stamped = dict(row)
        model.stamp(stamped, now)
        stamped["cluster"] = cluster
        prepared.append(stamped)
    return prepared


def _rollup(model: type[Stamped], rows: Sequence[Mapping[str, Any]]) -> daily.Step:
    """What writing these rows asks of the usage roll-ups (decisions 33 and 45)."""
    if model is Pod:
        return daily.Step.of_pods(rows)
    if model is Job:
        return daily.Step.of_jobs(row[TABLES[Job].key] for row in rows)
    if model is Attempt:
        return daily.Step.of_attempts(rows)
    if model is Summary:
        return daily.Step.of_summaries(rows)
    return daily.Step()


async def _upsert(
    table: Table,
    rows: Sequence[dict[str, Any]],
    cluster: str,
    dialect: dialects.Dialect,
    execute: dialects.Execute,
) -> int:
    """The upsert statements of stamped rows, run by ``execute``; returns the rows the
    guard kept (stale, or another cluster's)."""
    stale = 0
    for group in statements(rows):
        kept = await dialect.upsert(execute, table, group)
        if kept:
            await _say_foreign(table, [row[table.key] for row in group], cluster, dialect, execute)
        stale += kept
    return stale


async def _mark_measured(
    execute: dialects.Execute,
    dialect: dialects.Dialect,
    rows: Sequence[Mapping[str, Any]],
    now: datetime.datetime,
) -> None:
    """Mark the jobs of the measured summaries ``rows`` as measured at ``now``
    (``job_info.gmt_measured``, decision 47); a job marked keeps its first mark."""
    jobs = sorted({str(row["job_id"]) for row in rows if row["outcome"] == MEASURED})
    for start in range(0, len(jobs), ROWS_PER_STATEMENT):
        chunk = jobs[start : start + ROWS_PER_STATEMENT]
        marks = ", ".join([dialect.placeholder] * len(chunk))
        await execute(
            f"UPDATE job_info SET gmt_measured = {dialect.placeholder} "
            f"WHERE gmt_measured IS NULL AND job_id IN ({marks})",
            [dialect.value(now), *chunk],
        )


async def _insert(
    table: Table,
    rows: Sequence[dict[str, Any]],
    dialect: dialects.Dialect,
    execute: dialects.Execute,
) -> None:
    """The insert statements of stamped rows written once, run by ``execute``: a row
    whose unique key is stored already is left as it is. Weighed: a tail is large."""
    for group in statements(rows, _weight):
        await dialect.insert_new(execute, table, group)


async def _say_foreign(
    table: Table,
    uids: Sequence[str],
    cluster: str,
    dialect: dialects.Dialect,
    execute: dialects.Execute,
) -> None:
    """Log each of ``uids`` the guard kept because another cluster's row holds it
    (decision 35): a uid two clusters share, whose later writer is not written. Asked
    only of a statement whose guard kept rows, which is rare."""
    q, mark = dialect.quote, dialect.placeholder
    column = q("cluster")
    _, found = await execute(
        f"SELECT {q(table.key)} AS uid, {column} AS cluster FROM {q(table.name)} WHERE "
        f"{q(table.key)} IN ({', '.join([mark] * len(uids))}) AND {column} IS NOT NULL "
        f"AND {column} <> {mark}",
        [*uids, cluster],
    )
    for row in found[:FOREIGN_SAID]:
        logger.warning(
            "Not written: %s %s is cluster %s's, not this cluster's (%s): two clusters "
            "share the uid",
            table.name,
            shown(row["uid"]),
            shown(row["cluster"]),
            cluster,
        )
    if len(found) > FOREIGN_SAID:
        logger.warning(
            "Not written: %d more such rows of %s", len(found) - FOREIGN_SAID, table.name
        )


class Store:
    """Writes one cluster's rows and answers the attribution lookups, over the open
    Tortoise connection: every row it writes is ``cluster``'s (decision 35)."""

    def __init__(
        self, connection: BaseDBAsyncClient | None = None, cluster: str = DEFAULT_CLUSTER
    ) -> None:
        self._connection = connection
        # Set once at the operator's start, before anything is written (``app``).
        self.cluster = cluster

    @property
    def connection(self) -> BaseDBAsyncClient:
        """The connection in use: the one given, else Tortoise's default."""
        return self._connection or db.connection()

    async def upsert(
        self,
        model: type[Stamped],
        rows: Sequence[Row],
        connection: BaseDBAsyncClient | None = None,
    ) -> int:
        """Insert or update rows of ``model`` by their uid, skipping any older than the
        stored row, and the usage roll-up's step for them, as ``write_batch`` does.

        Returns how many rows were skipped as stale.
        """
        conn = connection or self.connection
        return await self._write(model, rows, dialects.of(conn), conn.execute_query)

    async def _write(
        self,
        model: type[Stamped],
        rows: Sequence[WrittenRow],
        dialect: dialects.Dialect,
        execute: dialects.Execute,
    ) -> int:
        """One table's rows in the caller's transaction: stamped, then the roll-up's rows
        held, the rows upserted, the days they change written (two steps, one commit);
        rows written once are inserted (no roll-up, none stale)."""
        prepared = _stamped(model, rows, self.cluster)
        if model in INSERTED:
            await _insert(INSERTED[model], prepared, dialect, execute)
            return 0
        rollup = _rollup(model, prepared)
        await rollup.lock(execute, dialect)
        stale = await _upsert(TABLES[model], prepared, self.cluster, dialect, execute)
        await rollup.write(execute, dialect)
        if model is Summary:
            await _mark_measured(execute, dialect, prepared, utcnow())
        return stale

    async def write_batch(
        self, batch: Mapping[K, tuple[type[Stamped], Sequence[WrittenRow]]]
    ) -> dict[K, int]:
        """Upsert groups of rows, of any tables, in one transaction (one commit for all),
        each group with its step of the daily usage roll-up (``_write``): the days of the
        jobs whose pods finished rewritten, the days of the jobs written refreshed. Rows
        of a table written once are inserted in the same transaction.

        Returns the number of stale rows skipped in each group.
        """
        conn = self.connection
        dialect = dialects.of(conn)
        async with dialect.transaction(conn) as execute:
            return {
                group: await self._write(model, rows, dialect, execute)
                for group, (model, rows) in batch.items()
            }

    async def live_job_uid(self, namespace: str, name: str) -> str | None:
        """The uid of the newest job of that name still in the cluster (this store's), if
        any is stored."""
        job = (
            await Job.filter(cluster=self.cluster, namespace=namespace, name=name, is_in_etcd=True)
            .using_db(self.connection)
            .order_by("-gmt_created")
            .first()
            .only("job_id")
        )
        return job.job_id if job is not None else None

    async def pod_job_uid(self, pod_uid: str) -> str | None:
        """The job uid stored for a pod of this cluster, if the pod is stored."""
        pod = (
            await Pod.filter(cluster=self.cluster, pod_id=pod_uid)
            .using_db(self.connection)
            .first()
            .only("job_id")
        )
        return pod.job_id if pod is not None else None

    async def uids_in_etcd(
        self,
        model: type[Stamped],
        before: datetime.datetime,
        kinds: Iterable[tuple[str, str]] | None = None,
        kinds_without_group: Iterable[str] = (),
        namespace: str | None = None,
    ) -> list[str]:
        """Uids of this cluster's rows still marked in etcd and last written before
        ``before``, of one ``namespace`` (None: all, read through its index when given); of
        jobs, only those of the given (group, kind) pairs, and those written before
        ``api_version`` existed (it is NULL) of the kind names given apart."""
        key = TABLES[model].key
        query = model.filter(cluster=self.cluster, is_in_etcd=True, gmt_modified__lt=before)
        if namespace is not None:
            query = query.filter(namespace=namespace)
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

    @overload
    async def rows(self, model: type[Job], uids: Sequence[str]) -> list[JobRow]: ...
    @overload
    async def rows(self, model: type[Pod], uids: Sequence[str]) -> list[PodRow]: ...
    @overload
    async def rows(self, model: type[Event], uids: Sequence[str]) -> list[EventRow]: ...

    async def rows(self, model: type[Stamped], uids: Sequence[str]) -> Sequence[Row]:
        """This cluster's stored rows of these uids, as the upsert takes them."""
        key = TABLES[model].key
        query = model.filter(cluster=self.cluster, **{f"{key}__in": list(uids)})
        found = await query.using_db(self.connection).values()
        # The columns but ``id`` are the row's keys: a test holds the shapes to the models.
        return [cast(Row, {k: v for k, v in row.items() if k != "id"}) for row in found]

    async def latest_attempt(self, workload_uid: str) -> AttemptRow | None:
        """The stored row of a Workload's latest attempt in this cluster, as the upsert
        takes it (times aware), if one is stored."""
        found = (
            await Attempt.filter(cluster=self.cluster, workload_id=workload_uid)
            .using_db(self.connection)
            .order_by("-quota_reserved_at")
            .first()
            .values()
        )
        if found is None:
            return None
        row = {
            key: aware(value) if isinstance(value, datetime.datetime) else value
            for key, value in found.items()
            if key != "id"
        }
        # The columns but ``id`` are the row's keys: a test holds the shapes to the models.
        return cast(AttemptRow, row)

    async def live_jobs(
        self, namespaces: Sequence[str] | None = None
    ) -> list[tuple[str, str, str]]:
        """(namespace, name, uid) of every job still in this cluster, oldest first; only
        of ``namespaces`` when given (a shard's)."""
        within = {} if namespaces is None else {"namespace__in": list(namespaces)}
        rows = (
            await Job.filter(cluster=self.cluster, is_in_etcd=True, **within)
            .using_db(self.connection)
            .order_by("gmt_created")
            .values_list("namespace", "name", "job_id")
        )
        return [(str(ns), str(name), str(uid)) for ns, name, uid in rows]

    async def recent_pods(
        self, since: datetime.datetime, limit: int, namespaces: Sequence[str] | None = None
    ) -> list[tuple[str, str]]:
        """(pod uid, job uid) of this cluster's pods still in it or written since ``since``; only
        of ``namespaces`` when given (a shard's).

        Events outlive their pod by up to an hour, so a pod gone recently may still be
        the subject of Events listed at start.
        """
        within = {} if namespaces is None else {"namespace__in": list(namespaces)}
        rows = (
            await Pod.filter(
                Q(is_in_etcd=True) | Q(gmt_modified__gte=since), cluster=self.cluster, **within
            )
            .using_db(self.connection)
            .limit(limit)
            .values_list("pod_id", "job_id")
        )
        return [(str(pod), str(job)) for pod, job in rows]


async def quotas_of(store: Store, queue_uid: str) -> tuple[bool, list[QuotaRow]]:
    """Whether the store's cluster's archive holds any quota row of a ClusterQueue, and
    its rows in force (``valid_until`` NULL), as the upsert takes them (times aware)."""
    rows = Quota.filter(cluster=store.cluster, queue_id=queue_uid).using_db(store.connection)
    found = await rows.filter(valid_until__isnull=True).values()
    known = bool(found) or await rows.exists()
    return known, [
        cast(
            QuotaRow,
            {
                k: aware(v) if isinstance(v, datetime.datetime) else v
                for k, v in row.items()
                if k != "id"
            },
        )
        for row in found
    ]
