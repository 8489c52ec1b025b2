"""The namespaces the operator serves are Kopf's: read from the command line Kopf itself
parsed, matched by Kopf's documented pattern rule, and the peering follows them."""

import json
import os
import pathlib
import subprocess

import pytest

from jobarchive.infra.scope import CLUSTER, Scope, from_command_line, match
from jobarchive.maintenance.peering import KOPF_DEFAULT_NAME, Peering, joined
from testbed.operator import KOPF, REPO

# Kopf's documentation of --namespace (docs/scopes.rst and match_namespace's docstring).
DOCUMENTED = [
    ("myapp-*,!*-pr-*,*-pr-123", "myapp-live", True),
    ("myapp-*,!*-pr-*,*-pr-123", "myapp-pr-456", False),
    ("myapp-*,!*-pr-*,*-pr-123", "myapp-pr-123", True),
    ("myapp-*,!*-pr-*,*-pr-123", "otherapp-live", False),
    ("myapp-*,!*-pr-*,*-pr-123", "otherapp-pr-123", False),
    ("myapp-*, !*-pr-*, *pr-123", "myapp-test", True),
    ("!*-pr-*, *pr-123", "myapp-test", True),
    ("!*-pr-*, *pr-123", "anyapp-anything", True),
    ("!*-pr-*, *pr-123", "otherapp-pr-123", True),
    ("!*-pr-*, *pr-123", "myapp-pr-456", False),
    ("*-pr-123-*", "app-pr-123-x", True),
    ("!*-pr-123-*", "app-pr-123-x", False),
    ("!*-pr-123-*", "kube-system", True),
    ("team-?", "team-a", True),
    ("team-?", "team-ab", False),
    ("team-a", "team-a", True),
    ("team-a", "team-ab", False),
]


@pytest.mark.parametrize(("pattern", "namespace", "expected"), DOCUMENTED)
def test_patterns_match_as_kopf_documents_them(
    pattern: str, namespace: str, expected: bool
) -> None:
    assert match(namespace, pattern) is expected


def test_a_scope_serves_what_any_of_its_patterns_matches() -> None:
    scope = Scope(("team-a", "ml-*,!ml-scratch"))
    assert [scope.matches(n) for n in ("team-a", "ml-x", "ml-scratch", "team-b")] == [
        True,
        True,
        False,
        False,
    ]
    assert not scope.exact and not scope.clusterwide
    assert Scope(("team-a", "team-b")).exact
    assert CLUSTER.clusterwide and CLUSTER.matches("anything")


def test_outside_kopf_run_the_scope_is_the_whole_cluster() -> None:
    assert from_command_line({}) == CLUSTER


def kopf_run(tmp_path: pathlib.Path, *args: str, **env: str) -> dict[str, object]:
    """What ``from_command_line`` reads when Kopf loads a file with these arguments."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import dataclasses, json, sys\n"
        "from jobarchive.infra.scope import from_command_line\n"
        "print(json.dumps(dataclasses.asdict(from_command_line())))\n"
        "sys.exit(0)\n"
    )
    environ = {k: v for k, v in os.environ.items() if not k.startswith("KOPF_")}
    result = subprocess.run(
        [str(KOPF), "run", *args, str(probe)],
        capture_output=True,
        text=True,
        env={**environ, **env},
        cwd=REPO,
        timeout=60,
        check=True,
    )
    scope: dict[str, object] = json.loads(result.stdout.strip().splitlines()[-1])
    return scope


def test_the_scope_is_what_kopf_parsed_from_its_command_line(tmp_path: pathlib.Path) -> None:
    scope = kopf_run(tmp_path, "-n", "team-a", "--namespace=ml-*,!ml-x", "--peering=shard-a")
    assert scope == {
        "patterns": ["team-a", "ml-*,!ml-x"],
        "peering": "shard-a",
        "standalone": False,
    }
    assert kopf_run(tmp_path, "--all-namespaces", "--standalone") == {
        "patterns": [],
        "peering": None,
        "standalone": True,
    }


def test_kopfs_own_variables_count_as_its_flags_do(tmp_path: pathlib.Path) -> None:
    scope = kopf_run(
        tmp_path, "-n", "team-a", KOPF_RUN_NAMESPACE="team-b", KOPF_RUN_PEERING="shard-b"
    )
    assert (scope["patterns"], scope["peering"]) == (["team-a", "team-b"], "shard-b")


def test_a_namespaced_operator_uses_kopfs_namespaced_peering() -> None:
    bound = Peering(name=None, priority=7)
    shard = joined(bound, Scope(("team-a",), peering="shard-a"))
    assert (shard.name, shard.priority, shard.namespaced, shard.mandatory) == (
        "shard-a",
        7,
        True,
        True,
    )
    assert shard.path("team-a") == "/apis/kopf.dev/v1/namespaces/team-a/kopfpeerings/shard-a"
    detected = joined(bound, Scope(("team-a",)))
    assert (detected.name, detected.mandatory) == (KOPF_DEFAULT_NAME, False)
    alone = joined(bound, Scope(("team-a",), standalone=True))
    assert alone.name is None and not alone.mandatory
    clusterwide = joined(Peering("jobarchive", 7), Scope(peering="jobarchive"))
    assert clusterwide.path(None) == "/apis/kopf.dev/v1/clusterkopfpeerings/jobarchive"
    assert clusterwide.mandatory and not clusterwide.namespaced
