"""The memory forecast's pure parts: the prediction from counts, the container's limit
read from cgroup files under a given root, and the one line said when one passes the
other (ARCHITECTURE.md, decision 38)."""

import pathlib

import pytest

from jobarchive.infra import sizing
from jobarchive.infra.scope import CLUSTER, Scope
from jobarchive.infra.sizing import MIB, Counts

GIB = 1024 * MIB


def test_the_prediction_grows_with_the_objects_from_the_base() -> None:
    assert sizing.predict(Counts()) == sizing.BASE_BYTES
    each = sizing.OBJECT_BYTES
    assert sizing.predict(Counts(pods=1000)) == sizing.BASE_BYTES + 1000 * each
    assert sizing.predict(Counts(pods=10, events=20, jobs=3)) == sizing.BASE_BYTES + 33 * each


def test_a_shard_costs_more_per_namespace_it_serves() -> None:
    counts = Counts(pods=1000, events=1000)
    assert sizing.predict(counts, 5) == sizing.predict(counts) + 5 * sizing.NAMESPACE_BYTES
    assert sizing.predict(Counts(), 0) == sizing.BASE_BYTES


def test_counts_add_up_and_describe_themselves() -> None:
    total = Counts(pods=1, events=2) + Counts(pods=10, jobs=3)
    assert total == Counts(pods=11, events=2, jobs=3)
    assert Counts(100_000, 2_000, 5).describe() == "100,000 pods, 2,000 Events and 5 jobs"


def write(root: pathlib.Path, name: str, text: str) -> pathlib.Path:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return root


@pytest.mark.parametrize(
    ("name", "text", "limit"),
    [
        ("memory.max", "1073741824\n", GIB),
        ("memory.max", "max\n", None),
        ("memory/memory.limit_in_bytes", "536870912\n", 512 * MIB),
        # cgroup v1's "no limit": 2**63 - 1 rounded down to a page.
        ("memory/memory.limit_in_bytes", "9223372036854771712\n", None),
        ("memory.max", "0\n", None),
        ("memory.max", "lots\n", None),
    ],
)
def test_the_limit_is_read_from_v2_or_v1(
    tmp_path: pathlib.Path, name: str, text: str, limit: int | None
) -> None:
    assert sizing.memory_limit(write(tmp_path, name, text)) == limit


def test_v2_is_read_before_v1(tmp_path: pathlib.Path) -> None:
    write(tmp_path, "memory.max", "268435456")
    write(tmp_path, "memory/memory.limit_in_bytes", "536870912")
    assert sizing.memory_limit(tmp_path) == 256 * MIB


def test_no_cgroup_files_is_no_limit(tmp_path: pathlib.Path) -> None:
    assert sizing.memory_limit(tmp_path) is None
    assert sizing.memory_limit(tmp_path / "missing") is None


def test_no_line_when_it_fits_or_nothing_limits() -> None:
    counts = Counts(pods=1000, events=1000)
    assert sizing.warning(counts, CLUSTER, None, None) is None
    assert sizing.warning(counts, CLUSTER, None, sizing.predict(counts)) is None
    assert sizing.warning(counts, CLUSTER, None, 64 * GIB) is None


def test_the_line_names_the_figures_and_the_remedy() -> None:
    counts = Counts(pods=1_000_000, events=1_000_000, jobs=5_000)
    predicted = sizing.predict(counts)
    line = sizing.warning(counts, CLUSTER, None, GIB)
    assert line is not None and "\n" not in line
    assert "1,000,000 pods, 1,000,000 Events and 5,000 jobs in all namespaces" in line
    assert f"peak at {predicted / MIB:,.0f} MiB" in line
    assert "memory limit of 1,024 MiB" in line
    shards = sizing.shards_needed(predicted, GIB)
    assert shards is not None and shards >= 2
    assert f"into {shards} or more shards" in line and "raise the limit to at least" in line


def test_shards_needed_each_fit_under_the_limit() -> None:
    predicted = sizing.predict(Counts(pods=1_000_000, events=1_000_000))
    shards = sizing.shards_needed(predicted, GIB)
    assert shards is not None
    base = sizing.BASE_BYTES
    assert (predicted - base) / shards + base <= GIB
    assert (predicted - base) / (shards - 1) + base > GIB


def test_a_shard_is_told_its_own_scope() -> None:
    line = sizing.warning(Counts(pods=1_000_000), Scope(("team-a", "team-b")), 2, GIB)
    assert line is not None and "in namespaces team-a team-b is predicted" in line
    expected = sizing.predict(Counts(pods=1_000_000), 2)
    assert f"peak at {expected / MIB:,.0f} MiB" in line


def test_a_limit_below_the_base_asks_only_for_more_memory() -> None:
    line = sizing.warning(Counts(pods=10), Scope(("team-a",)), 1, sizing.BASE_BYTES // 2)
    assert line is not None and "shards" not in line and "raise the limit" in line


def test_kueues_workloads_weigh_as_pods_and_are_said_only_where_there_are_some() -> None:
    each = sizing.OBJECT_BYTES
    assert sizing.predict(Counts(pods=10, workloads=5)) == sizing.BASE_BYTES + 15 * each
    assert Counts(pods=1, workloads=2) + Counts(workloads=3) == Counts(pods=1, workloads=5)
    assert Counts(100, 20, 5, 7).describe() == ("100 pods, 20 Events, 5 jobs and 7 Kueue Workloads")
