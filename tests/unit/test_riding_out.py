"""Whoever meets the database away waits it out the same way: asked again after each
backoff while it is unavailable, the outage said once when it begins and once when it
ends, any other error raised at once; and rows go out in statements bounded by count
and by weighed bytes."""

import logging
import random

import pytest

from jobarchive.storage import waiting
from jobarchive.storage.store import ROWS_PER_STATEMENT, STATEMENT_BYTES, statements
from jobarchive.storage.waiting import Backoff, Outage, ride_out


class AwayThenBack:
    """A call that finds the database away ``failures`` times, then answers."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.calls = 0

    async def __call__(self) -> str:
        self.calls += 1
        if self.calls <= self.failures:
            raise ConnectionRefusedError(111, "Connection refused")
        return "answer"


def quick() -> Backoff:
    return Backoff(first=0.001, cap=0.002, random=random.Random(3).random)


async def test_a_call_is_asked_again_until_the_database_answers_the_outage_said_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger=waiting.__name__)
    call = AwayThenBack(failures=4)
    outage = Outage("the test waits for it", then=lambda: ", the test goes on")
    backoff = quick()
    assert await ride_out(call, outage, backoff) == "answer"
    assert call.calls == 5
    messages = [record.getMessage() for record in caplog.records]
    assert messages[0] == "The database is unavailable, the test waits for it: Connection refused"
    assert messages[1].startswith("The database is back after ")
    assert messages[1].endswith(" s, the test goes on")
    assert len(messages) == 2
    assert [record.levelno for record in caplog.records] == [logging.WARNING, logging.INFO]
    assert outage.lasted() == 0
    # The answer starts the next outage's waits from the first again.
    assert backoff.ceiling == backoff.first


async def test_an_error_that_is_not_the_databases_absence_is_raised_at_once() -> None:
    calls = 0

    async def refused() -> None:
        nonlocal calls
        calls += 1
        raise ValueError("Data too long for column 'name'")

    outage = Outage("the test waits for it")
    with pytest.raises(ValueError, match="Data too long"):
        await ride_out(refused, outage, quick())
    assert calls == 1
    assert outage.since is None


async def test_an_outage_counts_every_failure_and_shows_until_the_answer() -> None:
    class Counted:
        value = 0

        def inc(self) -> None:
            self.value += 1

    counter = Counted()
    outage = Outage("the test waits for it", counter=counter)  # type: ignore[arg-type]
    for _ in range(3):
        outage.failed(ConnectionRefusedError(111, "Connection refused"))
    assert counter.value == 3
    assert outage.lasted() > 0
    outage.over()
    assert outage.lasted() == 0


def test_statements_hold_at_most_their_rows_and_their_weighed_bytes() -> None:
    light = [{"n": index} for index in range(2 * ROWS_PER_STATEMENT + 1)]
    assert [len(group) for group in statements(light)] == [ROWS_PER_STATEMENT] * 2 + [1]
    quarter = STATEMENT_BYTES // 4
    heavy = [{"n": index, "bytes": quarter} for index in range(9)]
    groups = statements(heavy, lambda row: row["bytes"])
    assert [len(group) for group in groups] == [4, 4, 1]
    assert all(sum(row["bytes"] for row in group) <= STATEMENT_BYTES for group in groups)
    # A row heavier than a statement goes alone, never dropped.
    alone = statements([{"bytes": 2 * STATEMENT_BYTES}, {"bytes": 1}], lambda row: row["bytes"])
    assert [len(group) for group in alone] == [1, 1]
    assert statements([]) == []
