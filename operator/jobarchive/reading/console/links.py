"""Where a figure of the reports leads: the job list, relative to the page (decision
31), filtered to the jobs it counts as closely as the list's filters can say it: the
column it is grouped by, and the jobs created in its period (pure, no I/O)."""

import datetime
from collections.abc import Mapping

from jobarchive.reading import usage
from jobarchive.reading.console import formats
from jobarchive.reading.console.views import link

# The columns a report groups by that are filters of the job list too (``failure``:
# the failure class, decision 42).
FILTERED = frozenset(("namespace", "owner", "tenant", "kind", "cluster", "status", "failure"))
DAY = datetime.timedelta(days=1)


def moment(when: datetime.datetime) -> str:
    """A time as a link writes it: the date alone at midnight UTC, else RFC 3339."""
    utc = when.astimezone(datetime.UTC)
    if utc.time() == datetime.time():
        return utc.date().isoformat()
    return formats.iso(utc)


def jobs(
    column: str,
    value: object,
    since: datetime.datetime,
    until: datetime.datetime,
    narrowed: Mapping[str, str] | None = None,
) -> str | None:
    """The job list of the jobs with ``column`` = ``value`` created in [since, until),
    within the report's own filters (``narrowed``: its namespace, its cluster); None when
    the list cannot filter on that column, or for the group of jobs without a value
    (failed jobs not classified yet among them)."""
    if column not in FILTERED or value in (None, ""):
        return None
    if column == usage.FAILURE and value == usage.UNCLASSIFIED:
        return None
    filters = {**(narrowed or {}), column: str(value)}
    return link("./", filters, created_since=moment(since), created_until=moment(until))
