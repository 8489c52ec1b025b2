"""The read commands' archive read from the database directly, each command one
session on the read side (``session.reading``), as the API reads it."""

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from jobarchive.cli import session
from jobarchive.cli.archive import Found
from jobarchive.reading import queries

T = TypeVar("T")


class Direct:
    """The archive at the operator's database URL, or at ``db_url`` when given."""

    def __init__(self, db_url: str | None) -> None:
        self.db_url = db_url

    def jobs(
        self, filters: Mapping[str, Any], limit: int | None, cursor: str | None
    ) -> queries.Page:
        """A page of the job list."""
        return session.reading(
            self.db_url, lambda kinds: queries.JOBS.page(filters, limit, cursor, kinds)
        )

    def events(
        self, filters: Mapping[str, Any], limit: int | None, cursor: str | None
    ) -> queries.Page:
        """A page of the Event list."""
        return session.reading(
            self.db_url, lambda kinds: queries.EVENTS.page(filters, limit, cursor, kinds)
        )

    def job(self, reference: str, **page: Any) -> Found[dict[str, Any]]:
        """A job's detail: the job, a page of its pods and of its Events."""
        return self._found(reference, lambda uid: queries.job_detail(uid, **page))

    def logs(self, reference: str, **narrowed: Any) -> Found[queries.Page]:
        """A page of a job's log tails."""
        return self._found(reference, lambda uid: queries.job_log_tails(uid, **narrowed))

    def stats(self, **window: Any) -> list[dict[str, Any]]:
        """Jobs counted by a column, with their durations."""
        return session.reading(self.db_url, lambda _: queries.stats(**window))

    def usage(self, **window: Any) -> list[dict[str, Any]]:
        """Usage rolled up by a column over a window."""
        return session.reading(self.db_url, lambda _: queries.rollup(**window))

    def _found(self, reference: str, read: Callable[[str], Awaitable[T | None]]) -> Found[T]:
        """The jobs ``reference`` names and, when it names one, what ``read`` finds of it,
        in one session."""

        async def look_up(_: queries.KnownKinds) -> Found[T]:
            found = await queries.find_jobs(reference)
            return Found(found, await read(found[0]["job_id"]) if len(found) == 1 else None)

        return session.reading(self.db_url, look_up)
