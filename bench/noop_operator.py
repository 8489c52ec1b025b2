"""The baseline operator: Kopf with the same settings and watched resources as jobarchive,
and handlers that do nothing but note when each object was first seen.

Run as ``kopf run bench/noop_operator.py``. When ``NOOP_EXPECT`` objects have been
seen it logs ``caught up``; at exit it writes ``uid first-seen-time`` lines to
``NOOP_SEEN_FILE``, for the lag comparison.
"""

import asyncio
import logging
import os
import pathlib
import time
from typing import Any

import kopf

from jobarchive import config

SETTINGS = config.load()
SEEN: dict[str, float] = {}
EXPECT = int(os.environ.get("NOOP_EXPECT", "0"))
logger = logging.getLogger("noop")


@kopf.on.startup()
async def start(settings: kopf.OperatorSettings, **_: Any) -> None:
    """The same Kopf settings as jobarchive's."""
    settings.posting.enabled = False
    settings.persistence.finalizer = "jobarchive.kubeflow.org/never-set"
    logging.getLogger("kopf.objects").setLevel(logging.WARNING)


@kopf.on.cleanup()
async def stop(**_: Any) -> None:
    """Write down when each object was first seen."""
    path = os.environ.get("NOOP_SEEN_FILE")
    if path:
        text = "".join(f"{uid} {seen}\n" for uid, seen in SEEN.items())
        await asyncio.to_thread(pathlib.Path(path).write_text, text)


async def seen(body: kopf.Body, **_: Any) -> None:
    """Note the first sighting of an object; say when all expected ones were seen."""
    uid = body.get("metadata", {}).get("uid")
    if uid and uid not in SEEN:
        SEEN[uid] = time.time()
        if len(SEEN) == EXPECT:
            logger.warning("caught up: %d objects", EXPECT)


for _kind in SETTINGS.kinds:
    kopf.on.event(_kind.group, _kind.version, _kind.plural, id=f"{_kind.plural}.{_kind.group}")(
        seen
    )
kopf.on.event("v1", "pods", id="pods")(seen)
kopf.on.event("v1", "events", id="events")(seen)
