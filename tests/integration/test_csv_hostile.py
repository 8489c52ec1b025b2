"""A tenant's text in every CSV the project writes, through the real components, on both
databases: jobs recorded through the real write path, a hostile owner in their
``kubedl.io/tenancy`` annotation and a hostile queue in Kueue's label, then read as a
user reads them: ``GET /api/v1/usage`` with ``Accept: text/csv`` from a real ``jobarchive
serve`` over HTTP, ``jobarchive usage -o csv``, and ``jobarchive export --format csv``.
Each read back by Python's csv, pyarrow and DuckDB: a row per group or job, the text in
its one cell (with a leading ``'`` where a spreadsheet would run it), no cell that runs.
A job's name is a DNS name, which cannot begin with ``-``; an owner and a queue can."""

import asyncio
import pathlib
from collections.abc import Mapping

import aiohttp
import pytest

from jobarchive.reading import usage
from tests.support.csv_readers import EXPORT_TYPES, every_reader, runs, usage_types
from tests.support.history import History
from tests.support.serve import serve_process
from tests.support.small_archive import run
from tests.support.waiting import answering

# A CR ends the row for every reader, and the formula after it began the next.
OWNER = "alice\r=cmd|' /C calc'!A0"
# U+2028: a line break to a spreadsheet, and a formula after it.
QUEUE = "q\u2028@SUM(1)"
DASHED_OWNER, DASHED_QUEUE = "-2+3", "-1"
WINDOW = ("--since", "2026-11-20", "--until", "2026-11-21")
# Each group's cell as every reader reads it: as stored, or neutralised with one '.
OWNERS = {OWNER, "'" + DASHED_OWNER}
QUEUES = {QUEUE, "'" + DASHED_QUEUE}


@pytest.fixture
async def hostile(database: str, db_url: str) -> str:
    """Two jobs of 2026-11-20, each owner and queue a tenant's hostile text."""
    async with History() as history:
        for name, owner, queue in (("mnist", OWNER, QUEUE), ("bert", DASHED_OWNER, DASHED_QUEUE)):
            finished = "2026-11-20T11:00:00Z"
            await history.job(name, owner=owner, queue=queue, status="Succeeded", finished=finished)
    return db_url


def check(path: pathlib.Path, types: Mapping[str, str], column: str, cells: set[str]) -> None:
    """Every reader reads two rows of ``path``, ``column`` holding ``cells``, and no text
    cell that a spreadsheet would run."""
    for reader, rows in every_reader(path, types).items():
        assert {row[column] for row in rows} == cells, reader
        texts = [row[name] for row in rows for name, kind in types.items() if kind == "text"]
        assert not any(runs(cell) for cell in texts if cell is not None), reader


async def test_the_apis_usage_csv_keeps_each_tenants_text_in_its_cell(
    hostile: str, tmp_path: pathlib.Path
) -> None:
    async with serve_process(hostile, tmp_path / "serve.log", "--auth", "none") as running:
        base = f"http://127.0.0.1:{running.port}/api/v1"
        await answering(f"{base}/openapi.json")
        async with aiohttp.ClientSession() as session:
            for group, cells in (("owner", OWNERS), ("queue", QUEUES)):
                query = {"by": group, "since": WINDOW[1], "until": WINDOW[3]}
                headers = {"Accept": "text/csv"}
                async with session.get(f"{base}/usage", params=query, headers=headers) as got:
                    assert got.status == 200, await got.text()
                    assert got.headers["Content-Type"].startswith("text/csv")
                    (tmp_path / f"{group}.csv").write_bytes(await got.read())
                types = usage_types(usage.columns(group, None))
                check(tmp_path / f"{group}.csv", types, group, cells)


async def test_the_clis_usage_csv_keeps_each_tenants_text_in_its_cell(
    hostile: str, tmp_path: pathlib.Path
) -> None:
    # The command line writes what acts on a terminal or breaks a line as its escape, as
    # in all it prints (``visible``): in the same cell, still one row.
    printed = {
        "owner": {"alice\\r=cmd|' /C calc'!A0", "'-2+3"},
        "queue": {"q\\u2028@SUM(1)", "'-1"},
    }
    for group, shown in printed.items():
        done = await asyncio.to_thread(run, hostile, "usage", "--by", group, *WINDOW, "-o", "csv")
        assert done.returncode == 0, done.stderr
        (tmp_path / f"{group}.csv").write_text(done.stdout, encoding="utf-8", newline="")
        types = usage_types(usage.columns(group, None))
        check(tmp_path / f"{group}.csv", types, group, shown)


async def test_the_exports_csv_keeps_each_tenants_text_in_its_cell(
    hostile: str, tmp_path: pathlib.Path
) -> None:
    folder = tmp_path / "export"
    options = ("--to", str(folder), "--format", "csv")
    done = await asyncio.to_thread(run, hostile, "export", *WINDOW, *options)
    assert done.returncode == 0, done.stderr
    day = folder / "date=2026-11-20" / "part-0.csv"
    check(day, EXPORT_TYPES, "owner", OWNERS)
    check(day, EXPORT_TYPES, "queue", QUEUES)
    check(day, EXPORT_TYPES, "name", {"mnist", "bert"})
