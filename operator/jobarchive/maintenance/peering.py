"""Whether this replica is the active one, read from Kopf's peering object.

Kopf pauses the watch streams of a replica that sees a live peer of higher
priority, but work the operator starts itself (reconciliation, retention) is not
paused: it asks here first. The rule is Kopf's own: a peer is alive until its
``lastseen`` plus its ``lifetime``, and the live peer of highest priority works.

``Activity`` keeps the answer current for as long as the operator runs, whether the
reconciliation is on or not, so that retention alone (``JOBARCHIVE_RESYNC_INTERVAL=0``)
still knows whether to prune. Until the peering object was first read the answer is
"not known yet", which counts as standing by: two replicas starting together never
both work. With ``kopf run --standalone`` the replica is the only one, and active
from the start.

Under ``--namespace`` Kopf keeps one ``KopfPeering`` of that name in every namespace it
serves, and pauses the whole operator while a live peer outranks it in any of them:
``is_active`` reads them all and applies the same rule.

With ``--peering`` the peering is mandatory: Kopf pauses until the object exists. So
that one ``kubectl apply`` installs everything (no object in the same apply as its
CRD), the operator creates that one object itself (``keep_objects``), in each served
namespace when namespaced, and nothing else; RBAC cannot limit ``create`` to a
resource name, so the role grants ``create`` on the peering resource.
"""

import asyncio
import dataclasses
import datetime
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from jobarchive.core.times import timestamp
from jobarchive.core.untrusted import integer, mapping
from jobarchive.infra import metrics
from jobarchive.infra.cluster import api_client, get_json, post_json
from jobarchive.infra.logs import shown
from jobarchive.infra.scope import CLUSTER, Scope

logger = logging.getLogger(__name__)
# Kopf assumes this lifetime for a peer that states none.
DEFAULT_LIFETIME = 60
# Kopf's peering name when none is given (it then uses the object only if it exists).
KOPF_DEFAULT_NAME = "default"
GROUP_VERSION = "kopf.dev/v1"
# How often missing peering objects are looked for: Kopf pauses every stream while a
# served namespace lacks its object (a namespace that matches a pattern, just created).
KEEP_INTERVAL = 5.0


@dataclasses.dataclass(frozen=True)
class Peering:
    """This replica's place in Kopf's peering: no name when standalone. ``scope`` says
    whether the peering is namespaced (and where) and whether it is mandatory."""

    name: str | None
    priority: int
    scope: Scope = CLUSTER

    @property
    def namespaced(self) -> bool:
        """Whether Kopf uses a ``KopfPeering`` per served namespace."""
        return not self.scope.clusterwide

    @property
    def mandatory(self) -> bool:
        """Whether the object must exist (``--peering``): Kopf waits for it."""
        return self.name is not None and self.scope.peering is not None

    def path(self, namespace: str | None) -> str:
        """The peering object's path in the API (``namespace`` None: cluster-wide)."""
        return f"{self.collection(namespace)}/{self.name}"

    def collection(self, namespace: str | None) -> str:
        """Where the peering objects of a namespace (or the cluster) are listed."""
        if namespace is None:
            return f"/apis/{GROUP_VERSION}/clusterkopfpeerings"
        return f"/apis/{GROUP_VERSION}/namespaces/{namespace}/kopfpeerings"

    async def places(self, api: client.ApiClient) -> Sequence[str | None]:
        """The namespaces whose peering objects count now (those Kopf serves: existing
        ones); [None]: the cluster's one."""
        if not self.namespaced:
            return [None]
        return list(await self.scope.namespaces(api, existing=True) or [])


def joined(peering: Peering, scope: Scope) -> Peering:
    """This replica's peering as Kopf runs it, from what the Kopf bindings know
    (``name``, ``priority``; no name when standalone or namespaced) and the command line
    Kopf parsed (``scope``): Kopf's namespaced peering under ``--namespace``."""
    if scope.clusterwide or scope.standalone:
        return dataclasses.replace(peering, scope=scope)
    return Peering(scope.peering or KOPF_DEFAULT_NAME, peering.priority, scope)


def outranked(status: Mapping[str, Any], priority: int, now: datetime.datetime) -> bool:
    """Whether a live peer in a peering object's status has a higher priority than ours."""
    for info in status.values():
        peer = mapping(info)
        lastseen = timestamp(peer.get("lastseen"))
        lifetime = integer(peer.get("lifetime"))
        if lastseen is None:
            continue
        alive_until = lastseen + datetime.timedelta(
            seconds=DEFAULT_LIFETIME if lifetime is None else lifetime
        )
        if alive_until > now and (integer(peer.get("priority")) or 0) > priority:
            return True
    return False


