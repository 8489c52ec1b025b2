"""What a read may be asked, and how its input is checked before any query runs.

The parameter tables are the read side's one filter vocabulary: the API parses its
query strings by them (``reading.parsing.parse``), its OpenAPI document lists them,
the console's forms show them and the CLI's options are made from them, each with
the one description written here. What a list's table parses to is a record of
``reading.lists``, field for field (a test holds them to it); a list answers a
``Page``. Nothing here imports a database, so the CLI builds its options without one
(decision 30).
"""

import dataclasses
import datetime
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from jobarchive.core.kinds import BATCH_JOB, BUILTIN_KINDS, INTERMEDIATE_KINDS, JobKind
from jobarchive.core.rows import CLUSTER_LENGTH, CLUSTER_PATTERN, NAMESPACE_LENGTH
from jobarchive.core.times import from_rfc3339
from jobarchive.core.visible import QUOTED, visible

JOB_STATUSES = (
    "Created",
    "Running",
    "Restarting",
    "Suspended",
    "Succeeded",
    "Failed",
    "Stopped",
)
EVENT_TYPES = ("Normal", "Warning")
# A pod's phase, and Stopped for one gone in no terminal phase (decision 4).
POD_STATUSES = ("Pending", "Running", "Succeeded", "Failed", "Unknown", "Stopped")
MAX_PAGE = 500
DEFAULT_PAGE = 50
# A tail is up to JOBARCHIVE_LOG_TAIL_BYTES (64 KiB by default): fewer per answer than rows.
LOG_TAILS_PAGE = 20
LOG_TAILS_MAX = 100
STATS_GROUPS = ("status", "kind", "owner", "namespace", "tenant")
DEFAULT_GROUP = "status"
# What usage rolls up by: a job's columns (``cluster`` among them, decision 35), and its
# pods' nodes; the Kueue cluster queue its jobs were admitted to (decision 44); and a
# failed job's failure class (decision 42), failed jobs only.
USAGE_GROUPS = (
    "namespace",
    "owner",
    "tenant",
    "queue",
    "kind",
    "node",
    "cluster",
    "clusterqueue",
    "failure",
)
# What a DATETIME column can hold; a bound beyond it means "no bound" and is clamped.
EARLIEST = datetime.datetime(1000, 1, 1, tzinfo=datetime.UTC)
LATEST = datetime.datetime(9999, 12, 31, 23, 59, 59, tzinfo=datetime.UTC)
MAX_TIME_TEXT = 64
# A namespace's name as the API server takes one: a DNS label (RFC 1123).
NAMESPACE_NAME_LENGTH = 63
NAMESPACE_PATTERN = rf"(?=.{{1,{NAMESPACE_NAME_LENGTH}}}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?"
# How Kubernetes writes a uid: what a reference to a job may name instead of its name.
UID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


@dataclasses.dataclass(frozen=True)
class Named:
    """A parameter named in a ``BadQuery``'s message, by its ``Param.name``."""

    name: str


class BadQuery(ValueError):
    """A query that cannot be answered as asked; the message says what to change.

    The parameters it names are kept apart from its text (``Named`` parts), so each
    face spells them as its users type them: ``str`` as the API's query parameters,
    ``spelled`` as another face's (the CLI's ``--flags``)."""

    def __init__(self, *parts: "str | Named") -> None:
        self.parts = parts
        super().__init__(self.spelled(lambda name: name))

    def spelled(self, spell: Callable[[str], str]) -> str:
        """The message with each parameter named as ``spell`` writes its name."""
        return "".join(part if isinstance(part, str) else spell(part.name) for part in self.parts)


@dataclasses.dataclass(frozen=True)
class Param:
    """One query parameter: its name, type (string, time, boolean, integer), meaning,
    the field it fills when that is not its name, and what a form calls it when its
    name in words does not say it."""

    name: str
    type: str
    description: str
    field: str | None = None
    label: str = ""

    @property
    def key(self) -> str:
        """The name of what the parameter fills: a query's field, a function's argument."""
        return self.field or self.name

    @property
    def title(self) -> str:
        """What a person reads the parameter as: its label, else its name in words."""
        return self.label or self.name.replace("_", " ").capitalize()


