"""A log's tail as it is stored: decoded, at most so many lines and bytes, the end kept.

A log is bytes, not text: a program may print anything, and a read cut at a byte
limit may end inside a character. The bytes decode as UTF-8 with every invalid
sequence replaced (U+FFFD), so nothing is refused and nothing raises. The end of a
log is what says why its program failed, so what is cut is the beginning: the last
``lines`` lines, then the last ``limit`` bytes of those, starting at a line boundary
when one lies within them (a single line longer than the limit keeps its end).
"""

import dataclasses


@dataclasses.dataclass(frozen=True)
class Tail:
    """A stored tail: its text, and whether anything before it was cut off."""

    text: str
    truncated: bool


def tail(data: bytes, lines: int, limit: int, incomplete: bool = False) -> Tail:
    """The last ``lines`` lines of ``data``, within ``limit`` bytes, decoded.

    ``incomplete``: the server stopped at its own byte limit, so the data may lack
    the log's end; the result is truncated even when nothing more is cut.
    """
    truncated = incomplete
    body = data
    # A trailing newline ends the last line; it does not start another.
    ending = b"\n" if body.endswith(b"\n") else b""
    content = body[: len(body) - len(ending)]
    parts = content.split(b"\n") if content else []
    if len(parts) > lines:
        parts = parts[-lines:]
        truncated = True
    body = b"\n".join(parts) + ending if parts else b""
    if len(body) > limit:
        truncated = True
        kept = body[len(body) - limit :]
        boundary = kept.find(b"\n")
        # Start after a newline within what is kept, unless that newline is its end.
        if 0 <= boundary < len(kept) - 1:
            kept = kept[boundary + 1 :]
        body = kept
    return Tail(body.decode("utf-8", errors="replace"), truncated)
