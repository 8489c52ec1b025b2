"""How the console writes values: times in UTC, to the second; numbers with thousands
separators and as many decimals as their size needs; a cluster known by its uid
shortened; every value a template writes as ``visible`` shows it (durations are
``core.times.duration``'s)."""

import datetime
import re

from markupsafe import Markup

from jobarchive.core.times import timestamp
from jobarchive.core.visible import visible

# An unnamed cluster is known by its kube-system namespace's uid (decision 35).
CLUSTER_UID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
UID_SHOWN = 8


def utc(moment: datetime.datetime | str | None) -> str:
    """``2026-11-29 10:00:05 UTC``, or ``-``."""
    when = timestamp(moment) if isinstance(moment, str) else moment
    if when is None:
        return "-"
    return when.astimezone(datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def iso(moment: datetime.datetime | str | None) -> str:
    """The machine-readable form of a time, for ``<time datetime=...>``; "" when None."""
    when = timestamp(moment) if isinstance(moment, str) else moment
    if when is None:
        return ""
    return when.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def finalize(value: object) -> object:
    """Every value a template writes, before autoescaping (Jinja2's ``finalize``): text
    as ``visible`` shows it, line breaks kept; numbers as they are. Markup (a macro's
    output) stays Markup: the escapes put in are printable ASCII, never HTML."""
    if isinstance(value, Markup):
        return Markup(visible(value, lines=True))
    if value is None or isinstance(value, int | float):
        return value
    return visible(str(value), lines=True)


def number(value: float | None) -> str:
    """``1,234``, ``12.5``, ``0.533``: thousands separated, a whole number without
    decimals, else three below 1, two below 10, one below 1,000, none above (trailing
    zeros dropped); ``-`` for None."""
    if value is None:
        return "-"
    if float(value).is_integer():
        return f"{int(value):,}"
    size = abs(value)
    places = 3 if size < 1 else 2 if size < 10 else 1 if size < 1000 else 0
    written = f"{value:,.{places}f}"
    return written.rstrip("0").rstrip(".") if "." in written else written


def percent(ratio: float | None) -> str:
    """A ratio as a whole percentage, ``42%``; ``unknown`` for None (never zero)."""
    return "unknown" if ratio is None else f"{ratio * 100:.0f}%"


def cluster(name: str | None) -> str:
    """A cluster as a column shows it: its name, or an unnamed one's uid's first
    characters (the page puts the whole uid in a title); ``-`` for none."""
    if not name:
        return "-"
    return name[:UID_SHOWN] if CLUSTER_UID.fullmatch(name) else name
