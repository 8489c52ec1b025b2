"""What the operator's own checks let libraries log.

The checks that run before Kopf starts (``operator/main.py``) end in one line or in
silence: the libraries they call log what those checks then say themselves, or what
the operator's start says again a moment later (``Database ...``).
"""

import contextlib
import logging
from collections.abc import Iterator


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