CLUSTER_MEANING = "The cluster it was recorded in (its JOBARCHIVE_CLUSTER, or kube-system's uid)."
PAGE = (
    Param("limit", "integer", f"Page size, 1..{MAX_PAGE} (default {DEFAULT_PAGE})."),
    Param("cursor", "string", "The next_cursor of the previous page."),
)
JOB_PARAMS = (
    Param("namespace", "string", "Namespace."),
    Param("cluster", "string", CLUSTER_MEANING),
    Param(
        "name",
        "string",
        "Name prefix: the name starts with this.",
        "name_prefix",
        label="Name starts with",
    ),
    Param("name_contains", "string", "Name substring (scans what the other filters leave)."),
    Param("kind", "string", "Kind, e.g. TFJob."),
    Param("status", "string", f"One of {', '.join(JOB_STATUSES)}."),
    Param("region", "string", "deploy_region."),
    Param("tenant", "string", "Tenant."),
    Param("owner", "string", "Owner (the tenancy's user)."),
    Param("queue", "string", "Queue (Kueue's queue-name label, Volcano's or the policy's queue)."),
    Param(
        "created_since", "time", "Created at or after (RFC 3339 time or date, UTC unless stated)."
    ),
    Param("created_until", "time", "Created before.", label="Created before"),
    Param("finished_since", "time", "Finished at or after."),
    Param("finished_until", "time", "Finished before.", label="Finished before"),
    Param("in_cluster", "boolean", "Still in the cluster (true), or gone (false).", label="Where"),
    Param("failure", "string", "Failure class, e.g. GPUOutOfMemory: failed jobs of that class."),
)
EVENT_PARAMS = (
    Param("namespace", "string", "The involved object's namespace."),
    Param("cluster", "string", CLUSTER_MEANING),
    Param("object", "string", "The involved object's name.", "object_name"),
    Param("uid", "string", "The involved object's uid.", "object_uid"),
    Param("kind", "string", "The involved object's kind (Pod, TFJob, ...).", "object_kind"),
    Param("type", "string", "Normal or Warning."),
    Param("reason", "string", "Reason, e.g. OOMKilling."),
    Param("since", "time", "Last occurred at or after (RFC 3339 time or date)."),
    Param("until", "time", "Last occurred before."),
)
# The Event list's filters an index reads first (decision 15); the others only sift.
EVENT_LEADING = ("namespace", "since", "object_uid", "reason")
# What names one object exactly, beside a list's filters (the aggregated API's
# ``metadata.name`` and ``metadata.uid`` field selectors); the CLI's job list takes the
# exact name, where a name recreated past a page is listed whole.
EXACT_NAME = Param("exact_name", "string", "Exact name: every object recorded under it.")
IDENTITY_PARAMS = (EXACT_NAME, Param("uid", "string", "Uid: the one object recorded with it."))
# The CLI's job list: the list's filters and the exact name.
NAMED_JOB_PARAMS = (*JOB_PARAMS, EXACT_NAME)
POD_PARAMS = (
    Param("namespace", "string", "Namespace."),
    Param("cluster", "string", CLUSTER_MEANING),
    Param("job_uid", "string", "The uid of the pod's job."),
    Param("status", "string", f"One of {', '.join(POD_STATUSES)}."),
    *IDENTITY_PARAMS,
)
DETAIL_PARAMS = (
    Param(
        "limit",
        "integer",
        f"Pods and Events per page, 1..{MAX_PAGE} (default {DEFAULT_PAGE}).",
    ),
    Param("pods_cursor", "string", "The pods_next_cursor of the previous answer."),
    Param("events_cursor", "string", "The events_next_cursor of the previous answer."),
)
LOG_PARAMS = (
    Param("pod", "string", "A pod's name or uid."),
    Param("container", "string", "A container's name."),
    Param("limit", "integer", f"Tails, 1..{LOG_TAILS_MAX} (default {LOG_TAILS_PAGE})."),
    Param("cursor", "string", "The next_cursor of the previous page."),
)
STATS_PARAMS = (
    Param(
        "by",
        "string",
        f"One of {', '.join(STATS_GROUPS)} (default {DEFAULT_GROUP}).",
        "group_by",
    ),
    Param("namespace", "string", "Only this namespace's jobs."),
    Param("since", "time", "Jobs created at or after (RFC 3339 time or date)."),
    Param("until", "time", "Jobs created before."),
)
USAGE_PARAMS = (
    Param(
        "by",
        "string",
        f"One of {', '.join(USAGE_GROUPS)} (default {USAGE_GROUPS[0]}).",
        "group_by",
    ),
    Param(
        "every",
        "string",
        "day, week (from Monday) or month: a row per group and UTC period, named by its first day.",
    ),
    Param("namespace", "string", "Only this namespace's jobs."),
    Param("cluster", "string", CLUSTER_MEANING),
    Param("since", "time", "The window's start, UTC (default 30 days before its end)."),
    Param("until", "time", "The window's end, UTC (default now)."),
)


# A list's cluster: one asked for, the clusters a caller may read (``reading.fleet``'s
# scope of a list that names none), or None: every cluster.
Clusters = str | tuple[str, ...] | None


