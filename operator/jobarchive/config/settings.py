"""The operator's settings, put together from the environment: the numbers, the
database's URLs and TLS, the tracked kinds, the batch Job selector and the API's
address, TLS and access control."""

import dataclasses
import ipaddress
import os
import pathlib
import re
from collections.abc import Mapping

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
        **numbers,
    )


def _path(raw: str | None) -> pathlib.Path | None:
    return pathlib.Path(raw.strip()) if raw and raw.strip() else None


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
