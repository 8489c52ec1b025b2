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

from jobarchive.kinds import BUILTIN_KINDS, JobKind, KindRegistry, parse_extra_kinds

DEFAULT_DB_URL = "sqlite://jobarchive.sqlite3"
_SCHEMES = ("mysql", "sqlite")


class ConfigError(Exception):
    """A setting in the environment is invalid; the message names it."""


@dataclasses.dataclass(frozen=True)
class Settings:
    """The operator's validated configuration."""

    db_url: str
    region: str | None
    kinds: KindRegistry
    batch_size: int = 500
    batch_delay: float = 0.005
    queue_size: int = 10_000
    writers: int = 2
    resync_interval: float = 600.0
    unhealthy_after: float = 300.0
    metrics_port: int = 8000
    peering_lifetime: int = 60
    retention_days: int = 0
    api_port: int = 0
    api_timeout: float = 10.0
    # Labels a plain batch Job must carry to be recorded as a job; None: none are.
    batch_job_selector: Mapping[str, str | None] | None = None

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
    return Settings(
        db_url=db_url,
        region=region,
        kinds=kinds,
        batch_size=_integer(env, "JOBARCHIVE_BATCH_SIZE", 500, 1, 5000),
        batch_delay=_integer(env, "JOBARCHIVE_BATCH_DELAY_MS", 5, 0, 1000) / 1000,
        queue_size=_integer(env, "JOBARCHIVE_QUEUE_SIZE", 10_000, 1, 10_000_000),
        writers=_integer(env, "JOBARCHIVE_WRITERS", 2, 1, 16),
        resync_interval=_integer(env, "JOBARCHIVE_RESYNC_INTERVAL", 600, 0, 7 * 24 * 3600),
        unhealthy_after=_integer(env, "JOBARCHIVE_UNHEALTHY_AFTER", 300, 1, 24 * 3600),
        metrics_port=_integer(env, "JOBARCHIVE_METRICS_PORT", 8000, 0, 65535),
        peering_lifetime=_integer(env, "JOBARCHIVE_PEERING_LIFETIME", 60, 2, 3600),
        retention_days=_integer(env, "JOBARCHIVE_RETENTION_DAYS", 0, 0, 100 * 365),
        api_port=_integer(env, "JOBARCHIVE_API_PORT", 0, 0, 65535),
        api_timeout=_integer(env, "JOBARCHIVE_API_TIMEOUT", 10, 1, 3600),
        batch_job_selector=_selector(env.get("JOBARCHIVE_BATCH_JOB_SELECTOR")),
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


def _integer(env: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    raw = env.get(name)
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name}: {raw!r} is not an integer") from None
    if not low <= value <= high:
        raise ConfigError(f"{name}: {value} is outside {low}..{high}")
    return value


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
