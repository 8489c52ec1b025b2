"""Settings from the environment, validated once at start.

Every setting is read here and nowhere else, so README's configuration table and
this module can be checked against each other. A bad value raises ConfigError
naming the variable; the database password is never part of a message: use
``Settings.db_url_redacted`` wherever the URL is shown.
"""

import dataclasses
import os
import urllib.parse
from collections.abc import Mapping
from typing import Any

from jobarchive.kinds import BUILTIN_KINDS, JobKind, KindRegistry, parse_extra_kinds

DEFAULT_DB_URL = "sqlite://jobarchive.sqlite3"
_SCHEMES = ("mysql", "sqlite")


class ConfigError(Exception):
    """A setting in the environment is invalid; the message names it."""


@dataclasses.dataclass(frozen=True)
class Bounded:
    """A numeric setting: its variable, default and range. Each is written once, in
    ``BOUNDED`` below; README's configuration table is checked against it."""

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
    "resync_interval": Bounded("JOBARCHIVE_RESYNC_INTERVAL", 600, 0, 7 * 24 * 3600),
    "unhealthy_after": Bounded("JOBARCHIVE_UNHEALTHY_AFTER", 300, 1, 24 * 3600),
    "metrics_port": Bounded("JOBARCHIVE_METRICS_PORT", 8000, 0, 65535),
    "peering_lifetime": Bounded("JOBARCHIVE_PEERING_LIFETIME", 60, 2, 3600),
    "retention_days": Bounded("JOBARCHIVE_RETENTION_DAYS", 0, 0, 100 * 365),
    "api_port": Bounded("JOBARCHIVE_API_PORT", 0, 0, 65535),
    "api_timeout": Bounded("JOBARCHIVE_API_TIMEOUT", 10, 1, 3600),
}


@dataclasses.dataclass(frozen=True)
class Settings:
    """The operator's validated configuration; ``load`` is the only way to make one."""

    db_url: str
    region: str | None
    kinds: KindRegistry
    batch_size: int
    batch_delay: float
    queue_size: int
    writers: int
    resync_interval: float
    unhealthy_after: float
    metrics_port: int
    peering_lifetime: int
    retention_days: int
    api_port: int
    api_timeout: float
    # Labels a plain batch Job must carry to be recorded as a job; None: none are.
    batch_job_selector: Mapping[str, str | None] | None

    @property
    def db_url_redacted(self) -> str:
        """The database URL with its password replaced, safe for logs."""
        return redact_url(self.db_url)


def redact_url(url: str) -> str:
    """Replace the password of a URL with ``***``."""
    parts = urllib.parse.urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rpartition("@")[2]
    user = parts.username or ""
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


def load(environ: Mapping[str, str] | None = None) -> Settings:
    """Read and validate the settings; raises ConfigError naming the bad variable."""
    env = os.environ if environ is None else environ
    db_url = _db_url(env)
    region = env.get("REGION") or None
    extra: tuple[JobKind, ...] = ()
    if env.get("JOBARCHIVE_EXTRA_KINDS"):
        try:
            extra = parse_extra_kinds(env["JOBARCHIVE_EXTRA_KINDS"])
        except ValueError as exc:
            raise ConfigError(f"JOBARCHIVE_EXTRA_KINDS: {exc}") from None
    try:
        kinds = KindRegistry(BUILTIN_KINDS + extra)
    except ValueError as exc:
        raise ConfigError(f"JOBARCHIVE_EXTRA_KINDS: {exc}") from None
    numbers: dict[str, Any] = {}
    for field, bounded in BOUNDED.items():
        value = bounded.read(env)
        # Whole units stay integers; a scaled one (milliseconds) becomes a fraction.
        numbers[field] = int(value) if bounded.per_unit == 1 else value
    return Settings(
        db_url=db_url,
        region=region,
        kinds=kinds,
        batch_job_selector=_selector(env.get("JOBARCHIVE_BATCH_JOB_SELECTOR")),
        **numbers,
    )


def _selector(raw: str | None) -> dict[str, str | None] | None:
    """``key=value,other``: equality, or presence for a bare key (kubectl's syntax)."""
    if not raw:
        return None
    selector: dict[str, str | None] = {}
    for term in raw.split(","):
        key, equals, value = term.strip().partition("=")
        key = key.strip()
        if not key or "!" in key or (equals and not value.strip()):
            raise ConfigError(
                f"JOBARCHIVE_BATCH_JOB_SELECTOR: {term.strip()!r} is not key=value or key"
            )
        selector[key] = value.strip() if equals else None
    return selector


def matches(selector: Mapping[str, str | None], labels: Mapping[str, object]) -> bool:
    """Whether labels satisfy a selector parsed from JOBARCHIVE_BATCH_JOB_SELECTOR."""
    return all(
        key in labels and (value is None or labels[key] == value) for key, value in selector.items()
    )


def _db_url(env: Mapping[str, str]) -> str:
    if env.get("JOBARCHIVE_DB_URL"):
        url = env["JOBARCHIVE_DB_URL"]
        _validate_db_url(url)
        return url
    if env.get("MYSQL_HOST"):
        return _url_from_kubedl_variables(env)
    return DEFAULT_DB_URL


def _validate_db_url(url: str) -> None:
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise ConfigError(f"JOBARCHIVE_DB_URL is not a valid URL ({exc})") from None
    if parts.scheme not in _SCHEMES:
        raise ConfigError(
            f"JOBARCHIVE_DB_URL: scheme {parts.scheme!r} is not supported "
            f"(use one of: {', '.join(_SCHEMES)})"
        )
    if parts.scheme == "sqlite" and not (parts.netloc + parts.path):
        raise ConfigError("JOBARCHIVE_DB_URL: a sqlite URL needs a file path")
    if parts.scheme == "mysql":
        if not parts.hostname:
            raise ConfigError(f"JOBARCHIVE_DB_URL: no host in {redact_url(url)}")
        if not parts.path.strip("/"):
            raise ConfigError(f"JOBARCHIVE_DB_URL: no database name in {redact_url(url)}")
        if port == 0:
            raise ConfigError(f"JOBARCHIVE_DB_URL: port 0 in {redact_url(url)}")


def _url_from_kubedl_variables(env: Mapping[str, str]) -> str:
    port = env.get("MYSQL_PORT", "3306")
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError(f"MYSQL_PORT: {port!r} is not a TCP port number")
    user = urllib.parse.quote(env.get("MYSQL_USER", "root"), safe="")
    password = urllib.parse.quote(env.get("MYSQL_PASSWORD", ""), safe="")
    database = env.get("MYSQL_DB_NAME", "kubedl")
    if not database:
        raise ConfigError("MYSQL_DB_NAME is empty")
    host = env["MYSQL_HOST"]
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"mysql://{user}:{password}@{host}:{port}/{urllib.parse.quote(database, safe='')}"


DEFAULTS = load({})
"""The settings of an empty environment: the one place other modules take defaults from."""
