"""What the read commands ask of the archive, wherever it is read: the database
directly (``direct``) or the aggregated API with a kubeconfig (``remote``). The
commands (``reads``) print the same rows from either."""

import dataclasses
from collections.abc import Mapping
from typing import Any, Generic, Protocol, TypeVar

from jobarchive.cli.options import BadSetting
from jobarchive.reading.params import Page

T = TypeVar("T")


@dataclasses.dataclass(frozen=True)
class Kubeconfig:
    """The kubeconfig the read commands go through the API with: a file (None: as
    kubectl finds it, ``KUBECONFIG`` or ``~/.kube/config``) and a context (None: its
    current one); ``given`` when named on the command line, not taken from KUBECONFIG."""

    path: str | None = None
    context: str | None = None
    given: bool = True


@dataclasses.dataclass(frozen=True)
class Where:
    """Where the commands read: the database (at ``db_url`` when given on the command
    line, else the operator's settings), or through the API with ``kubeconfig``."""

    db_url: str | None = None
    kubeconfig: Kubeconfig | None = None

    def database(self) -> str | None:
        """The database URL of a command that works on the database only (``serve``,
        ``prune``, ``migrate``); a kubeconfig named on the command line is refused."""
        if self.kubeconfig is not None and self.kubeconfig.given:
            raise BadSetting(
                "--kubeconfig and --context are for the read commands (jobs, job, logs, "
                "events, stats, usage): this one works on the database"
            )
        return self.db_url


@dataclasses.dataclass(frozen=True)
class Found(Generic[T]):
    """What a reference to one job (``NAMESPACE/NAME``, ``NAMESPACE/UID``, a uid) found:
    the jobs it names, and what was read of the job when it names exactly one."""

    jobs: list[dict[str, Any]]
    read: T | None


class Archive(Protocol):
    """One command's reads, each under the parameters' ``Param.key``."""

    def jobs(self, filters: Mapping[str, Any], limit: int | None, cursor: str | None) -> Page:
        """A page of the job list."""

    def events(self, filters: Mapping[str, Any], limit: int | None, cursor: str | None) -> Page:
        """A page of the Event list."""

    def job(self, reference: str, **page: Any) -> Found[dict[str, Any]]:
        """A job's detail: the job, a page of its pods and of its Events."""

    def logs(self, reference: str, **narrowed: Any) -> Found[Page]:
        """A page of a job's log tails."""

    def stats(self, **window: Any) -> list[dict[str, Any]]:
        """Jobs counted by a column, with their durations."""

    def usage(self, **window: Any) -> list[dict[str, Any]]:
        """Usage rolled up by a column over a window (``reading.usage.columns``)."""
