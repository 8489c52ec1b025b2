"""A CSV file the project wrote (``csvsafe``) read back as its users read it: Python's
csv module, pyarrow's CSV reader and DuckDB's, each told the dialect as
docs/usage-and-exports.md says (quotes, a missing value an unquoted empty cell, line
breaks inside quoted cells) and each column's type. And the rule a read cell is held
to: nothing a spreadsheet runs."""

import csv
import pathlib
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.csv as pa_csv

from jobarchive.exporting import columns
from jobarchive.reading import usage

# A column's type as each typed reader is told it.
TYPES = {
    "text": (pa.string(), "VARCHAR"),
    "double": (pa.float64(), "DOUBLE"),
    "integer": (pa.int64(), "BIGINT"),
    "time": (pa.timestamp("us", tz="UTC"), "TIMESTAMPTZ"),
}
# The export's columns as their declared types say a reader is told them.
EXPORT_TYPES = {
    column.name: {"string": "text", "double": "double", "int32": "integer"}.get(column.type, "time")
    for column in columns.COLUMNS
}


def usage_types(names: Sequence[str]) -> dict[str, str]:
    """The usage CSV's columns (``usage.columns``) and their types: counts, figures,
    and text (the group, the period, the reasons)."""
    counts = {*usage.COUNTS, usage.UNKNOWN_JOBS}
    figures = {*usage.FIGURES, *usage.QUEUE_FIGURES, *usage.EFFICIENCY} - counts
    return {
        name: "integer" if name in counts else "double" if name in figures else "text"
        for name in names
    }


# The page's reader options (pyarrow's ``newlines_in_values`` too, below): the dialect, and
# an unquoted empty cell a missing value, a quoted one an empty text.
PYARROW_OPTIONS = {"strings_can_be_null": True, "quoted_strings_can_be_null": False}
DUCKDB_OPTIONS = (
    "header = true, delim = ',', quote = '\"', escape = '\"', allow_quoted_nulls = false"
)


def python_rows(path: pathlib.Path) -> tuple[list[str], list[list[str]]]:
    """The header and the rows as Python's csv module reads them (a missing value and
    an empty text alike ``""``: it cannot tell them apart)."""
    with open(path, newline="", encoding="utf-8") as file:
        header, *rows = list(csv.reader(file))
    return header, rows


def pyarrow_rows(path: pathlib.Path, types: Mapping[str, str]) -> list[dict[str, Any]]:
    """The rows as pyarrow reads them, in small blocks so that a row's line breaks
    may fall across one, told each column's type and the page's options."""
    table = pa_csv.read_csv(
        path,
        read_options=pa_csv.ReadOptions(block_size=4096),
        parse_options=pa_csv.ParseOptions(newlines_in_values=True),
        convert_options=pa_csv.ConvertOptions(
            column_types={name: TYPES[kind][0] for name, kind in types.items()},
            **PYARROW_OPTIONS,
        ),
    )
    assert table.column_names == list(types)
    return table.to_pylist()


def duckdb_rows(path: pathlib.Path, types: Mapping[str, str]) -> list[dict[str, Any]]:
    """The rows as DuckDB reads them, told each column's type and the page's options."""
    columns = ", ".join(f"'{name}': '{TYPES[kind][1]}'" for name, kind in types.items())
    with duckdb.connect() as connection:
        connection.execute("SET TimeZone = 'UTC'")
        found = connection.execute(
            # One file: its day's folder's name is not read as a column.
            f"SELECT * FROM read_csv(?, {DUCKDB_OPTIONS}, hive_partitioning = false, "
            f"columns = {{{columns}}})",
            [str(path)],
        )
        names = [column[0] for column in found.description]
        assert names == list(types)
        return [dict(zip(names, row, strict=True)) for row in found.fetchall()]


def every_reader(path: pathlib.Path, types: Mapping[str, str]) -> dict[str, list[dict[str, Any]]]:
    """The rows by each reader, by reader's name; Python's as text, after checking its
    header."""
    header, rows = python_rows(path)
    assert header == list(types)
    return {
        "csv": [dict(zip(header, row, strict=True)) for row in rows],
        "pyarrow": pyarrow_rows(path, types),
        "duckdb": duckdb_rows(path, types),
    }


def runs(cell: str) -> bool:
    """Whether a spreadsheet could take a cell for a formula (OWASP's CSV injection):
    it begins with a TAB, CR or NUL, or with ``=``, ``+``, ``-`` or ``@`` after any
    spaces and controls."""
    if cell[:1] in ("\t", "\r", "\0"):
        return True
    for char in cell:
        if not (char.isspace() or unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp")):
            return char in ("=", "+", "-", "@")
    return False
