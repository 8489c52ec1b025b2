"""Fleet reads through a real kubectl against a real ``jobarchive serve`` (decision 36):
the cluster a wide column, ``--field-selector spec.cluster=``, and another cluster's
rows only for a reader granted get on ``clusters`` naming it. serve runs in the
default cluster (its home); the archive holds that cluster's rows and west's."""

import pathlib
import re
from collections.abc import AsyncIterator, Callable

import pytest

from jobarchive.core.rows import DEFAULT_CLUSTER
from testbed.cluster import Cluster
from tests.support import fleet
from tests.support.fleet import ALICE, DAVE, WEST
from tests.support.history import History
from tests.support.kube import Kubectl, Server, kubectls, serving

pytestmark = pytest.mark.e2e


@pytest.fixture
async def server(cluster: Cluster, archive: str, tmp_path: pathlib.Path) -> AsyncIterator[Server]:
    async with History() as history:
        await fleet.two_clusters(history, DEFAULT_CLUSTER)
    fleet.fleet_readers(cluster)
    async with serving(tmp_path, archive, cluster.url) as served:
        yield served


@pytest.fixture
def kubectl(server: Server, tmp_path: pathlib.Path) -> Callable[[str], Kubectl]:
    return kubectls(server, tmp_path)


def table(text: str) -> list[dict[str, str]]:
    """kubectl's table as rows by column, each cell read at its heading's place (a cell
    may be empty)."""
    header, *lines = text.strip().splitlines()
    starts = [(found.start(), found.group()) for found in re.finditer(r"\S+", header)]
    ends = [start for start, _ in starts[1:]] + [None]
    return [
        {name: line[start:end].strip() for (start, name), end in zip(starts, ends, strict=True)}
        for line in lines
    ]


async def test_the_cluster_is_a_wide_column_and_a_field_selector(
    kubectl: Callable[[str], Kubectl],
) -> None:
    alice, dave = kubectl(ALICE), kubectl(DAVE)
    mine = await alice("get", "archivedjobs", "-n", "team-a", "-o", "wide")
    assert mine.code == 0, mine.err
    assert [(row["NAME"], row["CLUSTER"]) for row in table(mine.out)] == [
        ("mnist", DEFAULT_CLUSTER)
    ]
    both = await dave("get", "archivedjobs", "-n", "team-a", "-o", "wide")
    assert [row["CLUSTER"] for row in table(both.out)] == [WEST, DEFAULT_CLUSTER]
    narrow = await dave("get", "archivedjobs", "-n", "team-a")
    assert "CLUSTER" not in narrow.out.splitlines()[0]
    selected = await dave(
        "get", "apod", "-n", "team-a", "-o", "wide", f"--field-selector=spec.cluster={WEST}"
    )
    assert selected.code == 0, selected.err
    assert [row["CLUSTER"] for row in table(selected.out)] == [WEST]
    refused = await alice("get", "ajob", "-n", "team-a", f"--field-selector=spec.cluster={WEST}")
    assert refused.code == 1
    assert f"may not get clusters.archive.jobarchive.io '{WEST}'" in refused.err
    bad = await dave("get", "ajob", "-n", "team-a", "--field-selector=spec.cluster=a/b")
    assert bad.code == 1 and "is not a cluster's name" in bad.err
