"""Kubernetes times as the archive stores them: RFC 3339 Time or MicroTime, parsed to an
aware UTC datetime. Shared by the converters and the log tails' trigger rules, which
may not import each other."""

import datetime


def timestamp(value: object) -> datetime.datetime | None:
    """Parse an RFC 3339 Time or MicroTime to an aware UTC datetime; None if unparseable."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.datetime.fromisoformat(value)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=datetime.UTC)
    try:
        return parsed.astimezone(datetime.UTC)
    except OverflowError:
        return None
