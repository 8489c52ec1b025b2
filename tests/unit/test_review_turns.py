"""The turns of token reviews: a burst, then a rate, a few at once, and a caller whose
turn is not due soon answered at once, in one log line a minute at most."""

import asyncio
import logging
import time

import pytest

from jobarchive.reading.auth import TooManyCallers, Turns


async def taken(turns: Turns, release: asyncio.Event | None = None) -> bool:
    """Whether a turn was given (held until ``release``), False if turned away."""
    return (await timed(turns, release))[0]


async def timed(turns: Turns, release: asyncio.Event | None = None) -> tuple[bool, float]:
    """Whether a turn was given, and the seconds until it was or was refused."""
    started = time.monotonic()
    try:
        async with turns.turn():
            waited = time.monotonic() - started
            if release is not None:
                await release.wait()
    except TooManyCallers:
        return False, time.monotonic() - started
    return True, waited


async def test_a_burst_then_the_rate_within_the_wait_and_the_rest_at_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING)
    turns = Turns(rate=20, burst=5, at_once=100, wait=0.52)
    started = time.monotonic()
    answers = await asyncio.gather(*(timed(turns) for _ in range(100)))
    elapsed = time.monotonic() - started
    given = [waited for was_given, waited in answers if was_given]
    refused = [waited for was_given, waited in answers if not was_given]
    # 5 at once, then one every 0.05 s up to 0.52 s ahead: 15, however slow the machine.
    assert 5 + 10 <= len(given) <= 5 + 20 * elapsed + 1
    # The rest are answered at once (no await between arrival and refusal), not after
    # waiting in vain: sooner than the wait, which no busy machine shortens.
    assert max(refused) < turns.wait
    warnings = [record.getMessage() for record in caplog.records]
    assert len(warnings) == 1
    assert "(20 a second, 100 at once): answering 503; 1 turned away" in warnings[0]


async def test_at_most_so_many_at_once_and_the_next_turned_away_after_the_wait() -> None:
    turns, release = Turns(rate=1000, burst=10, at_once=2, wait=0.2), asyncio.Event()
    holders = [asyncio.create_task(taken(turns, release)) for _ in range(2)]
    await asyncio.sleep(0.01)
    started = time.monotonic()
    assert not await taken(turns)
    assert time.monotonic() - started >= 0.2
    release.set()
    assert await asyncio.gather(*holders) == [True, True]
    assert await taken(turns)