async def is_active(
    api: client.ApiClient, peering: Peering, places: Sequence[str | None] = (None,)
) -> bool | None:
    """Whether this replica works rather than stands by; None: not known yet.

    Without a peering there is nobody to defer to; neither is there when a peering
    object cannot be read, as Kopf then runs standalone too, unless the peering is
    mandatory: then Kopf waits for a missing object, and so does this replica.
    ``places`` are the namespaces whose objects count (None: the cluster-wide one).
    """
    if peering.name is None:
        return True
    now = datetime.datetime.now(datetime.UTC)
    for place in places:
        try:
            body = await get_json(api, peering.path(place))
        except ApiException as exc:
            if exc.status == 404 and peering.mandatory:
                return None
            if exc.status != 404:
                logger.warning(
                    "Cannot read the peering %s: %s %s",
                    where(peering, place),
                    exc.status,
                    shown(exc.reason),
                )
            continue
        if outranked(mapping(body.get("status")), peering.priority, now):
            return False
    return True


def where(peering: Peering, namespace: str | None) -> str:
    """A peering object's name for a log line."""
    return f"{peering.name}" if namespace is None else f"{peering.name} in {shown(namespace)}"


async def create_missing(
    api: client.ApiClient, peering: Peering, places: Sequence[str | None]
) -> list[str | None]:
    """Create the peering object where it is missing; returns the places where it now
    exists. A place whose CRD is not served yet (404 to the create) is tried again later."""
    present: list[str | None] = []
    for place in places:
        try:
            await get_json(api, peering.path(place))
        except ApiException as exc:
            if exc.status != 404:
                raise
        else:
            present.append(place)
            continue
        kind = "KopfPeering" if place is not None else "ClusterKopfPeering"
        meta: dict[str, Any] = {"name": peering.name}
        if place is not None:
            meta["namespace"] = place
        body = {"apiVersion": GROUP_VERSION, "kind": kind, "metadata": meta}
        try:
            await post_json(api, peering.collection(place), body)
        except ApiException as exc:
            if exc.status == 409:
                present.append(place)
            elif exc.status != 404:
                raise
            continue
        logger.info("Created the peering object %s, which Kopf waits for", where(peering, place))
        present.append(place)
    return present


async def keep_objects(peering: Peering, interval: float = KEEP_INTERVAL) -> None:
    """Create the mandatory peering object wherever it is missing, for as long as
    new places may appear (namespaces matching a pattern); then stop.

    Errors are logged and tried again after ``interval`` seconds.
    """
    if not peering.mandatory:
        return
    done: set[str | None] = set()
    api = await api_client()
    try:
        while True:
            try:
                places = await peering.places(api)
                missing = [place for place in places if place not in done]
                done.update(await create_missing(api, peering, missing))
                # Exact names are all there is to create (when each exists); patterns
                # may match a namespace created at any time.
                wanted: set[str | None] = set(peering.scope.patterns) or {None}
                if peering.scope.exact and done >= wanted:
                    return
            except Exception as exc:
                logger.warning("Cannot create the peering object %s: %s", peering.name, shown(exc))
            await asyncio.sleep(interval)
    finally:
        await api.close()


class Activity:
    """Whether this replica is the active one, as last read; waited on by the maintenance."""

    def __init__(self, peering: Peering) -> None:
        self.peering = peering
        # None: not known yet. A standalone replica has nobody to defer to.
        self.active: bool | None = True if peering.name is None else None
        # How often this replica became active: a change tells a takeover.
        self.turns = 1 if self.active else 0
        self._changed = asyncio.Event()

    @property
    def standing_by(self) -> bool:
        """Whether maintenance must wait: another replica works, or nobody knows yet."""
        return self.active is not True

    def record(self, active: bool) -> None:
        """Take what the peering object says, and wake whoever waits for a change."""
        if active != self.active and self.peering.name:
            logger.info(
                "Active: reconciliation and retention run on this replica"
                if active
                else "Standing by for a peer of higher priority: no reconciliation or retention"
            )
        if active and self.active is not True:
            self.turns += 1
        self.active = active
        metrics.ACTIVE.set(int(active))
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    async def until_active(self) -> int:
        """Wait until this replica is the active one; returns its turn (``turns``)."""
        await self._until(lambda: self.active is True)
        return self.turns

    async def until_taken_over(self, turn: int, seconds: float) -> None:
        """Wait ``seconds``, or less if this replica stood by since ``turn`` and is active
        again: the replica it took over from may have missed deletes meanwhile."""
        try:
            await asyncio.wait_for(self._until(lambda: self.turns != turn), seconds)
        except TimeoutError:
            return

    async def watch(self, poll: float) -> None:
        """Read the peering object every ``poll`` seconds for as long as the operator runs.

        A read that fails keeps the last answer (and "not known yet" stands by).
        """
        if self.peering.name is None:
            self.record(True)
            return
        api = await api_client()
        try:
            while True:
                try:
                    active = await is_active(api, self.peering, await self.peering.places(api))
                    if active is not None:
                        self.record(active)
                except Exception as exc:
                    logger.warning(
                        "Cannot read the peering %s, %s: %s",
                        self.peering.name,
                        "still active" if self.active else "standing by",
                        shown(exc),
                    )
                await asyncio.sleep(poll)
        finally:
            await api.close()

    async def _until(self, condition: Callable[[], bool]) -> None:
        while not condition():
            await self._changed.wait()
