"""Tables that fit the terminal they are printed in (decision 30): names and uids whole,
the least important columns left out and the cuttable ones cut (with "…") when it is
narrow, nothing wrapped or cut when the output is not a terminal."""

import dataclasses
import os
import shutil
import sys
import textwrap
from collections.abc import Sequence

import click

from jobarchive.visible import visible

# What a column costs beside its values: a space, the rule, a space.
SEPARATOR = 3


@dataclasses.dataclass(frozen=True)
class Column:
    """A column: its header; its rank (when the terminal is narrow, columns are taken in
    rank order, 0 first, while they fit); and the fewest characters it may be cut to,
    None for values that are never cut (a uid cut is no uid)."""

    header: str
    rank: int
    least: int | None = None


def width() -> int | None:
    """The width tables fit in: the terminal's (``COLUMNS`` when set, as for any
    program), or None, no limit, when the output is not a terminal and ``COLUMNS`` is
    not set (a file, a pipe: every line whole)."""
    columns = os.environ.get("COLUMNS", "")
    if (columns.isascii() and columns.isdigit() and int(columns) > 0) or sys.stdout.isatty():
        return shutil.get_terminal_size().columns
    return None


def fit(columns: Sequence[Column], natural: Sequence[int], room: int | None) -> list[int | None]:
    """Each column's width in ``room`` characters (None: left out), given the width of
    its widest value (``natural``): every column at that width when there is room;
    else, in rank order, each column that still fits, whole or cut to its ``least``,
    then what is left given back to the cut ones. The first in rank is always shown."""
    if room is None or _width(natural) <= room:
        return list(natural)
    ranked = sorted(range(len(columns)), key=lambda index: columns[index].rank)
    widths: list[int | None] = [None] * len(columns)
    for index in ranked:
        least = columns[index].least
        need = natural[index] if least is None else min(natural[index], least)
        if _width([*_shown(widths), need]) <= room or not _shown(widths):
            widths[index] = need
    for index in ranked:
        shown = widths[index]
        spare = room - _width(_shown(widths))
        if shown is not None and spare > 0:
            widths[index] = min(natural[index], shown + spare)
    return widths


def _shown(widths: Sequence[int | None]) -> list[int]:
    return [size for size in widths if size is not None]


def _width(widths: Sequence[int]) -> int:
    """How wide a table of columns this wide is."""
    return sum(widths) + SEPARATOR * (len(widths) - 1)


def print_table(columns: Sequence[Column], rows: Sequence[Sequence[str]]) -> None:
    """A table of values as Text, which rich neither parses for markup (``[link=...]``
    would be a hyperlink, ``[/]`` an error) nor highlights; a line after it names the
    columns the terminal had no room for."""
    # rich is imported when a table is printed, so that --help does not (decision 30).
    from rich.cells import cell_len
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    # Tabs as the spaces a terminal shows, so that each cell is measured as printed.
    cells = [[visible(cell, lines=True).expandtabs() for cell in row] for row in rows]
    natural = [
        max(
            cell_len(line)
            for text in (column.header, *(row[index] for row in cells))
            for line in text.split("\n")
        )
        for index, column in enumerate(columns)
    ]
    room = width()
    widths = fit(columns, natural, room)
    shown = Table(show_edge=False, pad_edge=False)
    for column, size in zip(columns, widths, strict=True):
        if size is not None:
            shown.add_column(column.header, width=size, no_wrap=True, overflow="ellipsis")
    for row in cells:
        shown.add_row(
            *(Text(cell) for cell, size in zip(row, widths, strict=True) if size is not None)
        )
    console = Console(width=_width(_shown(widths)), markup=False, emoji=False, highlight=False)
    console.print(shown)
    left_out = [column.header for column, size in zip(columns, widths, strict=True) if size is None]
    if left_out:
        note = f"(left out for want of room: {', '.join(left_out)}; -o json has all)"
        click.echo(textwrap.fill(note, room or len(note), break_on_hyphens=False))
