"""What `kubectl apply -f manifests/` installs, and the shards' overlay
(manifests/shards/): valid against the Kubernetes schemas, installable in one pass,
least privilege derived from the kinds registry, and Deployments that match the code."""

import pathlib
from typing import Any

import kubernetes_validate  # type: ignore[import-untyped]  # the package ships no type information
import pytest
import yaml

from jobarchive.config import load
from jobarchive.kinds import INTERMEDIATE_KINDS
from jobarchive.reading import auth
from testbed.operator import REPO

MANIFESTS = sorted((REPO / "manifests").glob("*.yaml"))
TRY_OUT = sorted((REPO / "manifests" / "try-mariadb").glob("*.yaml"))
EXAMPLES = sorted((REPO / "manifests" / "examples").glob("*.yaml"))
SHARD_BASE = sorted((REPO / "manifests" / "shards" / "base").glob("*.yaml"))
SHARD = sorted((REPO / "manifests" / "shards" / "example").glob("*.yaml"))
READER = sorted((REPO / "manifests" / "reader").glob("*.yaml"))
# Each `kubectl apply -f DIR` the README tells of.
APPLIES = {
    "manifests": MANIFESTS,
    "try-mariadb": TRY_OUT,
    "examples": EXAMPLES,
    "shards/base": SHARD_BASE,
    "shards/example": SHARD,
    "reader": READER,
}
KUBERNETES = "1.33"
WRITE_VERBS = {"create", "update", "patch", "delete", "deletecollection", "*"}
# Read by Kopf, not by jobarchive: the replica's name in the peering object.
KOPF_VARIABLES = {"POD_ID"}


def documents(paths: list[Any]) -> list[dict[str, Any]]:
    return [doc for path in paths for doc in yaml.safe_load_all(path.read_text()) if doc]


DOCS = documents(MANIFESTS)


def one(kind: str, name: str | None = None) -> dict[str, Any]:
    [doc] = [doc for doc in DOCS if doc["kind"] == kind and name in (None, doc["metadata"]["name"])]
    return doc


def test_manifests_apply_in_file_name_order_namespace_first() -> None:
    kinds = [doc["kind"] for doc in DOCS]
    assert kinds.index("Namespace") == 0
    assert next(doc["kind"] for doc in documents(SHARD_BASE)) == "Namespace"


@pytest.mark.parametrize("apply", sorted(APPLIES))
def test_no_apply_creates_an_object_of_a_kind_its_own_crds_define(apply: str) -> None:
    docs = documents(APPLIES[apply])
    defined = {
        (doc["spec"]["group"], doc["spec"]["names"]["kind"])
        for doc in docs
        if doc["kind"] == "CustomResourceDefinition"
    }
    depending = [
        f"{doc['kind']}/{doc['metadata']['name']}"
        for doc in docs
        if (doc["apiVersion"].split("/")[0], doc["kind"]) in defined
    ]
    assert docs and depending == []


def schema_failures(folder: pathlib.Path) -> tuple[int, list[str]]:
    """Every document of every YAML file under ``folder``, validated against the strict
    schemas of KUBERNETES: how many were validated, and what each failure says."""
    validated, failures = 0, []
    overlays = folder / "overlays"
    for path in sorted(folder.rglob("*.yaml")):
        if overlays in path.parents:
            continue
        for doc in documents([path]):
            name = f"{path.relative_to(folder)}: {doc.get('kind')}/{doc['metadata']['name']}"
            try:
                version = kubernetes_validate.validate(doc, KUBERNETES, strict=True)
            except kubernetes_validate.ValidationError as error:
                failures.append(f"{name}: at {error.json_path}: {error.message}")
            except kubernetes_validate.SchemaNotFoundError as error:
                failures.append(f"{name}: {error.message}")
            else:
                validated += 1
                if version != KUBERNETES:
                    failures.append(f"{name}: validated against {version}, not {KUBERNETES}")
    return validated, failures


def applied_yaml() -> list[pathlib.Path]:
    """Every YAML file `kubectl apply -f` is told to apply: all but the kustomize
    overlays, which are built (``test_the_cert_manager_overlay_...``)."""
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


