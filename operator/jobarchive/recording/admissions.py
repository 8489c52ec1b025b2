"""Kueue's Workloads recorded, passively (decision 43): each version's attempt and wait,
completed from what the Workload's earlier versions left, attributed to the job within
its namespace as pods are (decision 17).

Kueue keeps a Workload's latest conditions only. So what one version cannot say, the
versions before it did: the attempt whose quota Kueue has just released after an
eviction is the one remembered as open (its row ended with the eviction); an attempt
still open when a later reservation is seen ended unseen (``evictions.missed``); a
wait's last time is when the next reason, the admission, the finish or the deletion
came. The recorder remembers, per Workload, its open attempt and its wait (an LRU of
``REMEMBERED``); a Workload it does not remember but whose eviction counts say it had
attempts is looked up in the database once (after a restart), the open wait not.

Nothing of the Workload itself is stored. Like an intermediate object, it is learnt as
its job's, so that the Events Kueue writes about it (``Pending``, ``Preempted``,
``EvictedDueTo...``) are stored under that job too.
"""

import dataclasses
from collections.abc import Mapping
from typing import Any

from jobarchive.config import Settings
from jobarchive.core.bounded import Lru
from jobarchive.core.kinds import WORKLOAD
from jobarchive.core.rows import AttemptRow, WaitRow
from jobarchive.recording.attribution import UNRELATED, Attribution, Waiting
from jobarchive.recording.convert import IntermediateLink
from jobarchive.recording.convert.evictions import missed
from jobarchive.recording.convert.workloads import (
    JobLink,
    Observation,
    ended,
    job_link,
    observe,
    waited,
)
from jobarchive.recording.lookups import Lookups
from jobarchive.recording.settling import Settler
from jobarchive.storage.models import utcnow

# Workloads whose open attempt and wait are remembered between their versions.
REMEMBERED = 10_000


@dataclasses.dataclass(slots=True)
class Remembered:
    """What the recorder keeps of a Workload between its versions: its latest attempt
    while it is open, and its wait while it waits."""

    attempt: AttemptRow | None = None
    wait: WaitRow | None = None


class Admissions:
    """Records Kueue's Workloads as attempts and waits of their jobs."""

    def __init__(
        self, settings: Settings, attribution: Attribution, lookups: Lookups, settler: Settler
    ) -> None:
        self.settings = settings
        self.attribution = attribution
        self.lookups = lookups
        self.settler = settler
        self._remembered: Lru[str, Remembered] = Lru(REMEMBERED)

    async def seen(self, body: Mapping[str, Any], gone: bool, changed: float | None) -> None:
        """Record one version of a Workload (``gone``: its deletion); ``changed``: when it
        changed, for the lag metric. Raises InvalidObject when it cannot be read."""
        observed = observe(body, utcnow(), gone)
        link = job_link(body, self.settings.kinds)
        remembered = await self._remembered_of(observed)
        item = Waiting(
            WORKLOAD,
            observed.uid,
            observed.namespace,
            observed.name,
            attempts=attempt_rows(observed, remembered),
            waits=wait_rows(observed, remembered),
            changed=changed,
        )
        if gone:
            self._remembered.pop(observed.uid)
        else:
            self._remembered.put(observed.uid, remembered)
        if isinstance(link, IntermediateLink):
            # An opted-in batch Job's Workload: its job is the batch Job's, once seen.
            job_uid = self.attribution.owner_job(link.owner_uid)
            if job_uid is None:
                self.settler.wait(link.owner_uid, item)
            else:
                await self.settler.settle([item], job_uid)
            return
        await self.settler.settle([item], link.job_uid if isinstance(link, JobLink) else UNRELATED)

    async def _remembered_of(self, observed: Observation) -> Remembered:
        """What is remembered of the Workload; when nothing is but it was evicted before
        (its attempts may be stored, one still open), its latest attempt as stored."""
        remembered = self._remembered.get(observed.uid)
        if remembered is not None:
            return remembered
        if observed.evictions is None:
            return Remembered()
        latest = await self.lookups.latest_attempt(observed.uid)
        return Remembered(latest if latest is not None and latest["end_reason"] is None else None)


def attempt_rows(observed: Observation, remembered: Remembered) -> list[AttemptRow]:
    """The attempt rows a version writes: its own, and the remembered open attempt it
    shows ended (by the eviction it still shows, or by a later reservation)."""
    rows: list[AttemptRow] = []
    previous, current = remembered.attempt, observed.attempt
    if current is None:
        if previous is not None and observed.ending is not None:
            closed = ended(previous, observed.ending, observed.version)
            if closed is not None:
                rows.append(closed)
                remembered.attempt = None
        return rows
    if previous is not None and previous["quota_reserved_at"] < current["quota_reserved_at"]:
        ending = missed(previous, observed.evictions, observed.previously)
        closed = ended(previous, ending, observed.version)
        if closed is not None:
            rows.append(closed)
    rows.append(current)
    remembered.attempt = current if current["end_reason"] is None else None
    return rows


def wait_rows(observed: Observation, remembered: Remembered) -> list[WaitRow]:
    """The wait rows a version writes: its own, and the remembered wait it shows over
    (seen until the next reason began, or until waiting stopped)."""
    rows: list[WaitRow] = []
    previous, current = remembered.wait, observed.wait
    if previous is not None and (current is None or current["wait_id"] != previous["wait_id"]):
        until = current["first_seen"] if current is not None else observed.wait_over
        longer = waited(previous, until, observed.version) if until is not None else None
        if longer is not None:
            rows.append(longer)
    if current is not None:
        rows.append(current)
    remembered.wait = current
    return rows
