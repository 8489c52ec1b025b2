"""A flood of API requests, in a process of its own: ``python -m bench.flood BASE PATHS
CLIENTS [TOKEN]`` keeps CLIENTS requests in flight against BASE (with TOKEN as the
bearer token, if given), each for a path drawn from the file PATHS (one a line), each
client asking again the moment it is answered (a 503's or a 429's Retry-After is not
honoured: a flood does not wait). On SIGTERM it prints, as JSON, how
many answers of each status it got and stops.

A process of its own so that the flood's own work (HTTP, JSON) does not slow the
benchmark's emulated API server, which feeds the operator being measured.
"""

import asyncio
import collections
import json
import pathlib
import random
import signal
import sys

import aiohttp


async def client(
    session: aiohttp.ClientSession,
    base: str,
    paths: list[str],
    seed: int,
    counts: collections.Counter[str],
) -> None:
    rng = random.Random(seed)
    while True:
        try:
            async with session.get(base + rng.choice(paths)) as response:
                await response.read()
                counts[str(response.status)] += 1
        except (aiohttp.ClientError, TimeoutError):
            counts["error"] += 1
            await asyncio.sleep(0.1)


async def main(base: str, paths_file: str, clients: int, token: str = "") -> None:
    paths = [line for line in pathlib.Path(paths_file).read_text().splitlines() if line]
    counts: collections.Counter[str] = collections.Counter()
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    timeout = aiohttp.ClientTimeout(total=60)
    connector = aiohttp.TCPConnector(limit=0)
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with aiohttp.ClientSession(
        timeout=timeout, connector=connector, headers=headers
    ) as session:
        tasks = [
            asyncio.create_task(client(session, base, paths, seed, counts))
            for seed in range(clients)
        ]
        await stop.wait()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    print(json.dumps(dict(counts)), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), *sys.argv[4:5]))
