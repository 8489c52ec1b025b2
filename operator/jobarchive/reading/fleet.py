"""Which clusters' rows a caller may read, when one archive holds a fleet's (decision 36).

The rows of the cluster the read side runs in (``home``) are read as they always were:
the namespace's review decides. A row of another cluster needs, beside it, ``get`` on
the virtual resource ``clusters`` of the face's group (``jobarchive.io`` for the JSON
API and the console at ``/``, ``archive.jobarchive.io`` under the aggregated prefix)
with that cluster's name as the resource name, reviewed cluster-scoped on the reading
cluster: a grant by RBAC ``resourceNames``. A review that names no cluster is granted
only by a rule naming none, which covers every cluster.

A list that names no cluster is read within its ``scope``: with ``auth none``, every
cluster; else the home cluster and each of the archive's clusters the caller was
granted (the first ``MOST`` clusters holding a job, read every ``TTL``; past them the
list is refused, never cut), as an IN filter, or every cluster for a caller granted
them all. An archive of one cluster costs no review.
"""

import asyncio
import time
from collections.abc import Awaitable, Callable

from jobarchive.reading import auth
from jobarchive.reading.params import BadQuery, Clusters, Named

CLUSTERS = "clusters"
# The clusters a scope reviews at most, and at once; how long the archive's list of
# clusters is kept before it is read again.
MOST = 100
REVIEWS_AT_ONCE = 8
TTL = 30.0

Known = Callable[[int], Awaitable[tuple[list[str], bool]]]


class Fleet:
    """The cluster the read side runs in, and what a caller may read of the others."""

    def __init__(self, home: str, known: Known, ttl: float = TTL) -> None:
        self.home = home
        self._known = known
        self._ttl = ttl
        self._cached: tuple[float, list[str], bool] | None = None

    async def may(
        self, access: auth.Access, identity: auth.Identity, group: str, cluster: str
    ) -> bool:
        """Whether the caller may read rows of ``cluster`` (""): of every cluster)."""
        if cluster and cluster == self.home:
            return True
        grant = auth.Resource(group, CLUSTERS, name=cluster)
        return await access.allowed(identity, "get", auth.ALL_NAMESPACES, grant)

    async def scope(self, access: auth.Access, identity: auth.Identity, group: str) -> Clusters:
        """The clusters a list that names none is read within: None for every cluster,
        else the home cluster and those of the archive the caller was granted."""
        if isinstance(access, auth.NoAuth):
            return None
        known, more = await self._archived()
        if all(cluster == self.home for cluster in known):
            # One cluster's archive costs no review; the filter still keeps out a
            # cluster whose first rows came since the clusters were read.
            return (self.home,)
        if await self.may(access, identity, group, ""):
            return None
        if more:
            raise BadQuery(
                f"the archive holds jobs of more than {MOST} clusters: name a ",
                Named("cluster"),
                f", or be granted get on every {CLUSTERS}.{group}",
            )
        turns = asyncio.Semaphore(REVIEWS_AT_ONCE)

        async def granted(cluster: str) -> bool:
            async with turns:
                return await self.may(access, identity, group, cluster)

        others = [cluster for cluster in known if cluster != self.home]
        try:
            async with asyncio.TaskGroup() as tasks:
                answers = [tasks.create_task(granted(cluster)) for cluster in others]
        except ExceptionGroup as failed:
            # The first review that failed says why (a 503), as a single one would.
            raise failed.exceptions[0] from None
        allowed = [name for name, answer in zip(others, answers, strict=True) if answer.result()]
        return tuple(sorted({self.home, *allowed}))

    async def _archived(self) -> tuple[list[str], bool]:
        """The archive's clusters that hold a job (the first ``MOST``), and whether there
        are more; read again once ``TTL`` old."""
        now = time.monotonic()
        if self._cached is None or now - self._cached[0] >= self._ttl:
            names, more = await self._known(MOST)
            self._cached = (now, names, more)
        return self._cached[1], self._cached[2]


def sees(scope: Clusters, cluster: str | None) -> bool:
    """Whether a row of ``cluster`` is within ``scope``."""
    return scope is None or cluster == scope or (isinstance(scope, tuple) and cluster in scope)
