"""An export's folder read as BI tools read it: one dataset, partitioned Hive-style."""

import pathlib
from typing import Any

import pyarrow.csv as pa_csv
import pyarrow.dataset as ds

from jobarchive.exporting.files import SCHEMA
from tests.support.csv_readers import PYARROW_OPTIONS


def read_export(root: pathlib.Path, format: str = "parquet") -> dict[str, dict[str, Any]]:
    """Every row of the folder by job uid, ``date`` from its folder's name; a CSV file
    has no types, so its reader is given the schema, as a BI tool's load is, and the
    options docs/usage-and-exports.md gives (``csv_readers``)."""
    typed = pa_csv.ConvertOptions(
        column_types={field.name: field.type for field in SCHEMA}, **PYARROW_OPTIONS
    )
    chosen = (
        ds.CsvFileFormat(
            parse_options=pa_csv.ParseOptions(newlines_in_values=True), convert_options=typed
        )
        if format == "csv"
        else format
    )
    table = ds.dataset(root, format=chosen, partitioning="hive").to_table()
    found = {row["job_uid"]: row for row in table.to_pylist()}
    assert len(found) == table.num_rows, "a job exported twice"
    return found
