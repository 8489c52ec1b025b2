"""A day's file written a batch of rows at a time: Parquet row groups with pyarrow (the
only module of the export that imports it), or CSV lines by the one CSV writer
(``csvsafe``, decision 40)."""

import datetime
import pathlib
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from jobarchive.core import csvsafe
from jobarchive.exporting.columns import COLUMNS, NAMES, NUMBERS, TIMES

_TYPES = {
    "string": pa.string(),
    "double": pa.float64(),
    "int32": pa.int32(),
    "timestamp[us, UTC]": pa.timestamp("us", tz="UTC"),
}
SCHEMA = pa.schema([pa.field(column.name, _TYPES[column.type]) for column in COLUMNS])
# How CSV writes a time, in UTC: as pyarrow wrote it before, and as every reader given
# the column's type reads it.
CSV_TIME = "%Y-%m-%d %H:%M:%S.%fZ"


def _csv_row(row: dict[str, Any]) -> dict[str, Any]:
    """A row with its times (the columns of a timestamp type) as CSV writes them."""
    times = {
        name: row[name].astimezone(datetime.UTC).strftime(CSV_TIME)
        for name in TIMES
        if row.get(name) is not None
    }
    return {**row, **times}


class DayFile:
    """One day's file being written at ``path``, in ``format``."""

    def __init__(self, path: pathlib.Path, format: str) -> None:
        self.path = path
        self.rows = 0
        self._parquet = (
            pq.ParquetWriter(path, SCHEMA, compression="zstd") if format == "parquet" else None
        )
        self._csv = path.open("w", encoding="utf-8", newline="") if format == "csv" else None
        if self._csv is not None:
            self._csv.write(csvsafe.header(NAMES))

    def write(self, rows: Sequence[dict[str, Any]]) -> None:
        """Append rows (dicts of ``COLUMNS``): a Parquet file gets them as a row group,
        a CSV file as lines, its number columns as numbers and every other as text."""
        if self._parquet is not None and rows:
            self._parquet.write_table(pa.Table.from_pylist(list(rows), schema=SCHEMA))
        elif self._csv is not None:
            self._csv.writelines(csvsafe.line(_csv_row(row), NAMES, NUMBERS) for row in rows)
        self.rows += len(rows)

    def close(self) -> None:
        """Finish the file (a Parquet file's footer); a day without jobs is a file of no
        rows (a CSV file its header alone), so that its day is replaced too."""
        if self._parquet is not None:
            self._parquet.close()
        elif self._csv is not None:
            self._csv.close()
