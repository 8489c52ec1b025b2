"""The write path on MariaDB: this store's group commit against a select-then-save per
object through Tortoise (the naive baseline, as KubeDL's backend writes) and against
raw aiomysql multi-row upserts of the same rows (the limit).

Every method writes the same rows twice, into a fresh database: an insert pass and an
update pass one resourceVersion later. Figures are rows per second over both passes.
"""

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

import aiomysql
import pymysql
from pymysql.constants import ER

from bench import data
from bench.data import Rows
from jobarchive.config import DbTls
from jobarchive.core.bounded import chunks
from jobarchive.core.rows import DEFAULT_CLUSTER, Row
from jobarchive.storage import database as db
from jobarchive.storage.dialects import MYSQL
from jobarchive.storage.models import TABLES, Event, Job, Pod, Stamped
from jobarchive.storage.store import Store
from jobarchive.storage.writer import Writer

MODELS: dict[str, type[Stamped]] = {"job": Job, "pod": Pod, "event": Event}


async def naive(rows: Rows, connections: int = 4) -> None:
    """Select, then create or update and save, one object at a time, over 4 connections."""
    work: list[tuple[type[Stamped], dict[str, Any]]] = [
        (model, dict(row)) for model, rows_ in rows.by_model() for row in rows_
    ]

    async def one_connection(share: list[tuple[type[Stamped], dict[str, Any]]]) -> None:
        for model, row in share:
            key = TABLES[model].key
            found = await model.filter(**{key: row[key]}).first()
            if found is None:
                await model.create(**row)
            else:
                found.update_from_dict({k: v for k, v in row.items() if k != "gmt_created"})
                await found.save()

    await asyncio.gather(*(one_connection(work[i::connections]) for i in range(connections)))


async def grouped(rows: Rows, handlers: int = 1000) -> None:
    """This store: many concurrent handlers, one row each at a time, through the Writer."""
    writer = Writer(Store())
    writer.start()
    queue: asyncio.Queue[tuple[type[Stamped], Row]] = asyncio.Queue()
    for model, rows_ in rows.by_model():
        for row in rows_:
            queue.put_nowait((model, row))

    async def handler() -> None:
        while not queue.empty():
            model, row = queue.get_nowait()
            errors = await writer.write(model, [row])
            assert errors == [None], errors

    await asyncio.gather(*(handler() for _ in range(handlers)))
    await writer.stop()


async def raw(rows: Rows, url: str, batch: int = 500, connections: int = 4) -> None:
    """The limit: aiomysql executemany of plain multi-row upserts over 4 connections,
    a commit per 500 rows; no guard, no ORM, no per-row bookkeeping."""
    parts = urlsplit(url)
    work: list[tuple[str, list[list[Any]]]] = []
    for model, rows_ in rows.by_model():
        spec = TABLES[model]
        sets = ", ".join(f"`{c}` = VALUES(`{c}`)" for c in spec.columns if c != spec.key)
        sql = (
            f"INSERT INTO `{spec.name}` ({', '.join(f'`{c}`' for c in spec.columns)}) "
            f"VALUES ({', '.join(['%s'] * len(spec.columns))}) ON DUPLICATE KEY UPDATE {sets}"
        )
        for piece in chunks(rows_, batch):
            chunk = []
            for row in piece:
                stamped = dict(row)
                model.stamp(stamped)
                stamped["cluster"] = DEFAULT_CLUSTER
                chunk.append([MYSQL.value(stamped[c]) for c in spec.columns])
            work.append((sql, chunk))

    async def one_connection(share: list[tuple[str, list[list[Any]]]]) -> None:
        conn = await aiomysql.connect(
            host=parts.hostname,
            port=parts.port or 3306,
            user=parts.username or "root",
            password=parts.password or "",
            db=parts.path.strip("/"),
            autocommit=False,
            init_command="SET time_zone='+00:00'",
        )
        try:
            for sql, chunk in share:
                for _attempt in range(10):
                    try:
                        async with conn.cursor() as cursor:
                            await cursor.executemany(sql, chunk)
                        await conn.commit()
                        break
                    except pymysql.err.OperationalError as exc:
                        # Concurrent upserts into one unique index can deadlock; InnoDB
                        # rolls one back and it is simply done again, as the store does.
                        if exc.args[0] != ER.LOCK_DEADLOCK:
                            raise
                        await conn.rollback()
        finally:
            conn.close()

    await asyncio.gather(*(one_connection(work[i::connections]) for i in range(connections)))


async def measure(
    name: str, url: str, run: Callable[[Rows], Awaitable[None]], first: Rows, second: Rows
) -> float:
    """Rows per second of one method over an insert and an update pass, in a fresh schema."""
    await db.open_database(url, pool_size=8, encryption=DbTls())
    conn = db.connection()
    for table in ("job_info", "replica_info", "event_info"):
        await conn.execute_script(f"DELETE FROM {table}")
    total = len(first) + len(second)
    started = time.perf_counter()
    await run(first)
    await run(second)
    elapsed = time.perf_counter() - started
    counts = [await model.all().count() for model in MODELS.values()]
    await db.close_database()
    assert sum(counts) == total // 2, (name, counts)
    return total / elapsed


async def run(url: str, jobs: int = 20, pods_per_job: int = 250) -> dict[str, float]:
    """All three methods on the same rows; returns rows/s by method."""
    first = data.rows(jobs, pods_per_job)
    second = data.newer(first)
    figures = {
        "naive": await measure("naive", url, naive, first, second),
        "store": await measure("store", url, grouped, first, second),
        "raw": await measure("raw", url, lambda rows: raw(rows, url), first, second),
    }
    return figures
