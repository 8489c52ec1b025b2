"""The live jobs of the tracked kinds, listed before Kopf's watches begin.

Kopf lists every tracked kind in every namespace served at once and hands each object
to its handler as the lists arrive, in no order between kinds. A pod handled before its
job cannot be judged (is it in the job's namespace?): it asks the database, then waits
for the job in memory, within bounds. A shard serving 50 namespaces opens 24 x 50 lists
together, and its pods came before their jobs by the thousand (ARCHITECTURE.md,
decision 22).

So the operator lists the live jobs first, metadata only, in the places it serves, and
tells the attribution each one's namespace and name: a pod whose owner or labels name
a job live at the start is judged the moment it is handled. (A pod reached through an
intermediate object, a JobSet, batch Job or RayCluster, still waits for that object.)
Job lists are small (one object per job), so this costs a few requests, not a second
catch-up. Whatever cannot be listed (a kind not installed, a namespace not granted, a
server that does not answer in time) is learnt from the watches, as before.

What it decides: the pods and Events of a job listed here are stored even if the job's
own row never is (the job is deleted before Kopf lists it, or it is invalid, or the
database refuses it; each is logged). Before, they waited for it and were given up.
"""

import asyncio
import dataclasses
import logging
import time
from collections.abc import Iterable, Sequence

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from jobarchive.cluster import api_client, list_path, listed
from jobarchive.kinds import JobKind
from jobarchive.recording.attribution import Attribution
from jobarchive.scope import Scope

logger = logging.getLogger(__name__)

# Lists in flight at once: a shard's 16 kinds x 50 namespaces are 800 small requests.
CONCURRENCY = 8
# The start waits no longer than this for the listing; what is found by then is used.
WITHIN = 60.0
NOT_FOUND = 404


@dataclasses.dataclass
class LiveJobs:
    """What the listing found: (namespace, name, uid) of each live job, the lists made,
    and why those that failed did (404s, kinds not installed, are not failures)."""

    jobs: list[tuple[str, str, str]] = dataclasses.field(default_factory=list)
    lists: int = 0
    failures: list[str] = dataclasses.field(default_factory=list)


async def prime(attribution: Attribution, kinds: Iterable[JobKind], served: Scope) -> None:
    """Tell ``attribution`` the live jobs of ``kinds`` in the namespaces ``served``; logs
    how many, and what could not be listed. Never raises for the cluster's sake."""
    started = time.monotonic()
    try:
        # Each step is cut: the client (a kubeconfig's credential plugin may run), the
        # namespaces matching a pattern, the lists. The watches wait for all of it.
        async with await asyncio.wait_for(api_client(), WITHIN) as api:
            places = await asyncio.wait_for(served.namespaces(api), WITHIN)
            found = await live_jobs(api, list(kinds), [None] if places is None else places)
    # Whatever went wrong only leaves the jobs to the watches, which Kopf starts next.
    except Exception as exc:
        logger.warning(
            "Could not list the live jobs before watching (%s); pods handled before their "
            "job wait for it",
            failure(exc),
        )
        return
    attribution.jobs_live(found.jobs)
    logger.info(
        "Listed %d live jobs before watching (%d lists, %.1f s)",
        len(found.jobs),
        found.lists,
        time.monotonic() - started,
    )
    if found.failures:
        logger.warning(
            "Could not list %d of %d job lists before watching, their jobs are learnt from "
            "the watches: %s",
            len(found.failures),
            found.lists,
            "; ".join(found.failures[:3]) + (" ..." if len(found.failures) > 3 else ""),
        )


async def live_jobs(
    api: client.ApiClient,
    kinds: Sequence[JobKind],
    places: Sequence[str | None],
    within: float = WITHIN,
) -> LiveJobs:
    """List the jobs of ``kinds`` in ``places`` (None: the whole cluster), metadata only;
    what was found within ``within`` seconds, the rest counted as failed."""
    found = LiveJobs()
    limit = asyncio.Semaphore(CONCURRENCY)
    unfinished: dict[str, None] = {}

    async def one(path: str) -> None:
        async with limit:
            try:
                async for meta in listed(api, path):
                    job = identity(meta)
                    if job is not None:
                        found.jobs.append(job)
            # One list's failure, of whatever kind, leaves only its jobs to the watches.
            except Exception as exc:
                if not (isinstance(exc, ApiException) and exc.status == NOT_FOUND):
                    found.failures.append(f"{path}: {failure(exc)}")
            del unfinished[path]

    paths = [list_path(k.group, k.version, k.plural, place) for k in kinds for place in places]
    unfinished.update(dict.fromkeys(paths))
    found.lists = len(paths)
    try:
        await asyncio.wait_for(asyncio.gather(*map(one, paths)), within)
    except TimeoutError:
        found.failures.extend(f"{path}: not listed within {within:g} s" for path in unfinished)
    return found


def failure(exc: Exception) -> str:
    """Why a request failed, in a few words: the status, else the exception's type and
    the start of its message."""
    if isinstance(exc, ApiException):
        return f"{exc.status} {exc.reason}"
    return f"{type(exc).__name__} {str(exc)[:200]}".rstrip()


def identity(meta: dict[str, object]) -> tuple[str, str, str] | None:
    """(namespace, name, uid) of a listed job; None when the server left one out."""
    fields = meta.get("namespace"), meta.get("name"), meta.get("uid")
    namespace, name, uid = (value if isinstance(value, str) else "" for value in fields)
    return (namespace, name, uid) if namespace and name and uid else None
