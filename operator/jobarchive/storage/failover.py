"""Reaching a MySQL database over several hosts (decision 37).

The Tortoise engine of every MySQL connection (``client_class``). Its pool is a
``HostPool``: one aiomysql pool at a time, opened on the first host of the URL's
list that accepts a connection and, on Galera, is ready and synced; each of its
connections is handed back to the pool it came from. A connection that fails
because the database is away (``failures.is_unavailable``: refused, lost, or
Galera's 1047 on a node out of the primary component) retires its pool: its idle
connections are closed at once, the busy ones when handed back, none is lent again,
and the next statement opens a pool anew, trying the hosts in order from the first.

A ``writer`` client (the operator's own connection, not the read side's) passes over
a host that is read-only (a replica, InnoDB Cluster's secondary, a managed MySQL's
old primary after a failover), and 1290 on it retires the pool as the others do.
On Galera, its SELECTs wait until the node has applied every write the
cluster committed before them (``wsrep_sync_wait``, statement by statement); on any
other server they are sent unchanged.
"""

import asyncio
import dataclasses
import logging
from collections.abc import Sequence
from typing import Any

import aiomysql
from tortoise.backends.base.client import (
    PoolConnectionWrapper,
    TransactionalDBClient,
    TransactionContextPooled,
)
from tortoise.backends.mysql.client import MySQLClient, TransactionWrapper
from tortoise.connection import get_connections
from tortoise.exceptions import DBConnectionError

from jobarchive.storage import failures

logger = logging.getLogger(__name__)
SYNCED = "4"
CAUSAL_PREFIX = "SET STATEMENT wsrep_sync_wait=1 FOR "


@dataclasses.dataclass(frozen=True)
class NodeState:
    """What a host said when its pool was opened: whether its reads can wait for the
    cluster (a MariaDB Galera node: ``SET STATEMENT`` is MariaDB's, so a Percona
    XtraDB Cluster node is read as it answers), and why it cannot serve (None: it can)."""

    causal: bool
    refusal: str | None = None


async def node_state(conn: aiomysql.Connection, writer: bool) -> NodeState:
    """Whether a server is a Galera node, and whether it is ready and synced.

    ``SELECT 1`` is no test: a node out of the primary component answers it and
    refuses everything else. Plain MariaDB has ``wsrep_ready`` (OFF) too, so the node
    is known by ``wsrep_on``; MySQL has neither variable.
    """
    async with conn.cursor() as cursor:
        await cursor.execute(
            "SHOW GLOBAL VARIABLES WHERE Variable_name IN ('wsrep_on', 'read_only', 'version')"
        )
        found = dict(await cursor.fetchall())
        causal = found.get("wsrep_on") == "ON" and "MariaDB" in found.get("version", "")
        if writer and found.get("read_only") == "ON":
            return NodeState(causal, refusal="read-only (@@read_only ON: not the primary)")
        if found.get("wsrep_on") != "ON":
            return NodeState(causal=False)
        await cursor.execute(
            "SHOW GLOBAL STATUS WHERE Variable_name IN "
            "('wsrep_ready', 'wsrep_local_state', 'wsrep_local_state_comment')"
        )
        status = dict(await cursor.fetchall())
    if status.get("wsrep_ready") == "ON" and status.get("wsrep_local_state") == SYNCED:
        return NodeState(causal)
    comment = status.get("wsrep_local_state_comment", "unknown")
    ready = status.get("wsrep_ready", "unknown")
    return NodeState(causal, refusal=f"Galera node not ready (wsrep_ready {ready}, {comment})")


class NotUsable(DBConnectionError):
    """A host that answers but must not be used: read-only, or a Galera node not synced."""


