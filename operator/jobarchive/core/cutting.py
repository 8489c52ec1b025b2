"""Cutting a stored value to its bound: free text with a mark, JSON still JSON.

Pure, and imported by every part that stores or shows a value: the converters, the
models' stamping (so every write path applies it), the log tails and the read side.
"""

import json
from typing import overload

from jobarchive.core.visible import MARK

# The key a cut JSON object gains, its value how many entries were left out. A qualified
# name with a quantity for its value, so a reader that parses resources still can.
CUT_KEY = "jobarchive.io/cut-entries"
# What the cut key and its value take in the output, at most.
_MARK_ROOM = len(json.dumps(CUT_KEY)) + 16


@overload
def clip(value: str, length: int) -> str: ...
@overload
def clip(value: str | None, length: int) -> str | None: ...


def clip(value: str | None, length: int) -> str | None:
    """Free text cut to ``length`` characters, the last of them ``MARK`` when cut: one
    character, so a cut value is exactly its bound long."""
    if value is None or len(value) <= length:
        return value
    return value[: length - 1] + MARK


def compact(value: object) -> str:
    """JSON of ``value``, compact and deterministic (sorted keys), as the columns hold it."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def fit_json(text: str, length: int) -> str:
    """A JSON column's text within ``length`` characters, still JSON where it was.

    An object too long keeps its entries in key order while they fit, each nested
    object cut the same way, and gains ``CUT_KEY`` saying how many it left out. Text
    that is not a JSON object is cut as free text.
    """
    if len(text) <= length:
        return text
    try:
        value = json.loads(text)
    except ValueError:
        return clip(text, length)
    if not isinstance(value, dict):
        return clip(text, length)
    return compact(_fit(value, length))


def _fit(value: dict[str, object], length: int) -> dict[str, object]:
    kept: dict[str, object] = {}
    used = 2 + _MARK_ROOM
    entries = sorted(value.items())
    for index, (key, item) in enumerate(entries):
        head = len(json.dumps(key, ensure_ascii=False)) + 2
        if isinstance(item, dict):
            item = _fit(item, length - used - head)
        cost = head + len(compact(item))
        if used + cost > length:
            kept[CUT_KEY] = str(len(entries) - index)
            break
        kept[key] = item
        used += cost
    return kept


def clipped_json(value: str, length: int) -> object:
    """A stored JSON column as read: cut to ``length`` (``clip``), then parsed, or its
    text when that is no JSON (a value stored before it was checked, or cut)."""
    cut = clip(value, length)
    try:
        return json.loads(cut)
    # Nesting deeper than the interpreter's recursion limit: a row a hostile object
    # could have left, answered as its text rather than as a server error.
    except (ValueError, RecursionError):
        return cut
