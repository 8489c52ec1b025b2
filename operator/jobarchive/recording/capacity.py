"""Kueue's ClusterQueues recorded, passively (decision 44): each version's GPU quotas
as a history (``queue_quota``), a row per change, the row it replaces closed.

A ClusterQueue is cluster-scoped and belongs to no job: nothing is attributed, and
its rows carry only the cluster (decision 35). The recorder remembers each queue's
rows in force between its versions (an LRU of ``REMEMBERED``); a queue it does not
remember (after a restart) is looked up in the database once.
"""

from collections.abc import Mapping
from typing import Any

from jobarchive.core.bounded import Lru
from jobarchive.core.rows import QuotaRow
from jobarchive.recording.convert.quotas import capacity, changes
from jobarchive.recording.lookups import Lookups
from jobarchive.recording.outcomes import RowWriter
from jobarchive.storage.kueue import Quota
from jobarchive.storage.models import utcnow

CLUSTER_QUEUE = "ClusterQueue"
# ClusterQueues whose rows in force are remembered between their versions.
REMEMBERED = 10_000

InForce = dict[tuple[str, str], QuotaRow]


class Capacities:
    """Records Kueue's ClusterQueues as their quotas over time."""

    def __init__(self, accelerators: frozenset[str], lookups: Lookups, rows: RowWriter) -> None:
        self.accelerators = accelerators
        self.lookups = lookups
        self.rows = rows
        self._in_force: Lru[str, InForce] = Lru(REMEMBERED)

    async def seen(self, body: Mapping[str, Any], gone: bool, changed: float | None) -> None:
        """Record one version of a ClusterQueue (``gone``: its deletion); ``changed``:
        when it changed, for the lag metric. Raises InvalidObject when it cannot be read."""
        observed = capacity(body, self.accelerators)
        in_force = self._in_force.get(observed.uid)
        known = in_force is not None
        if in_force is None:
            known, stored = await self.lookups.quotas_of(observed.uid)
            in_force = {(row["flavor"], row["resource"]): row for row in stored}
        written, after = changes(observed, in_force, utcnow(), known, gone)
        stored_rows = await self.rows.write(Quota, CLUSTER_QUEUE, written, [changed] * len(written))
        if len(stored_rows) < len(written):
            # Not all written: read the queue again from the database at its next version.
            self._in_force.pop(observed.uid)
        elif gone:
            self._in_force.pop(observed.uid)
        else:
            self._in_force.put(observed.uid, after)