class HostPool:
    """The pool Tortoise sees: the current aiomysql pool over one host, and those
    retired, until their connections are handed back."""

    def __init__(self, client: "FailoverClient", template: dict[str, Any]) -> None:
        self.client = client
        self.template = template
        self.current: aiomysql.Pool | None = None
        self.host: tuple[str, int] | None = None
        self.causal = False
        self._owners: dict[aiomysql.Connection, aiomysql.Pool] = {}
        self._retired: list[aiomysql.Pool] = []
        self._opening = asyncio.Lock()

    async def open(self) -> aiomysql.Pool:
        """The current pool, opened on the first usable host if there is none;
        DBConnectionError naming each host's reason when none is usable."""
        async with self._opening:
            if self.current is None:
                self.current = await self._first_usable()
            return self.current

    async def _first_usable(self) -> aiomysql.Pool:
        reasons: list[str] = []
        for host, port in self.client.hosts:
            try:
                pool = await self._usable(host, port)
            except failures.ERRORS as exc:
                if len(self.client.hosts) == 1:
                    # One host: its own error, as Tortoise's client would raise it.
                    raise DBConnectionError(f"Can't connect to {host}:{port}") from exc
                reasons.append(f"{host}:{port}: {failures.describe(exc)}")
                continue
            if reasons:
                logger.warning("Using database host %s:%d (%s)", host, port, "; ".join(reasons))
            return pool
        raise DBConnectionError("no database host is usable: " + "; ".join(reasons))

    async def _usable(self, host: str, port: int) -> aiomysql.Pool:
        """A pool on the host, if it is one to use; else the reason, raised."""
        pool = await aiomysql.create_pool(host=host, port=port, **self.template)
        try:
            async with pool.acquire() as conn:
                state = await node_state(conn, self.client.writer)
            if state.refusal is not None:
                raise NotUsable(state.refusal)
        except BaseException:
            pool.close()
            await pool.wait_closed()
            raise
        self.host, self.causal = (host, port), state.causal
        return pool

    async def acquire(self) -> aiomysql.Connection:
        """A connection of the current pool; a pool whose host refuses it is retired.

        A pool retired while this waited (another task found its host away) refuses
        or fails the wait: the connection is then asked of the pool opened anew.
        """
        while True:
            pool = await self.open()
            try:
                conn = await pool.acquire()
            except Exception as exc:
                if pool is not self.current:
                    continue
                await self.failed(pool, exc)
                raise
            self._owners[conn] = pool
            return conn

    async def release(self, conn: aiomysql.Connection) -> None:
        """Hand a connection back to the pool it came from."""
        pool = self._owners.pop(conn, None)
        if pool is not None:
            await pool.release(conn)

    def owner(self, conn: aiomysql.Connection | None) -> aiomysql.Pool | None:
        """The pool a connection lent came from."""
        return self._owners.get(conn) if conn is not None else None

    async def failed_on(self, conn: aiomysql.Connection | None, error: BaseException) -> None:
        """A statement on ``conn`` failed: its pool is retired if the database is away."""
        pool = self.owner(conn)
        if pool is not None:
            await self.failed(pool, error)

    async def failed(self, pool: aiomysql.Pool, error: BaseException) -> None:
        """Retire ``pool`` if ``error`` says its host is away; an older pool's late
        failure leaves the current one alone."""
        current = self.current
        if current is None or current is not pool or not failures.is_unavailable(error):
            return
        self.current = None
        current.close()
        await current.clear()
        self._retired = [old for old in self._retired if old.size] + [current]

    def close(self) -> None:
        """Lend no more connections, from any pool."""
        for pool in self._pools():
            pool.close()

    async def wait_closed(self) -> None:
        """Wait until every pool's connections are handed back and closed."""
        for pool in self._pools():
            await pool.wait_closed()
        self.current = None
        self._retired = []

    def _pools(self) -> list[aiomysql.Pool]:
        return [*self._retired, *([self.current] if self.current is not None else [])]


class FailoverClient(MySQLClient):
    """Tortoise's MySQL client over a ``HostPool``."""

    def __init__(
        self, *, hosts: Sequence[Sequence[Any]] = (), writer: bool = False, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.hosts = tuple((str(host), int(port)) for host, port in hosts) or (
            (self.host, self.port),
        )
        self.writer = writer
        self._pool: Any = None

    async def create_connection(self, with_db: bool) -> None:
        """A HostPool over the hosts, its first pool opened now."""
        template = {
            "user": self.user,
            "password": self.password,
            "db": self.database if with_db else None,
            "autocommit": True,
            "charset": self.charset,
            "minsize": self.pool_minsize,
            "maxsize": self.pool_maxsize,
            **self.extra,
        }
        pool = HostPool(self, template)
        await pool.open()
        self._pool = pool
        await self._post_connect()

    def acquire_connection(self) -> PoolConnectionWrapper[Any]:
        """A connection for one statement, its failure told to the pool."""
        return _Statement(self, self._pool_init_lock)

    def _in_transaction(self) -> TransactionContextPooled:
        return _Transaction(TransactionWrapper(self), self._pool_init_lock)

    @property
    def serving(self) -> tuple[str, int] | None:
        """The host the pool now uses; None before it is opened or after it failed."""
        if isinstance(self._pool, HostPool) and self._pool.current is not None:
            return self._pool.host
        return None

    @property
    def causal(self) -> bool:
        """Whether the host now in use can make a read wait for the cluster."""
        return isinstance(self._pool, HostPool) and self._pool.causal

    async def execute_query(
        self, query: str, values: list[Any] | None = None
    ) -> tuple[int, list[dict[Any, Any]]]:
        """The statement; the writer's SELECT asks for causality where the host can."""
        if self.writer and self.causal and query.lstrip()[:6].upper() == "SELECT":
            query = CAUSAL_PREFIX + query
        found: tuple[int, list[dict[Any, Any]]] = await super().execute_query(query, values)
        return found


class _Statement(PoolConnectionWrapper[Any]):
    async def __aexit__(self, exc_type: Any, exc_val: Any, exc_tb: Any) -> None:
        if exc_val is not None:
            await self.client._pool.failed_on(self.connection, exc_val)
        await super().__aexit__(exc_type, exc_val, exc_tb)


class _Transaction(TransactionContextPooled):
    """Tortoise's pooled transaction, but a BEGIN that fails hands its connection back
    and leaves the task's context as it was, and a failure tells the pool."""

    async def __aenter__(self) -> TransactionalDBClient:
        await self.ensure_connection()
        pool: HostPool = self.client._parent._pool
        self.client._connection = await pool.acquire()
        try:
            await self.client.begin()
        except BaseException as exc:
            await pool.failed_on(self.client._connection, exc)
            await pool.release(self.client._connection)
            raise
        self.token = get_connections().set(self.connection_name, self.client)
        return self.client

    async def __aexit__(self, exc_type: Any, exc_val: Any, exc_tb: Any) -> None:
        pool: HostPool = self.client._parent._pool
        # Told before Tortoise hands the connection back, after which its pool is unknown.
        owner = pool.owner(self.client._connection)
        if exc_val is not None and owner is not None:
            await pool.failed(owner, exc_val)
        try:
            await super().__aexit__(exc_type, exc_val, exc_tb)
        except BaseException as exc:
            if owner is not None:
                await pool.failed(owner, exc)
            raise


client_class = FailoverClient
