"""What `kubectl apply -f manifests/` installs: valid against the Kubernetes schemas,
installable in one pass, least privilege derived from the kinds registry, a Deployment
that matches the code, and a database URL that no file holds. The kustomize overlays
are test_overlays.py's."""

import pathlib
import subprocess
from typing import Any

import pytest
import yaml

from jobarchive.config import load, validate_db_url
from jobarchive.core.kinds import CLUSTER_QUEUES, INTERMEDIATE_KINDS, KUEUE_GROUP, WORKLOADS
from jobarchive.reading import auth
from testbed.operator import REPO
from tests.support.manifests import (
    depending_on_own_crds,
    documented_secrets,
    documents,
    secrets_with_data,
    validation_failures,
)

MANIFESTS = sorted((REPO / "manifests").glob("*.yaml"))
TRY_OUT = sorted((REPO / "manifests" / "try-mariadb").glob("*.yaml"))
EXAMPLES = sorted((REPO / "manifests" / "examples").glob("*.yaml"))
READER = sorted((REPO / "manifests" / "reader").glob("*.yaml"))
# Each `kubectl apply -f DIR` the README and docs/deploy.md tell of.
APPLIES = {
    "manifests": MANIFESTS,
    "try-mariadb": TRY_OUT,
    "examples": EXAMPLES,
    "reader": READER,
}
WRITE_VERBS = {"create", "update", "patch", "delete", "deletecollection", "*"}
# Read by Kopf, not by jobarchive: the replica's name in the peering object.
KOPF_VARIABLES = {"POD_ID"}


DOCS = documents(MANIFESTS)


def one(kind: str, name: str | None = None) -> dict[str, Any]:
    [doc] = [doc for doc in DOCS if doc["kind"] == kind and name in (None, doc["metadata"]["name"])]
    return doc


def test_manifests_apply_in_file_name_order_namespace_first() -> None:
    kinds = [doc["kind"] for doc in DOCS]
    assert kinds.index("Namespace") == 0


@pytest.mark.parametrize("apply", sorted(APPLIES))
def test_no_apply_creates_an_object_of_a_kind_its_own_crds_define(apply: str) -> None:
    docs = documents(APPLIES[apply])
    assert docs and depending_on_own_crds(docs) == []


def schema_failures(folder: pathlib.Path) -> tuple[int, list[str]]:
    """Every document of every YAML file under ``folder`` but its kustomize overlays
    (test_overlays.py builds them), validated against the strict schemas of
    KUBERNETES: how many were validated, and what each failure says."""
    validated, failures = 0, []
    overlays = folder / "overlays"
    for path in sorted(folder.rglob("*.yaml")):
        if overlays in path.parents:
            continue
        docs = documents([path])
        found = validation_failures(docs, str(path.relative_to(folder)))
        validated += len(docs) - len(found)
        failures += found
    return validated, failures


def applied_yaml() -> list[pathlib.Path]:
    """Every YAML file `kubectl apply -f` is told to apply: all but the kustomize
    overlays, which are built (test_overlays.py)."""
    overlays = REPO / "manifests" / "overlays"
    return [path for path in (REPO / "manifests").rglob("*.yaml") if overlays not in path.parents]


def test_every_manifest_validates_against_the_kubernetes_schemas() -> None:
    validated, failures = schema_failures(REPO / "manifests")
    assert not failures, "\n".join(failures)
    assert validated == len(documents(sorted(applied_yaml()))) > 0
    assert {path.parent for path in applied_yaml()} == {
        path.parent for paths in APPLIES.values() for path in paths
    }


def test_the_schema_check_reports_each_document_that_does_not_validate(
    tmp_path: pathlib.Path,
) -> None:
    valid = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "fine"}}
    broken = [
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "typo"},
            "spec": {"prots": []},
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "two"},
            "spec": {"replicas": "two"},
        },
        {"apiVersion": "example.com/v1", "kind": "Unknown", "metadata": {"name": "nobody"}},
    ]
    (tmp_path / "nested").mkdir()
    (tmp_path / "nested" / "objects.yaml").write_text(yaml.safe_dump_all([valid, *broken]))
    validated, failures = schema_failures(tmp_path)
    assert validated == 1
    assert [failure.split(": ")[:2] for failure in failures] == [
        ["nested/objects.yaml", "Service/typo"],
        ["nested/objects.yaml", "Deployment/two"],
        ["nested/objects.yaml", "Unknown/nobody"],
    ]
    assert "'prots' was unexpected" in failures[0] and "'two'" in failures[1]


def granted(role: dict[str, Any]) -> dict[tuple[str, str], set[str]]:
    verbs: dict[tuple[str, str], set[str]] = {}
    for rule in role["rules"]:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                verbs.setdefault((group, resource), set()).update(rule["verbs"])
    return verbs


