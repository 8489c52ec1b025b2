"""The tuned settings, numeric and boolean: ``Numbers`` is their table, each field
declared once with its type and, annotated, its variable, default and range
(``Bounded``) or its variable and default (``Flag``). ``BOUNDED`` and ``FLAGS`` are
derived from it (docs/configuration.md's table is checked against them), and so are
their values when nothing is set (``DEFAULTS``), which other modules' keyword
arguments take.
"""

import dataclasses
import typing
from collections.abc import Mapping
from typing import Annotated, Any

from jobarchive.config.errors import ConfigError
from jobarchive.config.flags import Flag


@dataclasses.dataclass(frozen=True)
class Bounded:
    """A numeric setting: its variable, default and range."""

    variable: str
    default: int
    low: int
    high: int
    # The variable's unit per unit of the field (milliseconds in seconds: 1000).
    per_unit: int = 1

    def read(self, env: Mapping[str, str]) -> int | float:
        """The value in the environment, validated, in the field's unit: whole units
        stay integers, a scaled one (milliseconds) becomes a fraction; the default
        when unset or empty."""
        raw = env.get(self.variable)
        if not raw:
            value = self.default
        else:
            try:
                value = int(raw)
            except ValueError:
                raise ConfigError(f"{self.variable}: {raw!r} is not an integer") from None
            if not self.low <= value <= self.high:
                raise ConfigError(f"{self.variable}: {value} is outside {self.low}..{self.high}")
        return value if self.per_unit == 1 else value / self.per_unit


