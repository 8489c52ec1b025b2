"""Settings from the environment, validated once at start.

Every setting is read here and nowhere else, so README's configuration table and
this module can be checked against each other. A bad value raises ConfigError
naming the variable; the database password is never part of a message: use
``Settings.db_url_redacted`` wherever the URL is shown.

A database URL whose user name or password holds a character that ends that part
of a URL (``/``, ``?``, ``#``, ``@``, ``[``, ``]``) is refused, not guessed at: urllib
would read part of the password as the host, path or fragment, and every message
that shows the URL would show that part. The check works on the raw text, before
anything is parsed, so that its message can echo none of it.
"""

import dataclasses
import ipaddress
import logging
import os
import pathlib
import stat
import urllib.parse
from collections.abc import Mapping
from typing import Any

from jobarchive.kinds import BUILTIN_KINDS, JobKind, KindRegistry, parse_extra_kinds

logger = logging.getLogger(__name__)

DEFAULT_DB_URL = "sqlite://jobarchive.sqlite3"
_SCHEMES = ("mysql", "sqlite")
# MySQL's own --ssl-mode names; ``required`` encrypts without checking who answers.
TLS_MODES = ("off", "required", "verify-ca", "verify-identity")
_VERIFYING = ("verify-ca", "verify-identity")


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

# Who may read through the API: callers' tokens and access reviewed by Kubernetes
# (the default), or anyone who reaches the port (for a laptop).
API_AUTH_MODES = ("kubernetes", "none")
# In a pod the API must be reachable through its Service, so every interface.
DEFAULT_API_HOST = "0.0.0.0"


@dataclasses.dataclass(frozen=True)
class DbTls:
    """TLS to MySQL/MariaDB, as JOBARCHIVE_DB_TLS and JOBARCHIVE_DB_TLS_CA ask for it."""

    mode: str = "off"
    # The PEM bundle the server's certificate must chain to; the verify-* modes only.
    ca: str | None = None

    @property
    def on(self) -> bool:
        """Whether the connection must be encrypted."""
        return self.mode != "off"


@dataclasses.dataclass(frozen=True)
class Settings:
    """The operator's validated configuration; ``load`` is the only way to make one."""

    db_url: str
    # Where the read side reads: JOBARCHIVE_READ_DB_URL, else the same as ``db_url``.
    read_db_url: str
    db_tls: DbTls
    region: str | None
    kinds: KindRegistry
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
    waiting_max: int
    waiting_bytes: int
    log_tail_lines: int
    log_tail_bytes: int
    log_concurrency: int
    log_rate: int
    log_succeeded: int
    log_tails_per_pod: int
    log_tails_per_namespace: int
    api_host: str
    api_auth: str
    # Labels a plain batch Job must carry to be recorded as a job; None: none are.
    batch_job_selector: Mapping[str, str | None] | None

    @property
    def db_url_redacted(self) -> str:
        """The database URL with its password replaced, safe for logs."""
        return redact_url(self.db_url)

    @property
    def read_db_url_redacted(self) -> str:
        """The read side's database URL with its password replaced, safe for logs."""
        return redact_url(self.read_db_url)


def redact_url(url: str) -> str:
    """Replace the password of a URL with ``***``."""
    parts = urllib.parse.urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rpartition("@")[2]
    user = parts.username or ""
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


def url_secrets(url: str) -> frozenset[str]:
    """The password of a URL as written and as decoded: what no log line may show."""
    password = urllib.parse.urlsplit(url).password
    if not password:
        return frozenset()
    return frozenset({password, urllib.parse.unquote(password)})


def has_password(url: str) -> bool:
    """Whether a URL, valid or not, holds a password: text after a ``:`` before its last ``@``."""
    userinfo = url.partition("://")[2].rpartition("@")[0]
    return bool(userinfo.partition(":")[2])


def read_url_file(path: str, source: str) -> str:
    """The URL a file holds (a mounted Secret, say), surrounding whitespace removed;
    ConfigError naming ``source`` when it is missing, unreadable or empty; one warning
    when every user may read or write it (ARCHITECTURE.md, decision 25)."""
    try:
        with open(path, encoding="utf-8") as file:
            mode = stat.S_IMODE(os.fstat(file.fileno()).st_mode)
            text = file.read()
    except FileNotFoundError:
        raise ConfigError(f"{source}: no file at {path}") from None
    except UnicodeDecodeError:
        # The error's text quotes the offending byte, which may be the password's.
        raise ConfigError(f"{source}: {path} is not UTF-8 text") from None
    except OSError as exc:
        raise ConfigError(f"{source}: cannot read {path} ({exc.strerror or exc})") from None
    url = text.strip()
    if not url:
        raise ConfigError(f"{source}: {path} is empty")
    # Once a file: the operator loads its settings twice (operator/main.py, the handlers).
    if mode & 0o007 and path not in _EXPOSED:
        _EXPOSED.add(path)
        logger.warning(
            "%s: %s is open to every user of this machine (mode %04o), and the database "
            "password in it too: chmod o-rwx it (a mounted Secret: defaultMode 0440)",
            source,
            path,
            mode,
        )
    return url


