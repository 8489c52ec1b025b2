"""What log lines may hold: nothing from libraries during the pre-flight checks, never
a secret, and user text only as ``shown`` makes it fit.

The checks that run before Kopf starts (``operator/main.py``) end in one line or in
silence: the libraries they call log what those checks then say themselves, or what
the operator's start says again a moment later (``Database ...``).

The libraries that are handed the database's credentials log them at DEBUG:
Tortoise prints its connection settings with the password cut to its first third
(``hunter2-secret`` as ``'hunt***'``). ``redact`` filters every record of those
loggers, so the password (as written in the URL and as decoded) and that third
never reach a handler. The filter sits on the loggers, not on handlers: Kopf
replaces the root logger's handlers when it starts, and a handler added later
would bypass it.

Text that comes from an object, a request or another server (names, namespaces,
reasons, paths, error messages) goes into a line through ``shown``: ``visible``, the
one way text is shown, with a log line's bound.
"""

import contextlib
import logging
from collections.abc import Iterable, Iterator

from jobarchive.core.visible import visible

# The loggers that records about connections come from: Tortoise's two, aiomysql's.
CREDENTIAL_LOGGERS = ("tortoise", "tortoise.db_client", "aiomysql")
MASK = "***"
# User text in a log line, in characters: a Kubernetes name (253 at most) is rarely
# longer, and a line with a kind, a namespace, a name and a reason stays under 1,000.
SHOWN = 200


def shown(value: object, limit: int = SHOWN) -> str:
    """User text fit for a log line (any value, by its ``str``): as ``visible`` writes
    it, cut at ``limit`` characters, so that no input makes a line long or starts one
    of its own."""
    return visible(str(value), limit=limit)


@contextlib.contextmanager
def silenced(*names: str) -> Iterator[None]:
    """Drop every record of these loggers (and their children) while the block runs."""
    loggers = [logging.getLogger(name) for name in names]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


class Redactor(logging.Filter):
    """Masks secrets in a record's message, its traceback and its stack; drops nothing."""

    def __init__(self) -> None:
        super().__init__()
        self.secrets: set[str] = set()

    def redact(self, text: str) -> str:
        """``text`` with every secret, and Tortoise's partial mask of it, replaced."""
        for secret in sorted(self.secrets, key=len, reverse=True):
            text = text.replace(secret, MASK)
            kept = secret[: len(secret) // 3]
            if kept:
                text = text.replace(kept + MASK, MASK)
        return text

    def filter(self, record: logging.LogRecord) -> bool:
        """Rewrite the record in place when it shows a secret; always let it through."""
        if not self.secrets:
            return True
        try:
            message = record.getMessage()
        except (TypeError, ValueError):
            # A record whose arguments do not fit its format: the handler reports it.
            message = f"{record.msg} {record.args}"
        redacted = self.redact(message)
        if redacted != message:
            record.msg, record.args = redacted, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self.redact(record.exc_text)
        if record.stack_info:
            record.stack_info = self.redact(record.stack_info)
        return True


_REDACTOR = Redactor()


def redact(secrets: Iterable[str]) -> None:
    """Mask these secrets in every record of ``CREDENTIAL_LOGGERS`` from now on.

    Secrets accumulate for the life of the process: one that opened a database
    before may still log about it.
    """
    _REDACTOR.secrets.update(secret for secret in secrets if secret)
    for name in CREDENTIAL_LOGGERS:
        logger = logging.getLogger(name)
        if _REDACTOR not in logger.filters:
            logger.addFilter(_REDACTOR)
