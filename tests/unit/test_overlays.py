"""The kustomize overlays (manifests/overlays/), each built as `kubectl apply -k` builds
it with a real kubectl: strictly valid, the base the very objects `kubectl apply -f
manifests/` reads, the image set in one place, the ports the Dockerfile exposes, a
shard's overlay and a fleet's two clusters as docs/deploy.md tells of them."""

import functools
import json
import os
import pathlib
import re
import tomllib
from typing import Any

import pytest
import yaml

from jobarchive.config import load
from testbed.operator import REPO
from tests.support.manifests import (
    BASE,
    MANIFESTS,
    OVERLAYS,
    built,
    containers,
    depending_on_own_crds,
    documents,
    overlays,
    read_by_apply,
    secrets_with_data,
    validation_failures,
)

NAMES = [str(path.relative_to(OVERLAYS)) for path in overlays()]
WRITE_VERBS = {"create", "update", "patch", "delete", "deletecollection", "*"}
REVIEWS = {
    ("authentication.k8s.io", "tokenreviews"),
    ("authorization.k8s.io", "subjectaccessreviews"),
}
Doc = dict[str, Any]


@functools.cache
def build(name: str) -> tuple[Doc, ...]:
    return tuple(built(OVERLAYS / name))


def plain() -> list[Doc]:
    return documents(sorted(MANIFESTS.glob("*.yaml")))


def by_name(docs: Any) -> dict[tuple[str, str], Doc]:
    return {(doc["kind"], doc["metadata"]["name"]): doc for doc in docs}


def canonical(docs: Any) -> list[str]:
    return sorted(json.dumps(doc, sort_keys=True) for doc in docs)


def test_the_overlays_are_those_the_deploy_page_names() -> None:
    assert NAMES == ["base", "cert-manager", "fleet/east", "fleet/west", "shards/shard-a"]
    page = (REPO / "docs" / "deploy.md").read_text()
    for name in NAMES:
        assert f"manifests/overlays/{name}" in page, name


@pytest.mark.parametrize("name", NAMES)
def test_each_overlay_builds_valid_strictly_in_one_pass_and_without_a_secret(name: str) -> None:
    docs = list(build(name))
    assert docs and validation_failures(docs, name) == []
    assert depending_on_own_crds(docs) == [] and secrets_with_data(docs) == []


def test_apply_f_manifests_reads_exactly_what_the_base_builds() -> None:
    assert canonical(read_by_apply(MANIFESTS)) == canonical(build("base"))


def test_the_plain_files_are_links_to_the_bases_files_and_it_names_them_all() -> None:
    linked = sorted(MANIFESTS.glob("*.yaml"))
    assert linked and all(path.is_symlink() for path in linked)
    assert {path.resolve() for path in linked} == {
        path.resolve() for path in BASE.glob("*.yaml") if path.name != "kustomization.yaml"
    }
    kustomization = yaml.safe_load((BASE / "kustomization.yaml").read_text())
    assert kustomization["resources"] == [path.name for path in linked]


def base_image() -> str:
    [entry] = yaml.safe_load((BASE / "kustomization.yaml").read_text())["images"]
    return f"{entry['name']}:{entry['newTag']}"


def test_every_deployment_runs_the_image_of_the_bases_images_entry() -> None:
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools_scm"][
        "fallback_version"
    ]
    assert base_image() == f"jobarchive:{version}"
    applied = [read_by_apply(MANIFESTS), read_by_apply(MANIFESTS / "reader")]
    for docs in [*applied, *(list(build(name)) for name in NAMES)]:
        assert {container["image"] for container in containers(docs)} == {base_image()}