def test_the_deployment_runs_the_operator_as_the_readme_says_with_peering() -> None:
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
    secret_ref = container()["env"][0]["valueFrom"]["secretKeyRef"]
    secret = one("Secret")
    assert (secret_ref["name"], secret_ref["key"] in secret["stringData"]) == (
        secret["metadata"]["name"],
        True,
    )
    assert "CHANGE-ME" in secret["stringData"]["url"]


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


def test_the_try_out_database_is_where_the_secret_template_points() -> None:
    service = next(doc for doc in documents(TRY_OUT) if doc["kind"] == "Service")
    url = one("Secret")["stringData"]["url"]
    name, namespace = service["metadata"]["name"], service["metadata"]["namespace"]
    assert f"@{name}.{namespace}.svc:{service['spec']['ports'][0]['port']}/" in url


def shard(kind: str, name: str | None = None) -> list[dict[str, Any]]:
    return [
        doc
        for doc in documents(SHARD_BASE + SHARD)
        if doc["kind"] == kind and name in (None, doc["metadata"]["name"])
    ]


def test_the_shards_base_shares_the_plain_installs_objects_unchanged() -> None:
    plain = {(doc["kind"], doc["metadata"]["name"]): doc for doc in DOCS}
    shared = [
        doc for doc in documents(SHARD_BASE) if (doc["kind"], doc["metadata"]["name"]) in plain
    ]
    assert {(doc["kind"], doc["metadata"]["name"]) for doc in shared} == {
        ("Namespace", "jobarchive"),
        ("Secret", "jobarchive-db"),
        ("Service", "jobarchive-metrics"),
        ("Service", "jobarchive-api"),
        ("NetworkPolicy", "jobarchive"),
        ("ClusterRole", "jobarchive-reader"),
    }
    for doc in shared:
        assert doc == plain[doc["kind"], doc["metadata"]["name"]]


def test_the_shard_role_reads_every_tracked_kind_and_writes_only_its_peering() -> None:
    [role] = shard("ClusterRole", "jobarchive-shard")
    verbs = granted(role)
    cluster_role = granted(one("ClusterRole", "jobarchive"))
    # What the cluster-wide operator reads in every namespace, the shard reads in its own.
    namespaced = {
        resource: allowed
        for resource, allowed in cluster_role.items()
        if resource[1] not in ("namespaces", "customresourcedefinitions", "clusterkopfpeerings")
        and resource not in REVIEWS
    }
    assert {r: v for r, v in verbs.items() if r != ("kopf.dev", "kopfpeerings")} == namespaced
    writable = {resource for resource, allowed in verbs.items() if allowed & WRITE_VERBS}
    assert writable == {("kopf.dev", "kopfpeerings")}
    assert verbs[("kopf.dev", "kopfpeerings")] == {"get", "list", "watch", "patch", "create"}
    [cluster] = shard("ClusterRole", "jobarchive-shard-cluster")
    assert granted(cluster) == {
        ("", "namespaces"): {"get", "list", "watch"},
        ("apiextensions.k8s.io", "customresourcedefinitions"): {"get", "list", "watch"},
        **{review: {"create"} for review in REVIEWS},
    }


def test_the_example_shard_is_the_plain_deployment_scoped_and_bound_in_each_namespace() -> None:
    [deployment] = shard("Deployment")
    pod = deployment["spec"]["template"]["spec"]
    [operator] = pod["containers"]
    command = operator["command"]
    namespaces = [arg.split("=", 1)[1] for arg in command if arg.startswith("--namespace=")]
    assert namespaces == ["team-a", "team-b"]
    plain = [arg for arg in container()["command"] if arg != "--all-namespaces"]
    assert [arg for arg in command if not arg.startswith("--namespace=")] == plain
    assert operator["env"] == container()["env"]
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert deployment["spec"]["selector"]["matchLabels"] == labels
    assert labels.items() > one("Deployment")["spec"]["template"]["metadata"]["labels"].items()
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
