"""``--cluster`` on the read commands and the cluster in their tables, run as a user
runs them on both databases, over an archive of two clusters' rows (decision 36): the
database's reader reads every cluster, as it reads every namespace."""

import asyncio
import json

import pytest

from tests.support.fleet import EAST, WEST, fill_two_clusters
from tests.support.small_archive import run


@pytest.fixture
def filled(db_url: str) -> tuple[str, dict[str, str]]:
    return db_url, asyncio.run(fill_two_clusters(db_url))


def test_cluster_filters_every_list_and_shows_in_its_tables(
    filled: tuple[str, dict[str, str]],
) -> None:
    url, uids = filled
    everything = json.loads(run(url, "jobs", "-o", "json").stdout)
    assert [(job["name"], job["cluster"]) for job in everything["items"]] == [
        ("bert", WEST),
        ("mnist", WEST),
        ("mnist", EAST),
    ]
    west = json.loads(run(url, "jobs", "--cluster", WEST, "-o", "json").stdout)
    assert [job["job_id"] for job in west["items"]] == [uids["bert"], uids["west"]]
    events = json.loads(
        run(url, "events", "--namespace", "team-a", "--cluster", EAST, "-o", "json").stdout
    )
    assert [event["message"] for event in events["items"]] == ["mnist scheduled"]
    assert {event["cluster"] for event in events["items"]} == {EAST}
    # The cluster is a wide column, as kubectl's extra ones are: with -o wide, by name.
    shown = run(url, "jobs", "--cluster", EAST, "-o", "wide")
    assert shown.returncode == 0, shown.stderr
    _, header, _, row = shown.stdout.splitlines()
    assert header.split()[-1] == "cluster" and row.split()[-1] == EAST
    assert EAST not in run(url, "jobs", "--cluster", EAST).stdout


def test_a_bad_cluster_is_one_line_naming_the_flag(filled: tuple[str, dict[str, str]]) -> None:
    url, _ = filled
    for value, said in (
        ("a/b", "--cluster: 'a/b' is not a cluster's name"),
        ("x" * 64, "--cluster: 64 characters, longer than any stored value (63)"),
    ):
        refused = run(url, "jobs", "--cluster", value)
        assert refused.returncode == 2
        assert said in refused.stderr and refused.stdout == ""
    # Alone it only sifts: the last 7 days are read, and said so.
    alone = run(url, "events", "--cluster", WEST)
    assert alone.returncode == 0 and alone.stderr.startswith("Events of the last 7 days")
