"""A cluster's name as JOBARCHIVE_CLUSTER gives it (decision 35): what the ``cluster``
column, a label and a field selector can all carry, and nothing else."""

import pytest

from jobarchive.config import ConfigError, load
from jobarchive.core.rows import CLUSTER_LENGTH, valid_cluster


@pytest.mark.parametrize(
    "name",
    ["prod-eu-1", "gke_project_zone_name", "a", "A.b-c_d", "0b5e4a1c-7f6e-4d2b-9a1e-3c8d2f4b6a7e"],
)
def test_a_label_value_is_a_cluster_name(name: str) -> None:
    assert valid_cluster(name) == name
    assert load({"JOBARCHIVE_CLUSTER": f" {name} "}).cluster == name


@pytest.mark.parametrize(
    "name",
    [
        "-edge",
        "edge-",
        "eu west",
        "a'; DROP TABLE job_info; --",
        "arn:aws:eks:eu-west-1:123:cluster/prod",
        "x" * (CLUSTER_LENGTH + 1),
        "café",
        "a\nb",
    ],
)
def test_anything_else_is_refused_naming_the_variable(name: str) -> None:
    with pytest.raises(ValueError, match="is not a cluster name"):
        valid_cluster(name)
    with pytest.raises(ConfigError, match=r"^JOBARCHIVE_CLUSTER: .* is not a cluster name"):
        load({"JOBARCHIVE_CLUSTER": name})


def test_unset_or_empty_leaves_the_cluster_to_be_discovered() -> None:
    assert load({}).cluster is None
    assert load({"JOBARCHIVE_CLUSTER": "  "}).cluster is None
