"""How the console writes values: times in UTC, to the second; durations short; text
with what would hide or reorder it escaped."""

import datetime

from markupsafe import Markup

from jobarchive.visible import visible

UNITS = (("d", 86400), ("h", 3600), ("m", 60), ("s", 1))


def duration(seconds: float | None) -> str:
    """``1h 23m``, ``45s``, ``2d 3h``: the two largest units, or ``-`` when unknown."""
    if seconds is None:
        return "-"
    left = round(seconds)
    if left < 1:
        return "0s"
    parts = []
    for unit, size in UNITS:
        if left >= size:
            parts.append(f"{left // size}{unit}")
            left %= size
        if len(parts) == 2:
            break
    return " ".join(parts)


def parse(stamp: str | None) -> datetime.datetime | None:
    """An RFC 3339 time as the queries write it (``...Z``), aware; None stays None."""
    if not stamp:
        return None
    moment = datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=datetime.UTC)


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
