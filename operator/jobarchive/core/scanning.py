"""Reading a log tail for the failure taxonomy (decision 42): the lines worth a look, the
last one a pattern matches, the exception of the last Python traceback, and a detail
line fit to store.

A tail may be anything a program printed, megabytes on one line included, and a rule's
pattern may be written by a site. So only the end is read: the last ``SCAN_CHARS``
characters, at most ``SCAN_LINES`` lines of them, each cut to ``LINE_CHARS``; a pattern
is searched within one line at a time, so no pattern runs over more than one line's
characters, whatever it is. Pure.
"""

import re
from collections.abc import Iterable, Sequence

from jobarchive.core.cutting import clip
from jobarchive.core.visible import visible

# What is read of a tail: its end, where a program says why it stopped.
SCAN_CHARS = 64 * 1024
SCAN_LINES = 2000
LINE_CHARS = 1024
# A detail line as kept: one line, printable, at most this long.
DETAIL_LENGTH = 512
# Python's traceback header, plain or in a box (rich's, as Hugging Face's tools print).
TRACEBACK = re.compile(r"Traceback \(most recent call last\)")
# What launchers put before each line of a rank's output: "[rank3]:", "[default0]:[rank12]:".
_RANK_PREFIX = re.compile(r"^(?:\[[\w.:-]+\]:)+ ?")
# An exception as a traceback ends: a type (dotted) at the line's start, alone or with
# ": " and its message. "ERROR:torch..." or "Epoch 3: ..." is not one.
_EXCEPTION = re.compile(r"([A-Za-z_][\w.]*)(?::(?: (.*))?)?")
# A terminal's colour and cursor sequences (CSI), which say nothing in a stored line.
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")


def scanned(tail: str | None) -> list[str]:
    """The lines of a tail's end that the rules read, oldest first, each cut to
    ``LINE_CHARS``; a first line the cut began inside is left out, unless it is the
    only one (a single line longer than the window keeps its end)."""
    if not tail:
        return []
    window = tail[-SCAN_CHARS:]
    lines = window.splitlines()
    cut_inside = len(tail) > SCAN_CHARS and tail[-SCAN_CHARS - 1] not in "\r\n"
    if cut_inside and len(lines) > 1:
        lines = lines[1:]
    return [line[:LINE_CHARS] for line in lines[-SCAN_LINES:]]


def last_match(lines: Sequence[str], patterns: Iterable[re.Pattern[str]]) -> str | None:
    """The last line any of the patterns is found in, or None."""
    compiled = tuple(patterns)
    for line in reversed(lines):
        if any(pattern.search(line) for pattern in compiled):
            return line
    return None


def last_exception(lines: Sequence[str], wrappers: frozenset[str]) -> str | None:
    """The exception line (``ValueError: bad shape``) of the last Python traceback in the
    lines, passing over those whose type is one of the ``wrappers`` (compared by the
    type's last dotted name): a launcher's own traceback, printed after its child's.
    A wrapper's line when only wrappers have one; None when no traceback has one."""
    headers = [index for index, line in enumerate(lines) if TRACEBACK.search(line)]
    wrapped: str | None = None
    for position in range(len(headers) - 1, -1, -1):
        end = headers[position + 1] if position + 1 < len(headers) else len(lines)
        found = _exception(lines[headers[position] + 1 : end])
        if found is None:
            continue
        name, line = found
        if name.rsplit(".", 1)[-1] not in wrappers:
            return line
        wrapped = wrapped or line
    return wrapped


def _exception(lines: Sequence[str]) -> tuple[str, str] | None:
    """The first line after a traceback's header that is an exception, with its type:
    frames and source lines are indented, a box's lines begin with its border."""
    for raw in lines:
        line = _RANK_PREFIX.sub("", raw).rstrip()
        if not line or line[0].isspace():
            continue
        found = _EXCEPTION.fullmatch(line)
        if found:
            return found.group(1), line
    return None


def detail_line(text: str | None) -> str | None:
    """``text`` as a detail is kept: one line (every run of whitespace one space), no
    terminal sequence, hidden characters escaped (decision 23), cut to DETAIL_LENGTH."""
    if text is None:
        return None
    line = " ".join(_ANSI.sub("", text).split())
    return clip(visible(line), DETAIL_LENGTH) if line else None