@dataclasses.dataclass(frozen=True)
class Page:
    """One page of a list, and the cursor of the next one (None on the last page)."""

    items: list[dict[str, Any]]
    next_cursor: str | None

    def as_json(self) -> dict[str, Any]:
        """The page as the CLI and the API answer it."""
        return {"items": self.items, "next_cursor": self.next_cursor}


@dataclasses.dataclass(frozen=True)
class KnownKinds:
    """The kinds a filter may name: of a job, and of the object an Event is about."""

    jobs: tuple[str, ...]
    objects: tuple[str, ...]


def known_kinds(tracked: Iterable[JobKind] = BUILTIN_KINDS) -> KnownKinds:
    """The kinds of the ``tracked`` kinds (the operator's settings' ``kinds``), plain
    batch Jobs, pods and intermediate objects: given to the read side once, as it starts."""
    jobs = {kind.kind for kind in (*tracked, BATCH_JOB)}
    objects = {*jobs, "Pod", *(kind.kind for kind in INTERMEDIATE_KINDS)}
    return KnownKinds(tuple(sorted(jobs)), tuple(sorted(objects)))


BUILTIN = known_kinds()


def parse_time(value: str, name: str) -> datetime.datetime:
    """An RFC 3339 time or a date (midnight UTC); naive times are UTC. Any year and any
    offset are taken: a time outside what the database stores is clamped to its range."""
    refused = BadQuery(
        Named(name),
        f": '{visible(value, limit=QUOTED)}' is not a date or time "
        "(use 2026-11-29 or 2026-11-29T10:00:00Z)",
    )
    if len(value) > MAX_TIME_TEXT:
        raise refused
    try:
        parsed = from_rfc3339(value.strip())
    except ValueError:
        raise refused from None
    try:
        moment = parsed.astimezone(datetime.UTC)
    except OverflowError:
        # Year 1 with a positive offset, or 9999 with a negative one.
        return EARLIEST if parsed.year < 2000 else LATEST
    return min(max(moment, EARLIEST), LATEST)


def page_size(limit: int | None, default: int = DEFAULT_PAGE, most: int = MAX_PAGE) -> int:
    """The page size asked for (``default`` when none), refused outside 1..``most``."""
    if limit is None:
        return default
    if not 1 <= limit <= most:
        raise BadQuery(Named("limit"), f": {limit} is outside 1..{most}")
    return limit


def check_status(status: str | None, known: Sequence[str] = JOB_STATUSES) -> str | None:
    """The status if it is one the archive records (case-insensitive), else BadQuery."""
    return one_of("status", status, known)


def one_of(name: str, value: str | None, known: Sequence[str]) -> str | None:
    """The value as the archive spells it if it is one of ``known`` (case-insensitive),
    else BadQuery listing them: an unknown value is a mistake, not an empty answer."""
    if value is None:
        return None
    for candidate in known:
        if candidate.lower() == value.lower():
            return candidate
    raise BadQuery(
        Named(name), f": '{visible(value, limit=QUOTED)}' is not one of {', '.join(known)}"
    )


def fits(name: str, value: str | None, width: int) -> str | None:
    """The value if it can match a column ``width`` characters wide, else BadQuery."""
    if value is not None and len(value) > width:
        raise BadQuery(
            Named(name), f": {len(value)} characters, longer than any stored value ({width})"
        )
    return value


def check_namespace(namespace: str | None) -> str | None:
    """A namespace as asked, if one can be named so (a DNS label, as the API server makes
    every namespace; "" for none, an Event's about a cluster-scoped object), else
    BadQuery: before any review of it, and never an empty answer for a typo's case."""
    fits("namespace", namespace, NAMESPACE_LENGTH)
    if namespace and not re.fullmatch(NAMESPACE_PATTERN, namespace):
        raise BadQuery(
            Named("namespace"),
            f": '{visible(namespace, limit=QUOTED)}' is not a namespace's name (lowercase "
            f"letters, digits and '-', at most {NAMESPACE_NAME_LENGTH}, beginning and ending "
            "alphanumeric)",
        )
    return namespace


def check_cluster(cluster: str) -> str:
    """A cluster's name as asked, if it can be one (decision 35), else BadQuery."""
    fits("cluster", cluster, CLUSTER_LENGTH)
    if not re.fullmatch(CLUSTER_PATTERN, cluster):
        raise BadQuery(
            Named("cluster"),
            f": '{visible(cluster, limit=QUOTED)}' is not a cluster's name "
            "(letters, digits, '-', '_', '.')",
        )
    return cluster


def cluster_filter(cluster: Clusters) -> dict[str, Any]:
    """The ORM filter of a list's ``cluster`` (one named was checked as its record was
    made: ``reading.lists``): equal to one, in a scope's, or none."""
    if cluster is None:
        return {}
    if isinstance(cluster, str):
        return {"cluster": cluster}
    return {"cluster__in": list(cluster)}
