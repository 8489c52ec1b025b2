"""How a parallel run (pytest-xdist, ``--dist loadfile``) shares the tests among its
workers: each file whole on one worker, in the order collected (the operator's long
tests first, the unit tests' short files last), and the files of one group together.

pytest-xdist's own ``--dist loadgroup`` would take a group from a mark, but it groups
nothing on pytest 9.2 (pytest-xdist issue 1386: it renames the tests' node ids to say
their group, which pytest 9.2 no longer lets it do), so the groups are named here, by
file."""

from xdist.scheduler import LoadFileScheduling

# One three-node Galera cluster at a time: each worker would start its own for the
# first Galera test it runs (the session-scoped ``galera_for_run``).
GROUPS = {
    "tests/integration/test_galera.py": "galera",
    "tests/e2e/test_galera_operator.py": "galera",
}


class GroupedFiles(LoadFileScheduling):  # type: ignore[misc]  # xdist ships no types
    """``--dist loadfile``, the files of a group of ``GROUPS`` one unit of work."""

    def _split_scope(self, nodeid: str) -> str:
        file = nodeid.split("::", 1)[0]
        return GROUPS.get(file, file)
