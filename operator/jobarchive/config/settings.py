"""The operator's settings, put together from the environment: the numbers, the
database's URLs and TLS, the tracked kinds, the batch Job selector and the API's
address, TLS and access control."""

import dataclasses
import ipaddress
import os
import pathlib
import re
from collections.abc import Mapping
from urllib.parse import urlsplit

from jobarchive.config.api_tls import ApiTls, api_tls
from jobarchive.config.database_tls import DbTls, db_tls
from jobarchive.config.database_url import db_url, read_db_url, redact_url
from jobarchive.config.errors import ConfigError
from jobarchive.config.numbers import Numbers, read_numbers
from jobarchive.core.accounting import ACCELERATORS
from jobarchive.core.kinds import BUILTIN_KINDS, JobKind, KindRegistry, parse_extra_kinds
from jobarchive.core.rows import valid_cluster

# Who may read through the API: callers' tokens and access reviewed by Kubernetes
# (the default), or anyone who reaches the port (for a laptop).
API_AUTH_MODES = ("kubernetes", "none")
# In a pod the API must be reachable through its Service, so every interface.
DEFAULT_API_HOST = "0.0.0.0"
# Where a container sees its own cgroup (v2's unified tree, or v1's controllers).
CGROUP_ROOT = "/sys/fs/cgroup"
# An extended resource's name: a DNS subdomain prefix, '/', a qualified name's part.
_EXTENDED_RESOURCE = re.compile(
    r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
)
# The label pairs that name a pod's series in Prometheus, tried in order: the exporter's
# own, then those a scrape renamed because its target carried the same names (a
# ServiceMonitor's, without honorLabels).
DEFAULT_POD_LABELS = "namespace/pod,exported_namespace/exported_pod"
# A Prometheus label name; those beginning with two underscores are Prometheus' own.
_LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
# Label names PromQL 2.x cannot write in a grouping (``max by (...)``), read there as a
# keyword or a number whatever their case: Prometheus would refuse every query.
_UNGROUPABLE = frozenset({"without", "inf", "nan"})


@dataclasses.dataclass(frozen=True)
class Settings(Numbers):
    """The operator's validated configuration, its numeric settings (``Numbers``) and
    the rest; ``load`` is the only way to make one."""

    db_url: str
    # Where the read side reads: JOBARCHIVE_READ_DB_URL, else the same as ``db_url``.
    read_db_url: str
    db_tls: DbTls
    region: str | None
    # JOBARCHIVE_CLUSTER; None: the kube-system namespace's uid, read at start.
    cluster: str | None
    kinds: KindRegistry
    api_host: str
    api_auth: str
    api_tls: ApiTls
    # Labels a plain batch Job must carry to be recorded as a job; None: none are.
    batch_job_selector: Mapping[str, str | None] | None
    # The resources a pod's GPUs count: ``ACCELERATORS`` and JOBARCHIVE_ACCELERATORS'.
    accelerators: frozenset[str]
    # Where the container's cgroup files are read, for its memory limit (decision 38).
    cgroup_root: pathlib.Path
    # JOBARCHIVE_FAILURE_RULES_FILE: a site's failure taxonomy rules, read before the
    # shipped ones (decision 42); read and checked at start (``operator/main.py``).
    failure_rules_file: pathlib.Path | None
    # JOBARCHIVE_PROMETHEUS_URL, checked by ``check_prometheus_url``; None: efficiency off.
    prometheus_url: str | None
    # A bearer token's file (read at each query, so a rotated token is used) and the CA
    # bundle an https:// Prometheus is verified with (else the system's).
    prometheus_token_file: pathlib.Path | None
    prometheus_ca_file: pathlib.Path | None
    # (namespace label, pod label) pairs a pod's series are matched by, in order.
    prometheus_pod_labels: tuple[tuple[str, str], ...]

    @property
    def db_url_redacted(self) -> str:
        """The database URL with its password replaced, safe for logs."""
        return redact_url(self.db_url)

    @property
    def read_db_url_redacted(self) -> str:
        """The read side's database URL with its password replaced, safe for logs."""
        return redact_url(self.read_db_url)


def load(environ: Mapping[str, str] | None = None) -> Settings:
    """Read and validate the settings; raises ConfigError naming the bad variable."""
    env = os.environ if environ is None else environ
    written = db_url(env)
    read = read_db_url(env, written)
    tls = db_tls(env, written)
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
    numbers = read_numbers(env)
    prometheus_url, token_file, ca_file = _prometheus(env)
    return Settings(
        db_url=written,
        read_db_url=read,
        db_tls=tls,
        region=env.get("REGION") or None,
        cluster=_cluster(env.get("JOBARCHIVE_CLUSTER")),
        kinds=kinds,
        batch_job_selector=_selector(env.get("JOBARCHIVE_BATCH_JOB_SELECTOR")),
        accelerators=_accelerators(env.get("JOBARCHIVE_ACCELERATORS")),
        api_host=_api_host(env.get("JOBARCHIVE_API_HOST")),
        api_auth=_api_auth(env.get("JOBARCHIVE_API_AUTH")),
        api_tls=api_tls(env),
        cgroup_root=pathlib.Path(env.get("JOBARCHIVE_CGROUP_ROOT") or CGROUP_ROOT),
        failure_rules_file=_path(env.get("JOBARCHIVE_FAILURE_RULES_FILE")),
        prometheus_url=prometheus_url,
        prometheus_token_file=token_file,
        prometheus_ca_file=ca_file,
        prometheus_pod_labels=_pod_labels(env.get("JOBARCHIVE_PROMETHEUS_POD_LABELS")),
        **numbers,
    )