def test_a_plain_apply_creates_namespaced_objects_only_in_its_own_namespace() -> None:
    namespace = one("Namespace")["metadata"]["name"]
    elsewhere = [
        f"{doc['metadata'].get('namespace')}/{doc['kind']}/{doc['metadata']['name']}"
        for doc in DOCS
        if doc["metadata"].get("namespace", namespace) != namespace
    ]
    # But the one binding an aggregated server needs where the ConfigMap lives.
    assert elsewhere == [
        "kube-system/RoleBinding/jobarchive-extension-apiserver-authentication-reader"
    ]


def test_the_role_can_read_every_tracked_kind_pods_and_events() -> None:
    verbs = granted(one("ClusterRole", "jobarchive"))
    watched = [(kind.group, kind.plural) for kind in (*load({}).kinds, *INTERMEDIATE_KINDS)]
    watched += [("", "pods"), ("", "events")]
    for resource in watched:
        assert {"get", "list", "watch"} <= verbs.get(resource, set()), resource


def test_the_role_reads_kueues_workloads_and_cluster_queues_and_nothing_more_of_kueue() -> None:
    verbs = granted(one("ClusterRole", "jobarchive"))
    kueue = {resource: allowed for resource, allowed in verbs.items() if resource[0] == KUEUE_GROUP}
    assert kueue == {
        (KUEUE_GROUP, WORKLOADS): {"get", "list", "watch"},
        (KUEUE_GROUP, CLUSTER_QUEUES): {"get", "list", "watch"},
    }


def test_the_role_cannot_write_anything_it_watches() -> None:
    verbs = granted(one("ClusterRole", "jobarchive"))
    writable = {resource for resource, allowed in verbs.items() if allowed & WRITE_VERBS}
    assert writable == {("kopf.dev", "clusterkopfpeerings"), *REVIEWS}
    # Kopf keeps its record alive; the operator creates the object when missing.
    assert verbs[("kopf.dev", "clusterkopfpeerings")] & WRITE_VERBS == {"patch", "create"}
    assert all(group != "*" and resource != "*" for group, resource in verbs)


REVIEWS = {
    ("authentication.k8s.io", "tokenreviews"),
    ("authorization.k8s.io", "subjectaccessreviews"),
}


def test_the_role_may_create_the_reviews_of_api_callers_and_nothing_more() -> None:
    verbs = granted(one("ClusterRole", "jobarchive"))
    review_groups = {group for group, _ in REVIEWS}
    reviewing = {
        resource: allowed for resource, allowed in verbs.items() if resource[0] in review_groups
    }
    assert reviewing == {review: {"create"} for review in REVIEWS}


ARCHIVE_RESOURCES = (
    "archivedjobs",
    "archivedjobs/log",
    "archivedpods",
    "archivedevents",
    "stats",
    "console",
)


def test_the_reader_role_grants_what_the_api_asks_for() -> None:
    reader = one("ClusterRole", "jobarchive-reader")
    assert granted(reader) == {
        (auth.GROUP, auth.RESOURCE): {"get", "list"},
        **{("archive.jobarchive.io", resource): {"get", "list"} for resource in ARCHIVE_RESOURCES},
    }
    bindings = [
        d for d in documents(EXAMPLES) if d["kind"] in ("RoleBinding", "ClusterRoleBinding")
    ]
    assert {d["kind"] for d in bindings} == {"RoleBinding", "ClusterRoleBinding"}
    # The examples' own role grants one cluster by name (decision 36), in both groups.
    [by_name] = [d for d in documents(EXAMPLES) if d["kind"] == "ClusterRole"]
    assert by_name["rules"] == [
        {
            "apiGroups": [auth.GROUP, "archive.jobarchive.io"],
            "resources": ["clusters"],
            "resourceNames": ["west"],
            "verbs": ["get"],
        }
    ]
    for binding in bindings:
        assert binding["roleRef"]["name"] in (
            reader["metadata"]["name"],
            by_name["metadata"]["name"],
        )
        assert binding["roleRef"] == {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": binding["roleRef"]["name"],
        }
    assert by_name["metadata"]["name"] in {b["roleRef"]["name"] for b in bindings}


def container() -> dict[str, Any]:
    [only] = one("Deployment")["spec"]["template"]["spec"]["containers"]
    return only


def test_the_deployment_runs_the_operator_as_the_docs_say_with_peering() -> None:
    command = container()["command"]
    assert command[:2] == ["kopf", "run"] and command[-1] == "operator/main.py"
    assert (REPO / command[-1]).exists()
    peering = next(arg.split("=", 1)[1] for arg in command if arg.startswith("--peering="))
    assert peering == "jobarchive" and "--all-namespaces" in command
    assert one("Deployment")["spec"]["replicas"] == 2


def test_the_probes_use_the_liveness_port_kopf_serves() -> None:
    command = container()["command"]
    liveness = next(arg for arg in command if arg.startswith("--liveness="))
    port = int(liveness.rsplit(":", 1)[1].split("/")[0])
    path = "/" + liveness.rsplit("/", 1)[1]
    ports = {p["name"]: p["containerPort"] for p in container()["ports"]}
    for probe in ("livenessProbe", "readinessProbe"):
        http = container()[probe]["httpGet"]
        assert (ports[http["port"]], http["path"]) == (port, path)


