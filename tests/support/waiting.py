"""Waiting for a condition instead of sleeping for a guessed time."""

import asyncio
import datetime
import ssl
from collections.abc import Awaitable, Callable
from typing import TypeVar

import aiohttp

from jobarchive.storage.models import utcnow

T = TypeVar("T")


async def eventually(
    probe: Callable[[], Awaitable[T | None]], within: float = 30.0, interval: float = 0.1
) -> T:
    """Poll ``probe`` until it returns a truthy value, and return that value; fail with
    the last value once ``within`` seconds have passed.

    A probe that returns ``X | None`` (a Tortoise ``.first()``) gives ``X``: the row found.
    """
    deadline = asyncio.get_running_loop().time() + within
    while True:
        value = await probe()
        if value:
            return value
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"still {value!r} after {within} s")
        await asyncio.sleep(interval)


async def answering(
    url: str,
    status: int | None = 200,
    within: float = 30.0,
    context: ssl.SSLContext | None = None,
) -> None:
    """Wait until a GET of ``url`` is answered (``status``, or any when None): a server
    started as a process is listening. Over HTTPS, ``context`` verifies the server."""

    async def answers() -> bool:
        connector = aiohttp.TCPConnector(ssl=context or True)
        try:
            async with (
                aiohttp.ClientSession(connector=connector) as session,
                session.get(url) as reply,
            ):
                return status is None or reply.status == status
        except aiohttp.ClientConnectionError:
            return False

    await eventually(answers, within=within)


async def clock_past(moment: datetime.datetime) -> None:
    """Wait until the store's clock reads later than ``moment``, so that a timestamp it
    stamps next is later than one it stamped at ``moment``."""

    async def past() -> bool:
        return utcnow() > moment

    await eventually(past, within=1.0, interval=0.001)
