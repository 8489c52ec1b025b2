"""The live jobs of the tracked kinds, listed before Kopf's watches begin.

Kopf lists every tracked kind in every namespace served at once and hands each object
to its handler as the lists arrive, in no order between kinds. A pod handled before its
job cannot be judged (is it in the job's namespace?): it asks the database, then waits
for the job in memory, within bounds. A shard serving 50 namespaces opens 24 x 50 lists
together, and its pods came before their jobs by the thousand (ARCHITECTURE.md,
decision 22).

So the operator lists the live jobs first, metadata only, in the places it serves, and
tells the attribution each one's namespace and name; and the intermediate objects
(JobSets, batch Jobs, RayClusters) whose controllers lead to one of those jobs in their
own namespace, as the recorder judges them. A pod whose owner, labels or intermediate
owner names a job live at the start is judged the moment it is handled. These lists
are small (an object per job, a few per TrainJob or RayJob), so this costs a few
requests, not a second catch-up. Whatever cannot be listed (a kind not installed, a
namespace not granted, a server that does not answer in time) is learnt from the
watches, as before.

What it decides: the pods and Events of a job listed here are stored even if the job's
own row never is (the job is deleted before Kopf lists it, or it is invalid, or the
database refuses it; each is logged). Before, they waited for it and were given up.
"""

import asyncio
import dataclasses
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from jobarchive.core.kinds import (
    INTERMEDIATE_KINDS,
    JobKind,
    KindRegistry,
    is_intermediate,
)
from jobarchive.core.untrusted import controller_of, text
from jobarchive.infra.cluster import api_client, list_path, listed
from jobarchive.infra.logs import shown
from jobarchive.infra.scope import Scope
from jobarchive.recording.attribution import Attribution

logger = logging.getLogger(__name__)

# Lists in flight at once: a shard's 19 kinds x 50 namespaces are 950 small requests.
CONCURRENCY = 8
# Each step of the start waits no longer than this; what is found by then is used.
WITHIN = 60.0
NOT_FOUND = 404


@dataclasses.dataclass(frozen=True)
class Owned:
    """An intermediate object as listed: its uid and namespace, and the uid of its
    controller, a tracked job (``by_job``) or another intermediate object."""

    uid: str
    namespace: str
    owner: str
    by_job: bool


@dataclasses.dataclass
class Listing:
    """What the listing found: (namespace, name, uid) of each live job, the intermediate
    objects that may lead to one, the lists made, and why those that failed did (404s,
    kinds not installed, are not failures)."""

    jobs: list[tuple[str, str, str]] = dataclasses.field(default_factory=list)
    owned: list[Owned] = dataclasses.field(default_factory=list)
    lists: int = 0
    failures: list[str] = dataclasses.field(default_factory=list)


async def prime(attribution: Attribution, kinds: KindRegistry, served: Scope) -> None:
    """Tell ``attribution`` the live jobs of ``kinds`` in the namespaces ``served``, and
    the intermediate objects that are theirs; logs how many, and what could not be
    listed. Never raises for the cluster's sake."""
    started = time.monotonic()
    try:
        # Each step is cut: the client (a kubeconfig's credential plugin may run), the
        # namespaces matching a pattern, the lists. The watches wait for all of it.
        async with await asyncio.wait_for(api_client(), WITHIN) as api:
            places = await asyncio.wait_for(served.namespaces(api), WITHIN)
            found = await list_live(api, kinds, [None] if places is None else places)
    # Whatever went wrong only leaves the jobs to the watches, which Kopf starts next.
    except Exception as exc:
        logger.warning(
            "Could not list the live jobs before watching (%s); pods handled before their "
            "job wait for it",
            failure(exc),
        )
        return
    attribution.jobs_live(found.jobs)
    theirs = owners(found.jobs, found.owned)
    for uid, job_uid in theirs.items():
        # Before the watches nothing waits, so nothing is released here.
        attribution.intermediate_seen(uid, job_uid)
    logger.info(
        "Listed %d live jobs and %d of their intermediate objects before watching "
        "(%d lists, %.1f s)",
        len(found.jobs),
        len(theirs),
        found.lists,
        time.monotonic() - started,
    )
    if found.failures:
        logger.warning(
            "Could not list %d of %d lists before watching, their objects are learnt from "
            "the watches: %s",
            len(found.failures),
            found.lists,
            "; ".join(found.failures[:3])
            + (f"; and {len(found.failures) - 3} more" if len(found.failures) > 3 else ""),
        )


