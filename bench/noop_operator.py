"""The baseline operator: Kopf watching the same resources as jobarchive, with handlers
that do nothing but note when each object was first seen.

Run as ``kopf run bench/noop_operator.py``. ``NOOP_SETTINGS`` chooses Kopf's settings:
``default`` leaves them as a user would (the baseline of the targets), ``jobarchive``
applies the ones ``jobarchive.bindings`` applies, its collector thresholds and its emptying
of each event's object included (its values, imported: importing it registers nothing). When
``NOOP_EXPECT`` objects have been seen it logs ``caught up``, and ``seen`` every
``PROGRESS`` objects before that, so that a run that ends early says how far it got; a watch
Kopf ends is said in jobarchive's own line (its ``EndedWatches`` on Kopf's logger). At exit
it writes ``uid first-seen-time`` lines to ``NOOP_SEEN_FILE``, for the lag comparison.
``NOOP_CHUNK_SIZE`` sets Kopf's ``settings.watching.chunk_size`` (the LIST's page), either way.
"""

import asyncio
import gc
import logging
import os
import pathlib
import time
from typing import Any, cast

import kopf

from jobarchive import config
from jobarchive.bindings import (
    COLLECTOR_THRESHOLDS,
    FINALIZER,
    KOPF_LOGGER,
    LIST_CHUNK_SIZE,
    WORKER_IDLE_TIMEOUT,
    EndedWatches,
    NoDiffBase,
)

SETTINGS = config.load()
SEEN: dict[str, float] = {}
EXPECT = int(os.environ.get("NOOP_EXPECT", "0"))
TUNED = os.environ.get("NOOP_SETTINGS", "default") == "jobarchive"
CHUNK_SIZE = os.environ.get("NOOP_CHUNK_SIZE")
# A line per this many objects seen: a few at 200,000, nothing to weigh on the handlers.
PROGRESS = 10_000
logger = logging.getLogger("noop")
logging.getLogger(KOPF_LOGGER).addHandler(EndedWatches())


@kopf.on.startup()
async def start(settings: kopf.OperatorSettings, **_: Any) -> None:
    """Kopf's defaults, or the same Kopf settings and collector as jobarchive's; the
    LIST paged by ``NOOP_CHUNK_SIZE`` when it is set."""
    if CHUNK_SIZE:
        settings.watching.chunk_size = int(CHUNK_SIZE)
    if not TUNED:
        return
    settings.posting.enabled = False
    settings.persistence.finalizer = FINALIZER
    logging.getLogger("kopf.objects").setLevel(logging.WARNING)
    settings.persistence.diffbase_storage = NoDiffBase()
    settings.queueing.idle_timeout = WORKER_IDLE_TIMEOUT
    settings.watching.chunk_size = LIST_CHUNK_SIZE
    gc.collect()
    gc.freeze()
    gc.set_threshold(*COLLECTOR_THRESHOLDS)


@kopf.on.cleanup()
async def stop(**_: Any) -> None:
    """Write down when each object was first seen."""
    path = os.environ.get("NOOP_SEEN_FILE")
    if path:
        text = "".join(f"{uid} {seen}\n" for uid, seen in SEEN.items())
        await asyncio.to_thread(pathlib.Path(path).write_text, text)


async def seen(body: kopf.Body, event: kopf.RawEvent, **_: Any) -> None:
    """Note the first sighting of an object; say how many were seen every ``PROGRESS``,
    and when all expected ones were. Tuned, empty the event's object afterwards, as
    jobarchive's handlers do."""
    uid = body.get("metadata", {}).get("uid")
    if uid and uid not in SEEN:
        SEEN[uid] = time.time()
        if len(SEEN) == EXPECT:
            logger.warning("caught up: %d objects", EXPECT)
        elif len(SEEN) % PROGRESS == 0:
            logger.warning("seen: %d objects", len(SEEN))
    if TUNED:
        cast("dict[str, Any]", event["object"]).clear()


for _kind in SETTINGS.kinds:
    kopf.on.event(_kind.group, _kind.version, _kind.plural, id=f"{_kind.plural}.{_kind.group}")(
        seen
    )
kopf.on.event("v1", "pods", id="pods")(seen)
kopf.on.event("v1", "events", id="events")(seen)