_EXPOSED: set[str] = set()


def load(environ: Mapping[str, str] | None = None) -> Settings:
    """Read and validate the settings; raises ConfigError naming the bad variable."""
    env = os.environ if environ is None else environ
    db_url = _db_url(env)
    read_db_url = _read_db_url(env, db_url)
    db_tls = _db_tls(env, db_url)
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
        read_db_url=read_db_url,
        db_tls=db_tls,
        region=region,
        kinds=kinds,
        batch_job_selector=_selector(env.get("JOBARCHIVE_BATCH_JOB_SELECTOR")),
        api_host=_api_host(env.get("JOBARCHIVE_API_HOST")),
        api_auth=_api_auth(env.get("JOBARCHIVE_API_AUTH")),
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


def _api_host(raw: str | None) -> str:
    """The address the operator's API binds: an IP address, as a pod binds its own."""
    if not raw:
        return DEFAULT_API_HOST
    try:
        return str(ipaddress.ip_address(raw.strip()))
    except ValueError:
        raise ConfigError(
            f"JOBARCHIVE_API_HOST: {raw!r} is not an IP address (e.g. 0.0.0.0, 127.0.0.1, ::)"
        ) from None


def _api_auth(raw: str | None) -> str:
    """How the operator's API checks its callers: one of ``API_AUTH_MODES``."""
    if not raw:
        return API_AUTH_MODES[0]
    if raw not in API_AUTH_MODES:
        raise ConfigError(f"JOBARCHIVE_API_AUTH: {raw!r} is not one of {', '.join(API_AUTH_MODES)}")
    return raw


def matches(selector: Mapping[str, str | None], labels: Mapping[str, object]) -> bool:
    """Whether labels satisfy a selector parsed from JOBARCHIVE_BATCH_JOB_SELECTOR."""
    return all(
        key in labels and (value is None or labels[key] == value) for key, value in selector.items()
    )


def _db_url(env: Mapping[str, str]) -> str:
    """JOBARCHIVE_DB_URL or the file JOBARCHIVE_DB_URL_FILE names (never both), else
    KubeDL's MYSQL_* variables, else the embedded default."""
    if env.get("JOBARCHIVE_DB_URL") and env.get("JOBARCHIVE_DB_URL_FILE"):
        raise ConfigError("JOBARCHIVE_DB_URL and JOBARCHIVE_DB_URL_FILE are both set: keep one")
    if env.get("JOBARCHIVE_DB_URL"):
        url = env["JOBARCHIVE_DB_URL"]
        validate_db_url(url, "JOBARCHIVE_DB_URL")
        return url
    if env.get("JOBARCHIVE_DB_URL_FILE"):
        url = read_url_file(env["JOBARCHIVE_DB_URL_FILE"], "JOBARCHIVE_DB_URL_FILE")
        validate_db_url(url, "JOBARCHIVE_DB_URL_FILE")
        return url
    if env.get("MYSQL_HOST"):
        return _url_from_kubedl_variables(env)
    return DEFAULT_DB_URL


def _read_db_url(env: Mapping[str, str], db_url: str) -> str:
    """JOBARCHIVE_READ_DB_URL or the file JOBARCHIVE_READ_DB_URL_FILE names (never both),
    else the database the operator writes to.

    A replica, or the same database under a read-only account: the same kind of
    database as the one written, since it must hold the same tables, and TLS
    (JOBARCHIVE_DB_TLS) applies to both.
    """
    variable, file_variable = "JOBARCHIVE_READ_DB_URL", "JOBARCHIVE_READ_DB_URL_FILE"
    if env.get(variable) and env.get(file_variable):
        raise ConfigError(f"{variable} and {file_variable} are both set: keep one")
    if env.get(variable):
        url, source = env[variable], variable
    elif env.get(file_variable):
        url, source = read_url_file(env[file_variable], file_variable), file_variable
    else:
        return db_url
    validate_db_url(url, source)
    scheme, written = url.partition(":")[0].lower(), db_url.partition(":")[0].lower()
    if scheme != written:
        raise ConfigError(
            f"{source}: a {scheme} database, while the archive is written to a {written} one: "
            "reads must see the tables the operator writes"
        )
    return url


