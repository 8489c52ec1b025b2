"""One definition of GPU-hours, the pods' GPUs times their run time as ``usage`` counts
it, read the same on every face: the demo's jobs, recorded by the real operator, ranked
by owner on the console's statistics page, downloaded by its usage page's CSV link,
answered by the JSON API's ``/usage``, printed by ``jobarchive usage -o json`` and summed
from ``jobarchive export``'s files."""

import asyncio
import csv
import datetime
import html
import io
import json
import pathlib
import re
import urllib.request

import pytest

from jobarchive.reading.console.formats import number
from testbed.cluster import Cluster
from testbed.operator import OperatorProcess
from tests.support.console import demo_recorded, serving_console
from tests.support.exports import read_export
from tests.support.small_archive import run

pytestmark = pytest.mark.e2e


def fetched(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as response:
        text: str = response.read().decode()
        return text


async def test_the_demos_gpu_hours_are_the_same_on_every_face(
    operator: OperatorProcess,
    cluster: Cluster,
    archive: str,
    e2e_db_url: str,
    tmp_path: pathlib.Path,
) -> None:
    await demo_recorded(cluster)
    # Up to a second already past: a running pod's hours end there, on every face alike.
    until = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
    since = until - datetime.timedelta(days=1)
    window = f"since={since:%Y-%m-%dT%H:%M:%SZ}&until={until:%Y-%m-%dT%H:%M:%SZ}"

    async with serving_console(e2e_db_url, tmp_path) as origin:
        answered = json.loads(
            await asyncio.to_thread(fetched, f"{origin}/api/v1/usage?by=owner&{window}")
        )
        page = html.unescape(await asyncio.to_thread(fetched, f"{origin}/stats?{window}"))
        # The usage page's table, as its CSV link downloads it.
        table = await asyncio.to_thread(fetched, f"{origin}/usage.csv?by=owner&{window}")
    api = {row["owner"]: row["gpu_hours"] for row in answered["items"] if row["gpu_hours"]}
    assert api["carol"] > 0 and len(api) >= 3

    printed = run(
        e2e_db_url, "usage", "--by", "owner", "--since", f"{since:%Y-%m-%dT%H:%M:%SZ}",
        "--until", f"{until:%Y-%m-%dT%H:%M:%SZ}", "-o", "json",
    )  # fmt: skip
    assert printed.returncode == 0, printed.stderr
    cli = {row["owner"]: row["gpu_hours"] for row in json.loads(printed.stdout)["items"]}
    assert {owner: hours for owner, hours in cli.items() if hours} == api

    downloaded = {
        row["owner"].removeprefix("'"): float(row["gpu_hours"])
        for row in csv.DictReader(io.StringIO(table))
    }
    assert {owner: hours for owner, hours in downloaded.items() if hours} == api

    # The statistics page ranks the same owners by the same figures.
    ranked = dict(re.findall(r'class="label"[^>]*>([^<]+)</text>\s*<rect[^>]*/>\s*'
                             r'<text class="value"[^>]*>([\d.]+) GPU-h</text>', page))  # fmt: skip
    # Each written as the console writes numbers (10.007 as 10, 2.567 as 2.57).
    assert ranked == {owner: number(hours) for owner, hours in api.items()}

    # The export's rows are whole lives: equal for owners whose jobs all ended.
    folder = tmp_path / "export"
    days = (str(since.date()), str(until.date() + datetime.timedelta(days=1)))
    exported = run(
        e2e_db_url, "export", "--since", days[0], "--until", days[1], "--to", f"{folder}"
    )
    assert exported.returncode == 0, exported.stderr
    rows = read_export(folder).values()
    running = {row["owner"] for row in rows if row["status"] == "Running"}
    summed: dict[str, float] = {}
    for row in rows:
        summed[row["owner"]] = summed.get(row["owner"], 0.0) + row["gpu_hours"]
    ended = {owner: hours for owner, hours in summed.items() if owner not in running}
    # Each row's hours are written to 3 decimals: a sum of them is within half a
    # thousandth a row of the answer's, rounded once.
    assert ended and set(ended) <= set(api)
    assert ended == {owner: pytest.approx(api[owner], abs=0.001 * len(rows)) for owner in ended}
