"""Tables that fit the terminal they are printed in (decision 30), as kubectl's read at
80 columns: the columns that tell most (``-o wide`` adds the others), names whole, the
least important columns left out and the cuttable ones cut to their most telling part
when it is narrow, nothing cut when the output is not a terminal or ``-o wide`` asks
for every column."""

import dataclasses
import os
import re
import shutil
import sys
import textwrap
from collections.abc import Callable, Sequence

import click

from jobarchive.core.visible import CUT, visible

# What a column costs beside its values: a space, the rule, a space.
SEPARATOR = 3


# A uid as Kubernetes makes them; an unnamed cluster is known by its kube-system's.
UID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
# What a cluster's uid is cut to where a table has no room for it: as a short commit.
UID_SHOWN = 8
EXIT_CODE = re.compile(r"\(exit code (-?\d+)\)")


@dataclasses.dataclass(frozen=True)
class Column:
    """A column: its header; its rank (when the terminal is narrow, columns are taken in
    rank order, 0 first, while they fit); the fewest characters it may be cut to, None
    for values that are never cut (a name cut is no name); ``kept``: shown however
    narrow the terminal (cut to its least when it may be); ``wide``: shown only with
    ``-o wide``; ``telling``: how a cell too wide for its column (of the width given)
    keeps what tells most of it, before it is cut with "…" at its end."""

    header: str
    rank: int
    least: int | None = None
    kept: bool = False
    wide: bool = False
    telling: Callable[[str, int], str] | None = None


def reason(remark: str, size: int) -> str:
    """A remark (or failure reasons) that has ``size`` characters, not more: each exit
    code as ``exit 137``, and where the explanation after ": " has no room, the head
    alone: ``OOMKilled (exit 137)``, never ``OOMKilled (exit code 1…``."""
    short = EXIT_CODE.sub(r"(exit \1)", remark)
    head = short.split(": ", 1)[0]
    # Room for ": " and a few characters of the explanation, else none of it.
    return head if len(head) < len(short) and size < len(head) + 6 else short


def reason_cell(failure_class: str | None, remark: str | None) -> str:
    """A pod's reason: its failure class, the raw reason after it as its detail (alone
    where it names the class already: ``OOMKilled (exit code 137)``)."""
    if not failure_class or (remark or "").startswith(failure_class):
        return remark or ""
    return f"{failure_class}; {remark}" if remark else failure_class


def cluster(name: str, wide: bool) -> str:
    """A cluster as a table shows it: by its name (``JOBARCHIVE_CLUSTER``); an unnamed
    one, known by a uid, by the uid's first characters, or whole with ``-o wide``."""
    return name[:UID_SHOWN] if not wide and UID.fullmatch(name) else name


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
    else the first in rank and the kept ones, then, in rank order, each column that
    still fits, each whole or cut to its ``least``, then what is left given back to the
    cut ones. Where the first and the kept ones do not fit, the line is wider than
    ``room`` (the terminal wraps it): no name is cut, no status or reason left out."""
    if room is None or _width(natural) <= room:
        return list(natural)
    ranked = sorted(range(len(columns)), key=lambda index: columns[index].rank)
    needs = [
        size if column.least is None else min(size, column.least)
        for column, size in zip(columns, natural, strict=True)
    ]
    widths: list[int | None] = [None] * len(columns)
    for index in ranked:
        if index == ranked[0] or columns[index].kept:
            widths[index] = needs[index]
    for index in ranked:
        if widths[index] is None and _width([*_shown(widths), needs[index]]) <= room:
            widths[index] = needs[index]
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


def print_table(columns: Sequence[Column], rows: Sequence[Sequence[str]], wide: bool) -> None:
    """A table of values as Text, which rich neither parses for markup (``[link=...]``
    would be a hyperlink, ``[/]`` an error) nor highlights: the columns but the wide
    ones, fit to the terminal, and a line after it naming those it had no room for;
    ``wide``, every column whole (as kubectl's ``-o wide``, the terminal wraps)."""
    # rich is imported when a table is printed, so that --help does not (decision 30).
    from rich.cells import cell_len
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    chosen = [index for index, column in enumerate(columns) if wide or not column.wide]
    columns = [columns[index] for index in chosen]
    # Tabs as the spaces a terminal shows, so that each cell is measured as printed.
    cells = [[visible(row[index], lines=True).expandtabs() for index in chosen] for row in rows]
    natural = [
        max(
            cell_len(line)
            for text in (column.header, *(row[index] for row in cells))
            for line in text.split("\n")
        )
        for index, column in enumerate(columns)
    ]
    room = None if wide else width()
    widths = fit(columns, natural, room)
    shown = Table(show_edge=False, pad_edge=False)
    for column, size in zip(columns, widths, strict=True):
        if size is not None:
            shown.add_column(column.header, width=size, no_wrap=True, overflow="ellipsis")
    for row in cells:
        shown.add_row(
            *(
                Text(_cut(cell, column, size, cell_len))
                for cell, column, size in zip(row, columns, widths, strict=True)
                if size is not None
            )
        )
    # A height too, or rich takes 80 columns in a terminal it deems dumb (TERM=dumb).
    console = Console(
        width=_width(_shown(widths)),
        height=len(rows) + 3,
        markup=False,
        emoji=False,
        highlight=False,
    )
    console.print(shown)
    left_out = [column.header for column, size in zip(columns, widths, strict=True) if size is None]
    if left_out:
        note = f"(left out for want of room: {', '.join(left_out)}; -o wide has all)"
        click.echo(textwrap.fill(note, room or len(note), break_on_hyphens=False))


def _cut(cell: str, column: Column, size: int, measure: Callable[[str], int]) -> str:
    """A cell as its column has room for it: whole, else as its column's ``telling``
    keeps it (which rich cuts with "…" if it is still too wide)."""
    if column.telling is None or max(map(measure, cell.split("\n"))) <= size:
        return cell
    return column.telling(cell, size)


def fitted(line: str, room: int | None) -> str:
    """A line of ``room`` columns at most (None: whole, to a file or a pipe): as
    ``visible`` writes it, cut with the mark that says how long it was when wider."""
    shown = visible(line)
    if room is None or len(shown) <= room:
        return shown
    return visible(line, limit=max(0, room - len(CUT.format(len(line)))))