def validate_db_url(url: str, source: str) -> None:
    """Refuse a URL the operator cannot use, with a ConfigError naming ``source`` (the
    variable or option it came from); no message shows the password or any of it."""
    if any(char in url for char in "\t\r\n"):
        # urllib deletes these silently, so the password used would not be the one written.
        raise ConfigError(f"{source} contains a tab or a line break: percent-encode it")
    if url.partition(":")[0].lower() == "mysql":
        _check_userinfo(url, source)
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError:
        # urllib's message quotes the port it could not read, which may be the password.
        raise ConfigError(
            f"{source} is not a valid URL (expected mysql://user:password@host:3306/database "
            "or sqlite:///path/file.sqlite3)"
        ) from None
    if parts.scheme not in _SCHEMES:
        raise ConfigError(
            f"{source}: scheme {parts.scheme!r} is not supported "
            f"(use one of: {', '.join(_SCHEMES)})"
        )
    if parts.scheme == "sqlite" and not (parts.netloc + parts.path):
        raise ConfigError(f"{source}: a sqlite URL needs a file path")
    if parts.scheme == "mysql":
        if not parts.hostname:
            raise ConfigError(f"{source}: no host in {redact_url(url)}")
        if not parts.path.strip("/"):
            raise ConfigError(f"{source}: no database name in {redact_url(url)}")
        if port == 0:
            raise ConfigError(f"{source}: port 0 in {redact_url(url)}")
        for name, _ in urllib.parse.parse_qsl(parts.query, keep_blank_values=True):
            if name.lower().startswith(("ssl", "tls")):
                raise ConfigError(
                    f"{source}: the parameter {name!r} does not turn TLS on here; "
                    "set JOBARCHIVE_DB_TLS (and JOBARCHIVE_DB_TLS_CA) instead"
                )


def _check_userinfo(url: str, source: str) -> None:
    """Refuse a user name or password holding a character that ends it early.

    The authority of a URL ends at the first ``/``, ``?`` or ``#``, and the user
    information at its last ``@``: an ``@`` after the authority, or two in it, or a
    bracket before it, means the user or password holds one of those unencoded.
    """
    rest = url.partition("://")[2]
    end = min((index for index in map(rest.find, "/?#") if index >= 0), default=len(rest))
    userinfo, tail = rest[:end].rpartition("@")[0], rest[end:]
    if "@" in tail or any(char in userinfo for char in "@[]"):
        raise ConfigError(
            f"{source}: the user name or password holds an unencoded '/', '?', '#', '@', "
            "'[' or ']', so the URL does not say what was meant: percent-encode them "
            "('/' %2F, '?' %3F, '#' %23, '@' %40, '[' %5B, ']' %5D), or give the password "
            "in MYSQL_PASSWORD (taken verbatim) with MYSQL_HOST and the other MYSQL_* variables"
        )


def _db_tls(env: Mapping[str, str], db_url: str) -> DbTls:
    """JOBARCHIVE_DB_TLS and JOBARCHIVE_DB_TLS_CA, checked against each other and the URL."""
    mode = (env.get("JOBARCHIVE_DB_TLS") or "off").strip().lower().replace("_", "-")
    ca = env.get("JOBARCHIVE_DB_TLS_CA") or None
    if mode not in TLS_MODES:
        raise ConfigError(f"JOBARCHIVE_DB_TLS: {mode!r} is not one of {', '.join(TLS_MODES)}")
    if db_url.startswith("sqlite:") and (mode != "off" or ca):
        variable = "JOBARCHIVE_DB_TLS" if mode != "off" else "JOBARCHIVE_DB_TLS_CA"
        raise ConfigError(f"{variable}: the database is a SQLite file, which TLS does not apply to")
    if ca and mode not in _VERIFYING:
        raise ConfigError(
            f"JOBARCHIVE_DB_TLS_CA: used only by JOBARCHIVE_DB_TLS=verify-ca or verify-identity, "
            f"not {mode}"
        )
    if mode in _VERIFYING and not ca:
        raise ConfigError(
            f"JOBARCHIVE_DB_TLS_CA: JOBARCHIVE_DB_TLS={mode} needs the CA bundle (PEM) "
            "that signed the server's certificate"
        )
    if ca:
        try:
            pem = pathlib.Path(ca).read_text(encoding="ascii", errors="replace")
        except OSError as exc:
            raise ConfigError(
                f"JOBARCHIVE_DB_TLS_CA: cannot read {ca} ({exc.strerror or exc})"
            ) from None
        if "-----BEGIN CERTIFICATE-----" not in pem:
            raise ConfigError(f"JOBARCHIVE_DB_TLS_CA: {ca} holds no PEM certificate")
    return DbTls(mode, ca)


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
