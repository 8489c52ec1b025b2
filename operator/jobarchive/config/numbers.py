"""The numeric settings: each one's variable, default and range, written once in
``BOUNDED`` (docs/configuration.md's table is checked against it), and their values
when nothing is set (``DEFAULTS``), which other modules' keyword arguments take.
"""

import dataclasses
from collections.abc import Mapping
from typing import Any

from jobarchive.config.errors import ConfigError


@dataclasses.dataclass(frozen=True)
class Bounded:
    """A numeric setting: its variable, default and range."""

    variable: str
    default: int
    low: int
    high: int
    # The variable's unit per unit of the field (milliseconds in seconds: 1000).
    per_unit: int = 1

    def read(self, env: Mapping[str, str]) -> float:
        """The value in the environment, validated; the default when unset or empty."""
        raw = env.get(self.variable)
        if not raw:
            return self.default / self.per_unit
        try:
            value = int(raw)
        except ValueError:
            raise ConfigError(f"{self.variable}: {raw!r} is not an integer") from None
        if not self.low <= value <= self.high:
            raise ConfigError(f"{self.variable}: {value} is outside {self.low}..{self.high}")
        return value / self.per_unit


BOUNDED: dict[str, Bounded] = {
    "batch_size": Bounded("JOBARCHIVE_BATCH_SIZE", 500, 1, 5000),
    "batch_delay": Bounded("JOBARCHIVE_BATCH_DELAY_MS", 5, 0, 1000, per_unit=1000),
    "queue_size": Bounded("JOBARCHIVE_QUEUE_SIZE", 10_000, 1, 10_000_000),
    "writers": Bounded("JOBARCHIVE_WRITERS", 2, 1, 16),
    # How long stopping waits for queued rows to be committed; Kopf re-lists the rest.
    "stop_timeout": Bounded("JOBARCHIVE_STOP_TIMEOUT", 10, 1, 3600),
    "resync_interval": Bounded("JOBARCHIVE_RESYNC_INTERVAL", 600, 0, 7 * 24 * 3600),
    "unhealthy_after": Bounded("JOBARCHIVE_UNHEALTHY_AFTER", 300, 1, 24 * 3600),
    "metrics_port": Bounded("JOBARCHIVE_METRICS_PORT", 8000, 0, 65535),
    "peering_lifetime": Bounded("JOBARCHIVE_PEERING_LIFETIME", 60, 2, 3600),
    "retention_days": Bounded("JOBARCHIVE_RETENTION_DAYS", 0, 0, 100 * 365),
    "api_port": Bounded("JOBARCHIVE_API_PORT", 0, 0, 65535),
    "api_timeout": Bounded("JOBARCHIVE_API_TIMEOUT", 10, 1, 3600),
    # The read side's connections, and so how many reads run at once.
    "api_concurrency": Bounded("JOBARCHIVE_API_CONCURRENCY", 4, 1, 64),
    # Each caller's flow on the read pool: how many of its requests may wait for a turn,
    # and how long one waits before it is answered 503 (``reading.gate``).
    "api_flow_queue": Bounded("JOBARCHIVE_API_FLOW_QUEUE", 16, 1, 1000),
    "api_flow_wait": Bounded("JOBARCHIVE_API_FLOW_WAIT_MS", 1000, 10, 600_000, per_unit=1000),
    # Seconds a usage roll-up may take before it is answered 400 (decision 33).
    "usage_timeout": Bounded("JOBARCHIVE_USAGE_TIMEOUT", 5, 1, 3600),
    # Seconds between two reads of the front proxy's configuration (decision 29).
    "requestheader_refresh": Bounded("JOBARCHIVE_REQUESTHEADER_REFRESH", 60, 1, 3600),
    # The SubjectAccessReviews one caller may have sent: at once, and a second on
    # average (a token bucket per identity; decision 14).
    "access_review_burst": Bounded("JOBARCHIVE_ACCESS_REVIEW_BURST", 100, 1, 100_000),
    "access_review_rate": Bounded("JOBARCHIVE_ACCESS_REVIEW_RATE", 10, 1, 10_000),
    # What waits for its job or pod (attribution): at most this many objects and bytes.
    "waiting_max": Bounded("JOBARCHIVE_WAITING_MAX", 50_000, 100, 10_000_000),
    "waiting_bytes": Bounded("JOBARCHIVE_WAITING_BYTES", 64 * 2**20, 2**20, 2**32),
    # The tail of a failed container's log: its lines (0: none read), its bytes, how
    # many reads at once and per second, and whether succeeded containers are read too.
    "log_tail_lines": Bounded("JOBARCHIVE_LOG_TAIL_LINES", 100, 0, 10_000),
    "log_tail_bytes": Bounded("JOBARCHIVE_LOG_TAIL_BYTES", 64 * 2**10, 2**10, 2**20),
    "log_concurrency": Bounded("JOBARCHIVE_LOG_CONCURRENCY", 4, 1, 64),
    "log_rate": Bounded("JOBARCHIVE_LOG_RATE", 10, 1, 1000),
    "log_succeeded": Bounded("JOBARCHIVE_LOG_SUCCEEDED", 0, 0, 1),
    # Most failed containers of one pod read, and of one namespace waiting at once: at
    # most half the queue (10,000), so that one namespace cannot fill it.
    "log_tails_per_pod": Bounded("JOBARCHIVE_LOG_TAILS_PER_POD", 20, 1, 10_000),
    "log_tails_per_namespace": Bounded("JOBARCHIVE_LOG_TAILS_PER_NAMESPACE", 500, 1, 5_000),
}


@dataclasses.dataclass(frozen=True)
class Numbers:
    """The numeric settings, one field per entry of ``BOUNDED``, in the field's unit."""

    batch_size: int
    batch_delay: float
    queue_size: int
    writers: int
    stop_timeout: float
    resync_interval: float
    unhealthy_after: float
    metrics_port: int
    peering_lifetime: int
    retention_days: int
    api_port: int
    api_timeout: float
    api_concurrency: int
    api_flow_queue: int
    api_flow_wait: float
    usage_timeout: int
    requestheader_refresh: int
    access_review_burst: int
    access_review_rate: int
    waiting_max: int
    waiting_bytes: int
    log_tail_lines: int
    log_tail_bytes: int
    log_concurrency: int
    log_rate: int
    log_succeeded: int
    log_tails_per_pod: int
    log_tails_per_namespace: int


def read_numbers(env: Mapping[str, str]) -> dict[str, Any]:
    """Every numeric setting in ``env``, validated, by field; raises ConfigError naming
    the first bad variable."""
    numbers: dict[str, Any] = {}
    for field, bounded in BOUNDED.items():
        value = bounded.read(env)
        # Whole units stay integers; a scaled one (milliseconds) becomes a fraction.
        numbers[field] = int(value) if bounded.per_unit == 1 else value
    return numbers


DEFAULTS = Numbers(**read_numbers({}))
"""The numeric settings when none is set: the table's defaults, no environment read."""
