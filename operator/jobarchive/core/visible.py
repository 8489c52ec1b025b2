"""Stored text as it may be shown to a reader: every character that would act on a
terminal or hide, reorder or break the text around it is written as an escape
(decision 23). Pure and standard library only, so that every part may use it."""

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


def visible(text: str, lines: bool = False) -> str:
    """``text`` with each character of a HIDDEN category as its escape, as Python
    writes one (``\\x1b``, ``\\u202e``, ``\\U000e0041``); the tab is kept, and with
    ``lines`` the line endings, where a line break cannot leave its place (a table's
    cell, HTML). Everything else, backslashes included, is unchanged."""
    return (_OUTSIDE_LINES if lines else _OUTSIDE).sub(_escape, text)


def _escape(found: re.Match[str]) -> str:
    char = found.group()
    if unicodedata.category(char) not in HIDDEN:
        return char
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"
