"""A day's file written with pyarrow, a batch of rows at a time (Parquet row groups, or
CSV lines): the only module of the export that imports pyarrow."""

import pathlib
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from jobarchive.exporting.columns import COLUMNS
from jobarchive.reading.usage import FORMULA

_TYPES = {
    "string": pa.string(),
    "double": pa.float64(),
    "int32": pa.int32(),
    "timestamp[us, UTC]": pa.timestamp("us", tz="UTC"),
}
SCHEMA = pa.schema([pa.field(column.name, _TYPES[column.type]) for column in COLUMNS])


def _quoted(row: dict[str, Any]) -> dict[str, Any]:
    return {
        name: "'" + value if isinstance(value, str) and value.startswith(FORMULA) else value
        for name, value in row.items()
    }


class DayFile:
    """One day's file being written at ``path``, in ``format``."""

    def __init__(self, path: pathlib.Path, format: str) -> None:
        self.path = path
        self.rows = 0
        self.csv = format == "csv"
        self._writer: Any = (
            pq.ParquetWriter(path, SCHEMA, compression="zstd")
            if format == "parquet"
            else pa_csv.CSVWriter(path, SCHEMA)
        )

    def write(self, rows: Sequence[dict[str, Any]]) -> None:
        """Append rows (dicts of ``COLUMNS``); a Parquet file gets them as a row group, a
        CSV file with text a spreadsheet would run as a formula quoted with ``'``."""
        if rows:
            cells = [_quoted(row) for row in rows] if self.csv else list(rows)
            self._writer.write_table(pa.Table.from_pylist(cells, schema=SCHEMA))
            self.rows += len(rows)

    def close(self) -> None:
        """Finish the file (a Parquet file's footer); a day without jobs is a file of no
        rows, so that its day is replaced too."""
        self._writer.close()
