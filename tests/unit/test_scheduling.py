"""The groups of a parallel run name files that exist: a Galera file renamed would
otherwise leave its group silently, and two clusters could run at once."""

from testbed.operator import REPO
from tests.support.scheduling import GROUPS


def test_every_file_of_a_group_exists() -> None:
    assert GROUPS and all((REPO / path).is_file() for path in GROUPS)
