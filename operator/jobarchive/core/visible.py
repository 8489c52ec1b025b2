"""User text as it may be shown to a reader, the one way: every character that would
act on a terminal or hide, reorder or break the text around it is written as an escape
(decision 23), and text too long for its place is cut with one mark that says how long
it was (decision 26). Pure and standard library only, so that every part may use it."""

import re
import unicodedata

# Unicode's categories of characters not seen as themselves: controls (C0, DEL, C1),
# format characters (bidi embeddings, overrides, isolates and marks, zero-width
# characters, tag characters, the BOM, the soft hyphen), lone surrogates (no UTF-8
# can carry them: printing one raises) and the line and paragraph separators.
HIDDEN = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
# The characters worth a look: all but printable ASCII and the tab (which only moves
# the cursor right); with lines, line endings (LF, CRLF) are left alone too.
_OUTSIDE = re.compile(r"[^\t -~]")
_OUTSIDE_LINES = re.compile(r"(?!\r\n)[^\t\n -~]")
# What cut text ends with, stored (``cutting.clip``) or shown.
MARK = "…"
# What shown text cut ends with: the mark, then how long the text was.
CUT = MARK + "({} characters)"
# What a message quotes of a value it names (a parameter, a column, a setting): a
# Kubernetes name is rarely longer, and an error stays one short line.
QUOTED = 80
# Where a cut is looked for: a character, or a CRLF kept or left out whole.
_UNIT = re.compile(r"\r\n|.", re.DOTALL)
# The escapes Python writes short; every other is written by its code.
_SHORT = {"\n": "\\n", "\r": "\\r"}


def visible(text: str, lines: bool = False, limit: int | None = None) -> str:
    """``text`` with each character of a HIDDEN category as its escape, as Python
    writes one (``\\n``, ``\\x1b``, ``\\u202e``, ``\\U000e0041``); the tab is kept, and
    with ``lines`` the line endings, where a line break cannot leave its place (a
    table's cell, HTML). Everything else, backslashes included, is unchanged.

    With ``limit``, at most that many characters of it, escapes counted and none split,
    then ``CUT`` saying how long ``text`` was: no input widens the line it goes in."""
    outside = _OUTSIDE_LINES if lines else _OUTSIDE
    if limit is None:
        return outside.sub(_escape, text)
    # Every character is written as one or more: the rest cannot fit.
    head = text[: limit + 1]
    written = outside.sub(_escape, head)
    if len(head) == len(text) and len(written) <= limit:
        return written
    pieces: list[str] = []
    used = 0
    for unit in _UNIT.findall(head):
        piece = outside.sub(_escape, unit)
        if used + len(piece) > limit:
            break
        pieces.append(piece)
        used += len(piece)
    return "".join(pieces) + CUT.format(len(text))


def _escape(found: re.Match[str]) -> str:
    char = found.group()
    if unicodedata.category(char) not in HIDDEN:
        return char
    if char in _SHORT:
        return _SHORT[char]
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"