def test_the_environment_names_only_settings_the_code_reads() -> None:
    config_source = "".join(
        p.read_text() for p in (REPO / "operator" / "jobarchive" / "config").glob("*.py")
    )
    for variable in container()["env"]:
        if variable["name"] not in KOPF_VARIABLES:
            assert f'"{variable["name"]}"' in config_source, variable["name"]


def test_the_database_url_is_a_secret_created_apart_and_no_manifest_holds_one() -> None:
    [secret_ref] = [
        v["valueFrom"]["secretKeyRef"]
        for v in container()["env"]
        if "valueFrom" in v and "secretKeyRef" in v["valueFrom"]
    ]
    namespace = one("Deployment")["metadata"]["namespace"]
    created = [secret for secret in documented_secrets() if secret[1] == secret_ref["name"]]
    # Every documented command that creates it: in the operator's namespace, the key it reads,
    # a URL jobarchive accepts; and a re-apply of manifests/ has no Secret to reset it.
    assert created and not any(doc["kind"] == "Secret" for doc in DOCS)
    for secret_namespace, _, key, url in created:
        assert (secret_namespace, key) == (namespace, secret_ref["key"])
        validate_db_url(url, "url")
    tracked = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "manifests"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    manifests = [REPO / path for path in tracked if path.endswith((".yaml", ".yml", ".json"))]
    assert manifests and secrets_with_data(documents(manifests)) == []


def test_the_secret_check_finds_a_secret_that_carries_a_value() -> None:
    carrying = [
        {"kind": "Secret", "metadata": {"name": name, "namespace": "n"}, field: {"url": "x"}}
        for name, field in (("plain", "stringData"), ("encoded", "data"))
    ]
    empty = {"kind": "Secret", "metadata": {"name": "empty"}, "data": {}}
    other = {"kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"url": "x"}}
    assert secrets_with_data([*carrying, empty, other]) == ["n/plain", "n/encoded"]


def test_the_pod_runs_non_root_read_only_without_capabilities() -> None:
    pod = one("Deployment")["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    context = container()["securityContext"]
    assert context["readOnlyRootFilesystem"] is True
    assert context["allowPrivilegeEscalation"] is False
    assert context["capabilities"]["drop"] == ["ALL"]
    assert {"requests", "limits"} <= set(container()["resources"])


def test_the_image_runs_the_same_command_as_a_non_root_user() -> None:
    dockerfile = (REPO / "Dockerfile").read_text()
    assert "USER 10001" in dockerfile
    flat = " ".join(dockerfile.replace("\\\n", " ").split())
    assert all(f'"{arg}"' in flat for arg in container()["command"])


def test_the_metrics_port_is_the_one_the_code_serves_and_the_service_exposes() -> None:
    env = {v["name"]: v["value"] for v in container()["env"] if "value" in v}
    port = load(env).metrics_port
    ports = {p["name"]: p["containerPort"] for p in container()["ports"]}
    assert ports["metrics"] == port
    service = one("Service", "jobarchive-metrics")
    [service_port] = service["spec"]["ports"]
    assert service_port["targetPort"] == "metrics"
    pod_labels = one("Deployment")["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= pod_labels.items()
    annotations = one("Deployment")["spec"]["template"]["metadata"]["annotations"]
    assert int(annotations["prometheus.io/port"]) == port


def test_the_api_port_is_the_one_the_code_serves_and_the_service_exposes() -> None:
    env = {v["name"]: v["value"] for v in container()["env"] if "value" in v}
    settings = load(env)
    ports = {p["name"]: p["containerPort"] for p in container()["ports"]}
    assert (settings.api_port, settings.api_host, settings.api_auth) == (
        ports["api"],
        "0.0.0.0",
        "kubernetes",
    )
    service = one("Service", "jobarchive-api")
    [service_port] = service["spec"]["ports"]
    assert (service_port["port"], service_port["targetPort"]) == (settings.api_port, "api")
    pod_labels = one("Deployment")["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= pod_labels.items()


def test_the_network_policy_admits_the_metrics_from_the_cluster_and_the_api() -> None:
    policy = one("NetworkPolicy")
    pod_labels = one("Deployment")["spec"]["template"]["metadata"]["labels"]
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= pod_labels.items()
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    admitted = {
        port["port"]: rule.get("from", "anywhere")
        for rule in policy["spec"]["ingress"]
        for port in rule["ports"]
    }
    # The API from anywhere: kube-apiserver proxies from addresses no selector names.
    assert admitted == {"metrics": [{"namespaceSelector": {}}], "api": "anywhere"}
    named_ports = {p["name"] for p in container()["ports"]}
    assert set(admitted) <= named_ports


def test_the_try_out_database_is_where_the_documented_url_points() -> None:
    service = next(doc for doc in documents(TRY_OUT) if doc["kind"] == "Service")
    name, namespace = service["metadata"]["name"], service["metadata"]["namespace"]
    at = f"@{name}.{namespace}.svc:{service['spec']['ports'][0]['port']}/"
    assert any(at in url for _, secret, _, url in documented_secrets() if secret == "jobarchive-db")