def _path(raw: str | None) -> pathlib.Path | None:
    return pathlib.Path(raw.strip()) if raw and raw.strip() else None


def _prometheus(
    env: Mapping[str, str],
) -> tuple[str | None, pathlib.Path | None, pathlib.Path | None]:
    """Prometheus' URL, token file and CA file; a file without a URL, or a CA file for
    a plain http:// URL, is a mistake said at start."""
    raw = (env.get("JOBARCHIVE_PROMETHEUS_URL") or "").strip()
    url = check_prometheus_url(raw) if raw else None
    token_file = _path(env.get("JOBARCHIVE_PROMETHEUS_TOKEN_FILE"))
    ca_file = _path(env.get("JOBARCHIVE_PROMETHEUS_CA_FILE"))
    for variable, given in (("TOKEN_FILE", token_file), ("CA_FILE", ca_file)):
        if given is not None and url is None:
            raise ConfigError(
                f"JOBARCHIVE_PROMETHEUS_{variable}: set without JOBARCHIVE_PROMETHEUS_URL"
            )
    if ca_file is not None and url is not None and url.startswith("http://"):
        raise ConfigError(
            "JOBARCHIVE_PROMETHEUS_CA_FILE: set for an http:// JOBARCHIVE_PROMETHEUS_URL "
            "(a CA verifies https:// only)"
        )
    return url, token_file, ca_file


def check_prometheus_url(raw: str) -> str:
    """Prometheus' base URL, ``http(s)://host[:port][/path]``, without a trailing slash;
    raises ConfigError in one line. The URL is never part of the message: one that
    holds a user and password, or a query, is refused without showing them."""
    variable = "JOBARCHIVE_PROMETHEUS_URL"
    try:
        parts = urlsplit(raw.strip())
    except ValueError:
        # An unclosed IPv6 bracket, say.
        raise ConfigError(f"{variable}: not a URL") from None
    if parts.scheme not in ("http", "https"):
        raise ConfigError(f"{variable}: not an http:// or https:// URL")
    if "@" in parts.netloc:
        raise ConfigError(
            f"{variable}: a user or password in the URL is refused "
            "(a bearer token goes in JOBARCHIVE_PROMETHEUS_TOKEN_FILE)"
        )
    if parts.query or parts.fragment:
        raise ConfigError(f"{variable}: a query or fragment in the URL is refused")
    try:
        port = parts.port
    except ValueError:
        raise ConfigError(f"{variable}: the port is not a number from 0 to 65535") from None
    if not parts.hostname or port == 0:
        raise ConfigError(f"{variable}: no host, or port 0")
    return parts.geturl().rstrip("/")


def _pod_labels(raw: str | None) -> tuple[tuple[str, str], ...]:
    """``namespace/pod,exported_namespace/exported_pod``: label pairs, each two names."""
    variable = "JOBARCHIVE_PROMETHEUS_POD_LABELS"
    pairs: list[tuple[str, str]] = []
    for term in (raw or DEFAULT_POD_LABELS).split(","):
        names = tuple(name.strip() for name in term.split("/"))
        valid = [_LABEL_NAME.match(name) and not name.startswith("__") for name in names]
        if len(names) != 2 or not all(valid) or names[0] == names[1]:
            raise ConfigError(
                f"{variable}: {term.strip()[:80]!r} is not two label names as "
                "namespace_label/pod_label (letters, digits, _; not beginning with __)"
            )
        if any(name.lower() in _UNGROUPABLE for name in names):
            raise ConfigError(
                f"{variable}: {term.strip()!r} names a label PromQL cannot group by "
                "(without, inf, nan in any case)"
            )
        if names in pairs:
            raise ConfigError(f"{variable}: {term.strip()!r} is given twice")
        pairs.append((names[0], names[1]))
    return tuple(pairs)


def _cluster(raw: str | None) -> str | None:
    if raw is None or not raw.strip():
        return None
    try:
        return valid_cluster(raw)
    except ValueError as exc:
        raise ConfigError(f"JOBARCHIVE_CLUSTER: {exc}") from None


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


def _accelerators(raw: str | None) -> frozenset[str]:
    """``habana.ai/gaudi,example.com/npu``: extended resources counted as GPUs too."""
    names = {name.strip() for name in (raw or "").split(",") if name.strip()}
    for name in sorted(names):
        if not _EXTENDED_RESOURCE.match(name) or name.startswith("kubernetes.io/"):
            raise ConfigError(
                f"JOBARCHIVE_ACCELERATORS: {name[:80]!r} is not an extended resource name "
                "(domain/name, e.g. habana.ai/gaudi)"
            )
    return ACCELERATORS | names


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
