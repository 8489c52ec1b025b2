"""What the recorder asks the database when the attribution's memory cannot answer: the
job of a pod, the live job of a name, a job's row.

Each lookup is asked again until the database answers (``storage.waiting.ride_out``):
an object whose lookup failed must not wait for its job or pod to appear, as one
deleted meanwhile never appears again, and the object would be lost. And a job's is
asked once at a time, shared by everyone who asks while it is being answered: a
shard's catch-up handles the pods of a job before the job (its lists of every kind
and namespace arrive together, in any order), and Kopf handles them concurrently:
asked each, 100,000 pods asked as many queries at once, which queued in the pool
ahead of the writer's commits and stopped them for tens of seconds.
"""

import asyncio
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

from jobarchive.core.rows import AttemptRow, JobRow, QuotaRow
from jobarchive.recording.attribution import Attributed, Attribution, Subject
from jobarchive.recording.convert import IntermediateLink, NameLink, OwnerLink
from jobarchive.storage.models import Job
from jobarchive.storage.store import Store, quotas_of
from jobarchive.storage.waiting import ride_out

K = TypeVar("K", bound=Hashable)
PodLink = OwnerLink | IntermediateLink | NameLink
T = TypeVar("T")


class Shared(Generic[K, T]):
    """One ``ask(key)`` in flight per key: whoever asks meanwhile waits for its answer
    (or its exception) instead of asking again."""

    def __init__(self, ask: Callable[[K], Awaitable[T]]) -> None:
        self._ask = ask
        self._asking: dict[K, asyncio.Future[T]] = {}

    async def __call__(self, key: K) -> T:
        """The answer for ``key``, from the question in flight if there is one."""
        pending = self._asking.get(key)
        if pending is None:
            pending = asyncio.ensure_future(self._ask(key))
            self._asking[key] = pending
            pending.add_done_callback(lambda _: self._asking.pop(key))
        # Shielded: one asker cancelled (Kopf stopping its handler) must not cancel the
        # question the others wait for. A failure nobody waits for any more is marked
        # retrieved by the shield, so asyncio reports nothing.
        return await asyncio.shield(pending)


class Lookups:
    """The attribution's answers, from memory or else from the database.

    Each answer is read from memory again after the database answered: what it asked
    about may have been recorded meanwhile, and from there to the caller's wait
    nothing yields, so no release can slip between.
    """

    def __init__(self, store: Store, attribution: Attribution) -> None:
        self.store = store
        self.attribution = attribution
        self._job = Shared(self._ask_job)

    async def linked_job(self, pod_uid: str, link: PodLink) -> tuple[Attributed | None, Subject]:
        """The job of a pod, by what links the pod to it (None: not known yet), and what
        the pod waits for meanwhile."""
        if isinstance(link, OwnerLink):
            return link.job_uid, link.job_uid
        if isinstance(link, IntermediateLink):
            return await self.owned_pod_job(link.owner_uid, pod_uid), link.owner_uid
        return await self.labelled_job(pod_uid, link), (link.namespace, link.job_name)

    async def pod_job(self, pod_uid: str) -> Attributed | None:
        """The job the pod was attributed to: as known here, else as its stored row
        says; None if neither knows the pod."""
        job_uid = self.attribution.pod_job(pod_uid)
        if job_uid is not None or self.attribution.knows_all:
            return job_uid
        stored = await ride_out(lambda: self.store.pod_job_uid(pod_uid))
        known = self.attribution.pod_job(pod_uid)
        return known if known is not None else stored

    async def owned_pod_job(self, owner_uid: str, pod_uid: str) -> Attributed | None:
        """The job of a pod whose controller is the intermediate object ``owner_uid``:
        the owner's, else (the owner deleted before this update came, or before a
        restart) the pod's own, as its stored row says."""
        job_uid = self.attribution.owner_job(owner_uid)
        if job_uid is not None:
            return job_uid
        job_uid = await self.pod_job(pod_uid)
        known = self.attribution.owner_job(owner_uid)
        return known if known is not None else job_uid

    async def labelled_job(self, pod_uid: str, link: NameLink) -> Attributed | None:
        """The job of a pod its labels link by name: the one it was attributed to if it
        was, else the live job of that name, known here or in the database; None if
        none is.

        A pod never changes jobs: its late updates, or those seen after a restart, must
        not move it to a job of the same name created since.
        """
        attributed = await self.pod_job(pod_uid)
        if attributed is not None:
            return attributed
        namespace, name = link.namespace, link.job_name
        job_uid = self.attribution.job_uid(namespace, name)
        if job_uid is None and not self.attribution.knows_all:
            job_uid = await ride_out(lambda: self.store.live_job_uid(namespace, name))
        return self.attribution.job_uid(namespace, name) or job_uid

    async def job(self, job_uid: str) -> None:
        """Ask the database for the job ``job_uid`` and tell the attribution its
        namespace, or that it is not stored; one question in flight per job."""
        await self._job(job_uid)

    async def job_row(self, job_uid: str) -> JobRow | None:
        """The stored row of the job ``job_uid``, if it is stored."""
        rows = await ride_out(lambda: self.store.rows(Job, [job_uid]))
        return rows[0] if rows else None

    async def latest_attempt(self, workload_uid: str) -> AttemptRow | None:
        """The stored row of a Workload's latest attempt, if one is stored."""
        return await ride_out(lambda: self.store.latest_attempt(workload_uid))

    async def quotas_of(self, queue_uid: str) -> tuple[bool, list[QuotaRow]]:
        """Whether any quota row of a ClusterQueue is stored, and its rows in force."""
        return await ride_out(lambda: quotas_of(self.store, queue_uid))

    async def _ask_job(self, job_uid: str) -> None:
        row = await self.job_row(job_uid)
        self.attribution.job_looked_up(job_uid, row["namespace"] if row else None)
