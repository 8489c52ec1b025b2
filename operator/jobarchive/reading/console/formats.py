"""How the console writes values: times in UTC, to the second; durations short; text
with what would hide or reorder it escaped."""

import datetime

from markupsafe import Markup

from jobarchive.times import duration, timestamp
from jobarchive.visible import visible

__all__ = ["duration", "iso", "parse", "shown", "utc"]


def parse(stamp: str | None) -> datetime.datetime | None:
    """An RFC 3339 time as the queries write it (``...Z``), aware; None stays None."""
    return timestamp(stamp)


def utc(moment: datetime.datetime | str | None) -> str:
    """``2026-11-29 10:00:05 UTC``, or ``-``."""
    when = parse(moment) if isinstance(moment, str) else moment
    if when is None:
        return "-"
    return when.astimezone(datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def iso(moment: datetime.datetime | str | None) -> str:
    """The machine-readable form of a time, for ``<time datetime=...>``; "" when None."""
    when = parse(moment) if isinstance(moment, str) else moment
    if when is None:
        return ""
    return when.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def shown(value: object) -> object:
    """Every value a template writes, before autoescaping (Jinja2's ``finalize``): text
    as ``visible`` shows it, line breaks kept; numbers as they are. Markup (a macro's
    output) stays Markup: the escapes put in are printable ASCII, never HTML."""
    if isinstance(value, Markup):
        return Markup(visible(value, lines=True))
    if value is None or isinstance(value, int | float):
        return value
    return visible(str(value), lines=True)