async def list_live(
    api: client.ApiClient,
    kinds: KindRegistry,
    places: Sequence[str | None],
    within: float = WITHIN,
) -> Listing:
    """List the jobs of ``kinds`` and the intermediate objects in ``places`` (None: the
    whole cluster), metadata only; what was found within ``within`` seconds, the lists
    not done by then counted as failed."""
    found = Listing()
    limit = asyncio.Semaphore(CONCURRENCY)
    unfinished: dict[str, None] = {}

    def job(meta: Mapping[str, Any]) -> None:
        if (listed_job := identity(meta)) is not None:
            found.jobs.append(listed_job)

    def intermediate(meta: Mapping[str, Any]) -> None:
        if (listed_object := owned(meta, kinds)) is not None:
            found.owned.append(listed_object)

    async def one(path: str, keep: Callable[[Mapping[str, Any]], None]) -> None:
        async with limit:
            try:
                async for meta in listed(api, path):
                    keep(meta)
            # One list's failure, of whatever kind, leaves only its objects to the watches.
            except Exception as exc:
                if not (isinstance(exc, ApiException) and exc.status == NOT_FOUND):
                    found.failures.append(f"{path}: {failure(exc)}")
            del unfinished[path]

    def paths(of: Sequence[JobKind]) -> list[str]:
        return [list_path(k.group, k.version, k.plural, place) for k in of for place in places]

    lists = [(path, job) for path in paths(list(kinds))]
    lists += [(path, intermediate) for path in paths(INTERMEDIATE_KINDS)]
    unfinished.update(dict.fromkeys(path for path, _ in lists))
    found.lists = len(lists)
    try:
        await asyncio.wait_for(asyncio.gather(*(one(*each) for each in lists)), within)
    except TimeoutError:
        found.failures.extend(f"{path}: not listed within {within:g} s" for path in unfinished)
    return found


def owners(jobs: Sequence[tuple[str, str, str]], listed_objects: Sequence[Owned]) -> dict[str, str]:
    """Intermediate object uid -> job uid, for the objects whose controllers lead to a
    listed job, each link within the job's namespace, as the recorder judges them (a
    batch Job of a JobSet of a TrainJob: two links)."""
    namespaces = {uid: namespace for namespace, _, uid in jobs}
    theirs: dict[str, str] = {}
    pending = list(listed_objects)
    while pending:
        later = []
        for item in pending:
            job_uid = item.owner if item.by_job else theirs.get(item.owner)
            if job_uid is None:
                later.append(item)
            elif namespaces.get(job_uid) == item.namespace:
                theirs[item.uid] = job_uid
        # What is left leads to no listed job, or round in a cycle no API server makes.
        if len(later) == len(pending):
            break
        pending = later
    return theirs


def owned(meta: Mapping[str, Any], kinds: KindRegistry) -> Owned | None:
    """An intermediate object's identity and controller, when the controller is a
    tracked job or an intermediate object; None otherwise (a CronJob's batch Job)."""
    ref = controller_of(meta.get("ownerReferences"))
    if ref is None:
        return None
    namespace, uid, owner = (
        text(value) for value in (meta.get("namespace"), meta.get("uid"), ref.get("uid"))
    )
    if not (namespace and uid and owner):
        return None
    if kinds.find(ref.get("apiVersion"), ref.get("kind")) is not None:
        return Owned(uid, namespace, owner, by_job=True)
    if is_intermediate(ref.get("apiVersion"), ref.get("kind")):
        return Owned(uid, namespace, owner, by_job=False)
    return None


def failure(exc: Exception) -> str:
    """Why a request failed, in a few words: the status, else the exception's type and
    the start of its message."""
    if isinstance(exc, ApiException):
        return f"{exc.status} {shown(exc.reason)}"
    return f"{type(exc).__name__} {shown(exc)}".rstrip()


def identity(meta: Mapping[str, Any]) -> tuple[str, str, str] | None:
    """(namespace, name, uid) of a listed job; None when the server left one out."""
    namespace, name, uid = (text(meta.get(key)) for key in ("namespace", "name", "uid"))
    return (namespace, name, uid) if namespace and name and uid else None
