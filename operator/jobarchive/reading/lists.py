"""A list as every face asks it: the record its table's filters make (``JobQuery``,
``PodQuery``, ``EventQuery``), its namespace and cluster checked as it is made, so
before any review of them, once; a request parsed once into its record, page size and
cursor (``Asked``); and the list itself (``Listing``), which reads a page of it within
the clusters its caller may read, each row in the shape its face answers, in one step.
Pure, as ``reading.params``: the CLI makes its records without a database.
"""

import dataclasses
import datetime
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Generic, Protocol, TypeVar

from jobarchive.reading.params import (
    Clusters,
    KnownKinds,
    Page,
    Param,
    check_cluster,
    check_namespace,
)

# A row as a face answers it: under the seed's JSON names (``queries.shapes``) or as an
# object (``kube.objects``); a job's is given the time it is answered at, too.
Shape = Callable[..., dict[str, Any]]


def _placed(namespace: str | None, cluster: Clusters) -> None:
    """A list's namespace and cluster as a record names them, else BadQuery: no
    namespace or cluster so named can be granted or stored (a scope is no name)."""
    check_namespace(namespace)
    if isinstance(cluster, str):
        check_cluster(cluster)


@dataclasses.dataclass(frozen=True)
class JobQuery:
    """Filters of the job list (``JOB_PARAMS``); None means no filter."""

    namespace: str | None = None
    cluster: Clusters = None
    name_prefix: str | None = None
    name_contains: str | None = None
    kind: str | None = None
    status: str | None = None
    region: str | None = None
    tenant: str | None = None
    owner: str | None = None
    queue: str | None = None
    created_since: datetime.datetime | None = None
    created_until: datetime.datetime | None = None
    finished_since: datetime.datetime | None = None
    finished_until: datetime.datetime | None = None
    in_cluster: bool | None = None
    failure: str | None = None

    def __post_init__(self) -> None:
        _placed(self.namespace, self.cluster)


@dataclasses.dataclass(frozen=True)
class IdentifiedJobQuery(JobQuery):
    """The job list's filters with an exact name and a uid (``IDENTITY_PARAMS``): what
    the aggregated API's ``metadata.name`` and ``metadata.uid`` select, and the CLI's
    ``--exact-name``."""

    exact_name: str | None = None
    uid: str | None = None


@dataclasses.dataclass(frozen=True)
class Identity:
    """An exact name and a uid (``IDENTITY_PARAMS``); None means no filter."""

    name: str | None = None
    uid: str | None = None


@dataclasses.dataclass(frozen=True)
class PodQuery:
    """Filters of the pod list (``POD_PARAMS``); None means no filter."""

    namespace: str | None = None
    cluster: Clusters = None
    job_uid: str | None = None
    status: str | None = None
    exact_name: str | None = None
    uid: str | None = None

    def __post_init__(self) -> None:
        _placed(self.namespace, self.cluster)


@dataclasses.dataclass(frozen=True)
class EventQuery:
    """Filters of the Event list (``EVENT_PARAMS``); None means no filter."""

    namespace: str | None = None
    cluster: Clusters = None
    object_name: str | None = None
    object_uid: str | None = None
    object_kind: str | None = None
    type: str | None = None
    reason: str | None = None
    since: datetime.datetime | None = None
    until: datetime.datetime | None = None

    def __post_init__(self) -> None:
        _placed(self.namespace, self.cluster)


class Placed(Protocol):
    """What every list's record names, and a read of it reviews first."""

    @property
    def namespace(self) -> str | None:
        """The namespace the list is read in (None: all of them)."""

    @property
    def cluster(self) -> Clusters:
        """The cluster the list names (None: none)."""


F = TypeVar("F", bound=Placed)


@dataclasses.dataclass(frozen=True)
class Asked(Generic[F]):
    """A list's request, parsed once: its filters' record, its page size (None: the
    default) and the cursor it goes on from."""

    filters: F
    limit: int | None = None
    cursor: str | None = None


@dataclasses.dataclass(frozen=True)
class Listing(Generic[F]):
    """A list as every face offers it: the filters of its table (``params``), the record
    they make (``filters``, called with their values keyed by ``Param.key``), and a page
    of what a request selects, read within a scope of clusters (None: no other bound),
    each row as a face shapes it (None: as the JSON API answers it)."""

    params: tuple[Param, ...]
    filters: Callable[..., F]
    page: Callable[[Asked[F], Clusters, KnownKinds, Shape | None], Awaitable[Page]]

    def asked(
        self, values: Mapping[str, Any], limit: int | None = None, cursor: str | None = None
    ) -> Asked[F]:
        """The request of these typed filter values, its record made (and so checked)."""
        return Asked(self.filters(**values), limit, cursor)
