"""Whether this replica is the active one, read from Kopf's peering object.

Kopf pauses the watch streams of a replica that sees a live peer of higher
priority, but work the operator starts itself (reconciliation, retention) is not
paused: it asks here first. The rule is Kopf's own: a peer is alive until its
``lastseen`` plus its ``lifetime``, and the live peer of highest priority works.

``Activity`` keeps the answer current for as long as the operator runs, whether the
reconciliation is on or not, so that retention alone (``JOBARCHIVE_RESYNC_INTERVAL=0``)
still knows whether to prune. Until the peering object was first read the answer is
"not known yet", which counts as standing by: two replicas starting together never
both work. Without a cluster-wide peering (``kopf run --standalone``) the replica is
the only one, and active from the start.
"""

import asyncio
import dataclasses
import datetime
import logging
from collections.abc import Callable, Mapping
from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from jobarchive import metrics
from jobarchive.cluster import api_client, get_json
from jobarchive.recording.convert.common import integer, mapping, timestamp

logger = logging.getLogger(__name__)
# Kopf assumes this lifetime for a peer that states none.
DEFAULT_LIFETIME = 60


@dataclasses.dataclass(frozen=True)
class Peering:
    """This replica's place in Kopf's peering: none when standalone or namespaced."""

    name: str | None
    priority: int


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


async def is_active(api: client.ApiClient, peering: Peering) -> bool:
    """Whether this replica works rather than stands by.

    Without a cluster-wide peering there is nobody to defer to; neither is there when
    the peering object cannot be read, as Kopf then runs standalone too.
    """
    if peering.name is None:
        return True
    try:
        body = await get_json(api, f"/apis/kopf.dev/v1/clusterkopfpeerings/{peering.name}")
    except ApiException as exc:
        if exc.status != 404:
            logger.warning(
                "Cannot read the peering %s: %s %s", peering.name, exc.status, exc.reason
            )
        return True
    now = datetime.datetime.now(datetime.UTC)
    return not outranked(mapping(body.get("status")), peering.priority, now)


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
                    self.record(await is_active(api, self.peering))
                except Exception as exc:
                    logger.warning(
                        "Cannot read the peering %s, %s: %s",
                        self.peering.name,
                        "still active" if self.active else "standing by",
                        exc,
                    )
                await asyncio.sleep(poll)
        finally:
            await api.close()

    async def _until(self, condition: Callable[[], bool]) -> None:
        while not condition():
            await self._changed.wait()
