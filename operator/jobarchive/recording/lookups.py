"""The recorder's database lookups, shared by everyone who asks the same question while
it is being answered.

Each is asked again until the database answers (``storage.waiting.ride_out``): an
object whose lookup failed must not wait for its job or pod to appear, as one deleted
meanwhile never appears again, and the object would be lost.

A shard's catch-up handles the pods of a job before the job (its lists of every kind
and namespace arrive together, in any order), and Kopf handles them concurrently:
asked each, 100,000 pods asked as many queries at once, which queued in the pool ahead
of the writer's commits and stopped them for tens of seconds.
"""

import asyncio
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
T = TypeVar("T")


class Shared(Generic[K, T]):
    """One ``ask(key)`` in flight per key: whoever asks meanwhile waits for its answer
    (or its exception) instead of asking again."""

    def __init__(self, ask: Callable[[K], Awaitable[T]]) -> None:
        self._ask = ask
        self._asking: dict[K, asyncio.Future[T]] = {}

    async def __call__(self, key: K) -> T:
        """The answer for ``key``, from the question in flight if there is one."""
        pending = self._asking.get(key)
        if pending is None:
            pending = asyncio.ensure_future(self._ask(key))
            self._asking[key] = pending
            pending.add_done_callback(lambda _: self._asking.pop(key))
        # Shielded: one asker cancelled (Kopf stopping its handler) must not cancel the
        # question the others wait for. A failure nobody waits for any more is marked
        # retrieved by the shield, so asyncio reports nothing.
        return await asyncio.shield(pending)
