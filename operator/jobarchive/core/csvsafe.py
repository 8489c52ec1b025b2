"""The one CSV writer of every CSV the project writes (the API's and the CLI's usage,
the export's days): text that no reader splits into rows or columns and no spreadsheet
runs as a formula (decision 40). Pure and standard library only, so that every part
may use it.

The dialect: ``,`` between cells, ``\\n`` after each line (the header's too), every
text cell between ``"`` with a ``"`` in it doubled, a number bare, a missing value an
empty cell with no quotes. Quoting every text cell, rather than the ones that need it,
keeps every line or record separator a reader or a spreadsheet knows (CR, LF, VT, FF,
FS, GS, RS, NEL, U+2028, U+2029), the ``;`` of a spreadsheet's locale and NUL inside
their cell, and tells an empty text (``""``) from a missing one, and ``NULL`` or ``NA``
text from a missing value, for every reader that is told so (docs/usage-and-exports.md:
Python's csv, pyarrow, DuckDB read it back cell for cell)."""

import math
import unicodedata
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from jobarchive.core.visible import HIDDEN

# What a spreadsheet runs as a formula when a cell begins with it, after any spaces or
# controls it skips; and the characters that OWASP's guidance on CSV injection adds,
# which some spreadsheets take as the start of a cell's content.
FORMULA = ("=", "+", "-", "@")
LEADING = ("\t", "\r", "\0")
# What a text cell that a spreadsheet would run is given first: its value as text.
NEUTRALISER = "'"


def header(names: Sequence[str]) -> str:
    """The header line: each column's name as a text cell."""
    return ",".join(_text(name) for name in names) + "\n"


def line(row: Mapping[str, Any], names: Sequence[str], numbers: Collection[str]) -> str:
    """One row's line: its values under ``names``, in their order, those of the columns
    in ``numbers`` written as numbers, every other as text; a missing value (None, or
    no such key) an empty cell."""
    return ",".join(_cell(row.get(name), name in numbers) for name in names) + "\n"


def table(rows: Iterable[Mapping[str, Any]], names: Sequence[str], numbers: Collection[str]) -> str:
    """The header and every row's line, as ``header`` and ``line`` write them."""
    return header(names) + "".join(line(row, names, numbers) for row in rows)


def neutralised(text: str) -> str:
    """``text`` as a spreadsheet may show it and never run: with a leading ``'`` when it
    begins with a TAB, CR or NUL, or when its first character after any leading spaces
    or controls (which spreadsheets skip) is one of ``FORMULA``; as it is otherwise."""
    if text.startswith(LEADING) or _after_blanks(text).startswith(FORMULA):
        return NEUTRALISER + text
    return text


def _after_blanks(text: str) -> str:
    for index, char in enumerate(text):
        if not (char.isspace() or unicodedata.category(char) in HIDDEN):
            return text[index:]
    return ""


def _cell(value: Any, number: bool) -> str:
    if value is None:
        return ""
    if number:
        return _number(value)
    return _text(neutralised(str(value)))


def _text(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def _number(value: Any) -> str:
    # A column's type says it holds numbers: anything else is a bug, never text written
    # bare where nothing neutralises it.
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"a number column holds {type(value).__name__}, not a number")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"a number column holds {value}, which no CSV reader agrees on")
    return repr(value)
