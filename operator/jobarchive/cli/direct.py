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
        """A page of the job list (an exact name among its filters), each failed job's
        class in ``failure_class`` (decision 42), read for the page at once."""
        listed = _page(queries.IDENTIFIED_JOBS, filters, limit, cursor)

        async def classified(kinds: queries.KnownKinds) -> queries.Page:
            page = await listed(kinds)
            statuses = {job["job_id"]: job["status"] for job in page.items}
            found = await queries.failure_classes(statuses)
            for job in page.items:
                job["failure_class"] = found.get(job["job_id"])
            return page

        return session.reading(self.db_url, classified)

    def events(
        self, filters: Mapping[str, Any], limit: int | None, cursor: str | None
    ) -> queries.Page:
        """A page of the Event list."""
        return session.reading(self.db_url, _page(queries.EVENTS, filters, limit, cursor))

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
            if len(found.items) != 1:
                return Found(found.items, None, found.next_cursor)
            return Found(found.items, await read(found.items[0]["job_id"]))

        return session.reading(self.db_url, look_up)


def _page(
    listing: queries.Listing[Any], filters: Mapping[str, Any], limit: int | None, cursor: str | None
) -> Callable[[queries.KnownKinds], Awaitable[queries.Page]]:
    """A page of ``listing`` as a session reads it: its record made of the options'
    ``filters`` (and so checked) as the API makes it of a request, then read."""

    async def read(kinds: queries.KnownKinds) -> queries.Page:
        return await listing.page(listing.asked(filters, limit, cursor), None, kinds, None)

    return read