@pytest.mark.parametrize("name", NAMES)
def test_an_images_entry_over_an_overlay_sets_every_deployments_image(
    name: str, tmp_path: pathlib.Path
) -> None:
    image = {"name": "jobarchive", "newName": "registry.example/ml/jobarchive", "newTag": "9.9"}
    # kustomize takes a base by a relative path only.
    base = os.path.relpath(OVERLAYS / name, tmp_path)
    kustomization = {"resources": [base], "images": [image]}
    (tmp_path / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    images = {container["image"] for container in containers(built(tmp_path))}
    assert images == {"registry.example/ml/jobarchive:9.9"}


def test_the_dockerfile_exposes_every_port_the_manifests_open_and_no_other() -> None:
    dockerfile = (REPO / "Dockerfile").read_text()
    exposed = {
        int(port)
        for line in re.findall(r"^EXPOSE (.+)$", dockerfile, re.M)
        for port in line.split()
    }
    applied = [read_by_apply(MANIFESTS), read_by_apply(MANIFESTS / "reader")]
    opened = {
        port["containerPort"]
        for docs in [*applied, *(list(build(name)) for name in NAMES)]
        for container in containers(docs)
        for port in container.get("ports", [])
    }
    assert exposed == opened == {8000, 8080, 8081}


def granted(role: Doc) -> dict[tuple[str, str], set[str]]:
    verbs: dict[tuple[str, str], set[str]] = {}
    for rule in role["rules"]:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                verbs.setdefault((group, resource), set()).update(rule["verbs"])
    return verbs


def shard(kind: str, name: str | None = None) -> list[Doc]:
    return [
        doc
        for doc in build("shards/shard-a")
        if doc["kind"] == kind and name in (None, doc["metadata"]["name"])
    ]


def operator(docs: Any) -> Doc:
    [only] = containers(list(docs))
    return only


def test_a_shard_shares_the_plain_installs_objects_unchanged_and_drops_its_operators() -> None:
    installed = by_name(plain())
    shared = {key: doc for key, doc in by_name(build("shards/shard-a")).items() if key in installed}
    assert set(shared) == {
        ("Namespace", "jobarchive"),
        ("Service", "jobarchive-metrics"),
        ("Service", "jobarchive-api"),
        ("NetworkPolicy", "jobarchive"),
        ("ClusterRole", "jobarchive-reader"),
    }
    for key, doc in shared.items():
        assert doc == installed[key], key


def test_the_shard_role_reads_every_tracked_kind_and_writes_only_its_peering() -> None:
    [role] = shard("ClusterRole", "jobarchive-shard")
    verbs = granted(role)
    cluster_role = granted(by_name(plain())["ClusterRole", "jobarchive"])
    # What the cluster-wide operator reads in every namespace, the shard reads in its own.
    cluster_wide = (
        "namespaces",
        "customresourcedefinitions",
        "clusterkopfpeerings",
        "clusterqueues",
    )
    namespaced = {
        resource: allowed
        for resource, allowed in cluster_role.items()
        if resource[1] not in cluster_wide and resource not in REVIEWS
    }
    assert {r: v for r, v in verbs.items() if r != ("kopf.dev", "kopfpeerings")} == namespaced
    writable = {resource for resource, allowed in verbs.items() if allowed & WRITE_VERBS}
    assert writable == {("kopf.dev", "kopfpeerings")}
    assert verbs[("kopf.dev", "kopfpeerings")] == {"get", "list", "watch", "patch", "create"}
    [cluster] = shard("ClusterRole", "jobarchive-shard-cluster")
    assert granted(cluster) == {
        ("", "namespaces"): {"get", "list", "watch"},
        ("apiextensions.k8s.io", "customresourcedefinitions"): {"get", "list", "watch"},
        ("kueue.x-k8s.io", "clusterqueues"): {"get", "list", "watch"},
        **{review: {"create"} for review in REVIEWS},
    }


def test_the_shard_is_the_plain_deployment_scoped_and_bound_in_each_namespace() -> None:
    [deployment] = shard("Deployment")
    installed = by_name(plain())["Deployment", "jobarchive"]
    pod = deployment["spec"]["template"]["spec"]
    command = operator([deployment])["command"]
    namespaces = [arg.split("=", 1)[1] for arg in command if arg.startswith("--namespace=")]
    assert namespaces == ["team-a", "team-b"]
    assert deployment["metadata"]["name"] == "jobarchive-shard-a"
    plain_command = [arg for arg in operator([installed])["command"] if arg != "--all-namespaces"]
    assert [arg for arg in command if not arg.startswith("--namespace=")] == plain_command
    assert operator([deployment])["env"] == operator([installed])["env"]
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert deployment["spec"]["selector"]["matchLabels"] == labels
    assert labels.items() > installed["spec"]["template"]["metadata"]["labels"].items()
    account = pod["serviceAccountName"]
    subject = {"kind": "ServiceAccount", "name": account, "namespace": "jobarchive"}
    bound = {
        doc["metadata"]["namespace"]
        for doc in shard("RoleBinding")
        if doc["roleRef"]["name"] == "jobarchive-shard" and doc["subjects"] == [subject]
    }
    assert bound == set(namespaces)
    [cluster_binding] = shard("ClusterRoleBinding")
    assert cluster_binding["roleRef"]["name"] == "jobarchive-shard-cluster"
    assert cluster_binding["subjects"] == [subject]
    assert [doc["metadata"]["name"] for doc in shard("ServiceAccount")] == [account]
    assert not shard("APIService") and not shard(
        "CustomResourceDefinition", "clusterkopfpeerings.kopf.dev"
    )


def environment(docs: Any) -> dict[str, Any]:
    return {variable["name"]: variable for variable in operator(docs)["env"]}


def test_each_cluster_of_the_fleet_is_the_plain_install_with_its_own_name() -> None:
    installed = environment(plain())
    package = REPO / "operator" / "jobarchive"
    assert '"JOBARCHIVE_CLUSTER"' in "".join(path.read_text() for path in package.rglob("*.py"))
    names = []
    for name in ("fleet/east", "fleet/west"):
        env = environment(build(name))
        # The same database URL Secret, created apart in each cluster.
        assert env["JOBARCHIVE_DB_URL"] == installed["JOBARCHIVE_DB_URL"]
        load({key: v["value"] for key, v in env.items() if "value" in v})  # a name it takes
        names.append(env["JOBARCHIVE_CLUSTER"]["value"])
    assert names == ["east", "west"]
    east = [doc for doc in build("fleet/east") if doc["kind"] != "Deployment"]
    assert canonical(east) == canonical(doc for doc in plain() if doc["kind"] != "Deployment")
    assert environment(build("fleet/east")).keys() - installed.keys() == {"JOBARCHIVE_CLUSTER"}


def test_the_cluster_that_is_not_the_read_endpoint_serves_no_api() -> None:
    docs = list(build("fleet/west"))
    env = {key: v["value"] for key, v in environment(docs).items() if "value" in v}
    assert load(env).api_port == 0
    assert not [port for port in operator(docs)["ports"] if port["name"] == "api"]
    assert not [doc for doc in docs if doc["kind"] == "APIService"]
    targets = [
        p["targetPort"] for doc in docs if doc["kind"] == "Service" for p in doc["spec"]["ports"]
    ]
    assert targets == ["metrics"]
    [policy] = [doc for doc in docs if doc["kind"] == "NetworkPolicy"]
    assert [port["port"] for rule in policy["spec"]["ingress"] for port in rule["ports"]] == [
        "metrics"
    ]
    roles = {doc["roleRef"]["name"] for doc in docs if doc["kind"].endswith("Binding")}
    assert roles == {"jobarchive"}
    # All the rest is the plain install's.
    kept = set(by_name(docs)) - {("Deployment", "jobarchive"), ("NetworkPolicy", "jobarchive")}
    installed = by_name(plain())
    assert all(by_name(docs)[key] == installed[key] for key in kept)
