"""What the Galera tests share: a database on the cluster, a burst of versions through
the real writer, and a writer beside it on another node touching the same rows."""

import asyncio
import dataclasses
import threading
import time
import uuid
from collections.abc import Sequence

import pymysql

from jobarchive.storage.models import Job
from jobarchive.storage.writer import Writer
from soak.checker import Checker, read_tables
from soak.truth import UID_COLUMN, Row
from testbed.galera import GaleraCluster, GaleraNode
from testbed.mariadb import connect
from tests.support.rows import job


def create_database(cluster: GaleraCluster, *nodes: GaleraNode) -> str:
    """A new database, created through the first node (Galera replicates it); its URL
    over ``nodes`` (all by default), in that order."""
    name = f"jobarchive_galera_{uuid.uuid4().hex[:10]}"
    with connect(cluster.nodes[0].url) as conn, conn.cursor() as cursor:
        cursor.execute(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4")
    return f"{cluster.url(*nodes)}/{name}"


def rows_on(node: GaleraNode, database: str) -> dict[str, str]:
    """job_info's uid and version of every row, as one node has them."""
    with connect(node.url, database=database) as conn, conn.cursor() as cursor:
        cursor.execute("SELECT job_id, version FROM job_info")
        return {str(uid): str(version) for uid, version in cursor.fetchall()}


@dataclasses.dataclass
class Burst:
    """Versions 1..``versions`` of ``jobs`` jobs, each job's in order, all jobs at once;
    when each write returned (monotonic), and what it returned."""

    jobs: int
    versions: int
    returned: list[float] = dataclasses.field(default_factory=list)
    errors: list[BaseException] = dataclasses.field(default_factory=list)
    # Each job waits here after its version ``held_after`` until the gate opens, so that
    # a test can act in the middle of the burst however fast the writes return.
    held_after: int | None = None
    gate: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)

    @property
    def uids(self) -> list[str]:
        """The jobs' uids."""
        return [f"job-{index:04d}" for index in range(self.jobs)]

    async def run(self, writer: Writer) -> None:
        """Write every version of every job, each job's after its previous one returned."""
        await asyncio.gather(*(self._one(writer, uid) for uid in self.uids))

    async def _one(self, writer: Writer, uid: str) -> None:
        for version in range(1, self.versions + 1):
            row = job(uid=uid, version=str(version), name=uid, status=f"v{version}")
            result = await writer.write(Job, [row])
            self.returned.append(time.monotonic())
            self.errors.extend(error for error in result if error is not None)
            if version == self.held_after:
                await self.gate.wait()


class Beside(threading.Thread):
    """A writer on another node, updating ``remark`` of the same rows in transactions of
    ``size`` rows, each run again when Galera or InnoDB rolls it back."""

    def __init__(self, node: GaleraNode, database: str, uids: Sequence[str], size: int = 20):
        super().__init__(daemon=True)
        self.node, self.database, self.uids, self.size = node, database, list(uids), size
        self.stopping = threading.Event()
        self.committed = 0
        self.conflicts = 0

    def run(self) -> None:
        """Commit transactions until told to stop."""
        with connect(self.node.url, database=self.database) as conn:
            round_ = 0
            while not self.stopping.is_set():
                round_ += 1
                start = (round_ * self.size) % len(self.uids)
                chosen = sorted(self.uids[start : start + self.size])
                try:
                    self._transaction(conn, chosen, f"beside-{round_}")
                except pymysql.err.OperationalError as exc:
                    if exc.args[0] not in (1213, 1205):
                        raise
                    self.conflicts += 1
                    conn.rollback()

    def _transaction(
        self, conn: "pymysql.connections.Connection[object]", uids: list[str], remark: str
    ) -> None:
        conn.begin()
        with conn.cursor() as cursor:
            for uid in uids:
                cursor.execute("UPDATE job_info SET remark = %s WHERE job_id = %s", (remark, uid))
        conn.commit()
        self.committed += 1

    def stop(self) -> None:
        """Stop after the transaction in flight, and wait."""
        self.stopping.set()
        self.join(timeout=30)


def of_cluster(
    tables: dict[str, list[Row]], node: GaleraNode, database: str, cluster: str
) -> dict[str, list[Row]]:
    """The rows of ``tables`` (``read_tables``'s) that one cluster's operator wrote."""
    with connect(node.url, database=database) as conn, conn.cursor() as cursor:
        mine = {}
        for table, column in UID_COLUMN.items():
            cursor.execute(f"SELECT {column} FROM {table} WHERE cluster = %s", (cluster,))
            mine[table] = {uid for (uid,) in cursor.fetchall()}
    return {
        table: [row for row in rows if row[UID_COLUMN[table]] in mine[table]]
        for table, rows in tables.items()
    }


async def settled(
    checkers: dict[str, Checker], node: GaleraNode, database: str, within: float
) -> dict[str, list[str]]:
    """Each cluster's violations, once none is left or ``within`` seconds have passed;
    ``checkers`` by cluster name ("" for all rows)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while True:
        tables = await asyncio.to_thread(read_tables, node.url, database)
        found = {}
        for cluster, checker in checkers.items():
            rows = tables
            if cluster:
                rows = await asyncio.to_thread(of_cluster, tables, node, database, cluster)
            found[cluster] = checker.check(rows, loop.time())
        if not any(found.values()) or loop.time() > deadline:
            return found
        await asyncio.sleep(1.0)
