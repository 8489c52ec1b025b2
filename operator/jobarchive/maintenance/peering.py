"""Whether this replica is the active one, read from Kopf's peering object.

Kopf pauses the watch streams of a replica that sees a live peer of higher
priority, but work the operator starts itself (the reconciliation) is not paused:
it asks here first. The rule is Kopf's own: a peer is alive until its ``lastseen``
plus its ``lifetime``, and the live peer of highest priority works.
"""

import dataclasses
import datetime
import logging
from collections.abc import Mapping
from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from jobarchive.cluster import get_json
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