@dataclasses.dataclass(frozen=True)
class Numbers:
    """The tuned settings, one field each, in the field's unit; its annotations are the
    table of their variables, defaults and ranges."""

    batch_size: Annotated[int, Bounded("JOBARCHIVE_BATCH_SIZE", 500, 1, 5000)]
    batch_delay: Annotated[float, Bounded("JOBARCHIVE_BATCH_DELAY_MS", 5, 0, 1000, per_unit=1000)]
    queue_size: Annotated[int, Bounded("JOBARCHIVE_QUEUE_SIZE", 10_000, 1, 10_000_000)]
    writers: Annotated[int, Bounded("JOBARCHIVE_WRITERS", 2, 1, 16)]
    # How long stopping waits for queued rows to be committed; Kopf re-lists the rest.
    stop_timeout: Annotated[float, Bounded("JOBARCHIVE_STOP_TIMEOUT", 10, 1, 3600)]
    resync_interval: Annotated[float, Bounded("JOBARCHIVE_RESYNC_INTERVAL", 600, 0, 7 * 24 * 3600)]
    unhealthy_after: Annotated[float, Bounded("JOBARCHIVE_UNHEALTHY_AFTER", 300, 1, 24 * 3600)]
    metrics_port: Annotated[int, Bounded("JOBARCHIVE_METRICS_PORT", 8000, 0, 65535)]
    peering_lifetime: Annotated[int, Bounded("JOBARCHIVE_PEERING_LIFETIME", 60, 2, 3600)]
    retention_days: Annotated[int, Bounded("JOBARCHIVE_RETENTION_DAYS", 0, 0, 100 * 365)]
    api_port: Annotated[int, Bounded("JOBARCHIVE_API_PORT", 0, 0, 65535)]
    api_timeout: Annotated[float, Bounded("JOBARCHIVE_API_TIMEOUT", 10, 1, 3600)]
    # The read side's connections, and so how many reads run at once.
    api_concurrency: Annotated[int, Bounded("JOBARCHIVE_API_CONCURRENCY", 4, 1, 64)]
    # Each caller's flow on the read pool: how many of its requests may wait for a turn,
    # and how long one waits before it is answered 503 (``reading.gate``).
    api_flow_queue: Annotated[int, Bounded("JOBARCHIVE_API_FLOW_QUEUE", 16, 1, 1000)]
    api_flow_wait: Annotated[
        float, Bounded("JOBARCHIVE_API_FLOW_WAIT_MS", 1000, 10, 600_000, per_unit=1000)
    ]
    # Seconds a usage roll-up may take before it is answered 400 (decision 33).
    usage_timeout: Annotated[int, Bounded("JOBARCHIVE_USAGE_TIMEOUT", 5, 1, 3600)]
    # Seconds between two reads of the front proxy's configuration (decision 29).
    requestheader_refresh: Annotated[int, Bounded("JOBARCHIVE_REQUESTHEADER_REFRESH", 60, 1, 3600)]
    # The SubjectAccessReviews one caller may have sent: at once, and a second on
    # average (a token bucket per identity; decision 14).
    access_review_burst: Annotated[int, Bounded("JOBARCHIVE_ACCESS_REVIEW_BURST", 100, 1, 100_000)]
    access_review_rate: Annotated[int, Bounded("JOBARCHIVE_ACCESS_REVIEW_RATE", 10, 1, 10_000)]
    # What waits for its job or pod (attribution): at most this many objects and bytes.
    waiting_max: Annotated[int, Bounded("JOBARCHIVE_WAITING_MAX", 50_000, 100, 10_000_000)]
    waiting_bytes: Annotated[int, Bounded("JOBARCHIVE_WAITING_BYTES", 64 * 2**20, 2**20, 2**32)]
    # The tail of a failed container's log: its lines (0: none read), its bytes, how
    # many reads at once and per second, and whether succeeded containers are read too.
    log_tail_lines: Annotated[int, Bounded("JOBARCHIVE_LOG_TAIL_LINES", 100, 0, 10_000)]
    log_tail_bytes: Annotated[int, Bounded("JOBARCHIVE_LOG_TAIL_BYTES", 64 * 2**10, 2**10, 2**20)]
    log_concurrency: Annotated[int, Bounded("JOBARCHIVE_LOG_CONCURRENCY", 4, 1, 64)]
    log_rate: Annotated[int, Bounded("JOBARCHIVE_LOG_RATE", 10, 1, 1000)]
    log_succeeded: Annotated[bool, Flag("JOBARCHIVE_LOG_SUCCEEDED", legacy=("0", "1"))]
    # Most failed containers of one pod read, and of one namespace waiting at once: at
    # most half the queue (10,000), so that one namespace cannot fill it.
    log_tails_per_pod: Annotated[int, Bounded("JOBARCHIVE_LOG_TAILS_PER_POD", 20, 1, 10_000)]
    log_tails_per_namespace: Annotated[
        int, Bounded("JOBARCHIVE_LOG_TAILS_PER_NAMESPACE", 500, 1, 5_000)
    ]
    # Seconds after a failed job finished before it is classified: its log tails' time
    # to arrive (decision 42).
    failure_settle: Annotated[float, Bounded("JOBARCHIVE_FAILURE_SETTLE", 120, 0, 24 * 3600)]
    # Each pod's efficiency, read from Prometheus: how long after its end it is
    # asked (its last scrapes' time to land), the scrape interval its queries assume,
    # how long one query may take, and how many run at once and start per second.
    prometheus_delay: Annotated[float, Bounded("JOBARCHIVE_PROMETHEUS_DELAY", 60, 0, 24 * 3600)]
    prometheus_scrape_interval: Annotated[
        float, Bounded("JOBARCHIVE_PROMETHEUS_SCRAPE_INTERVAL", 30, 1, 3600)
    ]
    prometheus_timeout: Annotated[float, Bounded("JOBARCHIVE_PROMETHEUS_TIMEOUT", 30, 1, 600)]
    prometheus_concurrency: Annotated[int, Bounded("JOBARCHIVE_PROMETHEUS_CONCURRENCY", 4, 1, 64)]
    prometheus_rate: Annotated[int, Bounded("JOBARCHIVE_PROMETHEUS_RATE", 20, 1, 1000)]
    # Days after a pod's end it is still asked for: Prometheus' retention (15 d by default).
    prometheus_horizon: Annotated[int, Bounded("JOBARCHIVE_PROMETHEUS_HORIZON", 15, 1, 3650)]


def _table() -> dict[str, Bounded | Flag]:
    """Each field of ``Numbers`` with the one ``Bounded`` or ``Flag`` it is annotated
    with; a field with none, or two, fails the import."""
    hints = typing.get_type_hints(Numbers, include_extras=True)
    table: dict[str, Bounded | Flag] = {}
    for field in dataclasses.fields(Numbers):
        metadata = getattr(hints[field.name], "__metadata__", ())
        found = [entry for entry in metadata if isinstance(entry, Bounded | Flag)]
        if len(found) != 1:
            raise TypeError(f"Numbers.{field.name}: {len(found)} Bounded or Flag, not one")
        table[field.name] = found[0]
    return table


TABLE = _table()
BOUNDED = {name: entry for name, entry in TABLE.items() if isinstance(entry, Bounded)}
FLAGS = {name: entry for name, entry in TABLE.items() if isinstance(entry, Flag)}


def read_numbers(env: Mapping[str, str]) -> dict[str, Any]:
    """Every tuned setting in ``env``, validated, by field; raises ConfigError naming
    the first bad variable."""
    return {name: entry.read(env) for name, entry in TABLE.items()}


DEFAULTS = Numbers(**read_numbers({}))
"""The tuned settings when none is set: the table's defaults, no environment read."""
