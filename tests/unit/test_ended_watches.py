"""What the operator learns from Kopf's log about a watch that ended, and the liveness
probe that follows (ARCHITECTURE.md, decision 38). Kopf's own task guard and logger
make the records: a Kopf that names or logs its watch tasks otherwise fails here."""

import asyncio
import contextlib
import inspect
import logging
from collections.abc import Iterator

import kopf
import pytest
from kopf._cogs.aiokits import aiotasks
from kopf._core.reactor import orchestration

from jobarchive.bindings import KOPF_LOGGER, EndedWatches, watch_health


@pytest.fixture
def ended() -> Iterator[EndedWatches]:
    handler = EndedWatches()
    logging.getLogger(KOPF_LOGGER).addHandler(handler)
    try:
        yield handler
    finally:
        logging.getLogger(KOPF_LOGGER).removeHandler(handler)


async def guarded(name: str, error: Exception | None) -> None:
    """A task guarded as Kopf's orchestrator guards its watchers, ending with ``error``."""

    async def watch() -> None:
        if error is not None:
            raise error

    task = aiotasks.create_guarded_task(
        coro=watch(), name=name, logger=orchestration.logger, cancellable=True
    )
    with pytest.raises(type(error)) if error is not None else contextlib.nullcontext():
        await task


def test_kopf_names_its_watch_tasks_as_the_pattern_reads() -> None:
    source = inspect.getsource(orchestration.spawn_missing_watchers)
    assert 'what = f"{resource}@{namespace}"' in source
    assert 'name=f"watcher for {what}", logger=logger' in source


async def test_a_failed_watch_is_said_once_and_fails_the_probe(
    ended: EndedWatches, caplog: pytest.LogCaptureFixture
) -> None:
    assert await watch_health(ended=ended) == "all watching"
    cause = RuntimeError("410, message='Gone'")
    error = ValueError()
    error.__cause__ = cause
    await guarded("watcher for events.v1@None", error)
    await guarded("watcher for pods.v1@team-a", None)

    assert ended.ended == ["events.v1 in all namespaces", "pods.v1 in namespace team-a"]
    said = [r.getMessage() for r in caplog.records if r.name == "jobarchive.bindings"]
    assert len(said) == 2
    assert said[0].startswith(
        "Kopf's watch of events.v1 in all namespaces ended (410, message='Gone'):"
    )
    assert "pods.v1 in namespace team-a ended (it finished)" in said[1]
    with pytest.raises(kopf.PermanentError, match=r"events\.v1 in all namespaces"):
        await watch_health(ended=ended)


async def test_other_tasks_and_cancelled_watches_are_not_watches_ended(
    ended: EndedWatches,
) -> None:
    await guarded("peering observer for default@None", RuntimeError("boom"))
    await guarded("daemon killer", None)
    # Not cancellable: the guard says "is cancelled", which is no end of a watch either.
    task = aiotasks.create_guarded_task(
        coro=asyncio.sleep(10), name="watcher for pods.v1@None", logger=orchestration.logger
    )
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert ended.ended == []
    assert await watch_health(ended=ended) == "all watching"
