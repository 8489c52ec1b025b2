"""The read side apart (manifests/reader/, applied after the plain install): `jobarchive
serve` as the code parses its arguments, an account that may only review callers, the
database URL in a file only the pod's group may read, and pods that nothing of the
plain install selects. The schemas are checked with the other folders, in
test_manifests.py."""

import pathlib
from typing import Any

import yaml

from jobarchive import cli, config
from testbed.operator import REPO
from tests.support.manifests import documented_secrets

MANIFESTS = REPO / "manifests"
STATIC = REPO / "operator" / "jobarchive" / "reading" / "console" / "static"


def documents(folder: pathlib.Path) -> list[dict[str, Any]]:
    """The objects `kubectl apply -f folder` applies."""
    paths = sorted(folder.glob("*.yaml"))
    return [doc for path in paths for doc in yaml.safe_load_all(path.read_text()) if doc]


READER = documents(MANIFESTS / "reader")
INSTALLED = documents(MANIFESTS)


def reader(kind: str) -> dict[str, Any]:
    [doc] = [doc for doc in READER if doc["kind"] == kind]
    return doc


def pod() -> dict[str, Any]:
    spec: dict[str, Any] = reader("Deployment")["spec"]["template"]["spec"]
    return spec


def serving() -> dict[str, Any]:
    [only] = pod()["containers"]
    return only


def operator() -> dict[str, Any]:
    [deployment] = [doc for doc in INSTALLED if doc["kind"] == "Deployment"]
    [only] = deployment["spec"]["template"]["spec"]["containers"]
    return only


def serve_options() -> tuple[dict[str, Any], dict[str, Any]]:
    """The reader's arguments as `jobarchive` parses them: its own options, serve's."""
    args = serving()["args"]
    split = args.index("serve")
    own = cli.main.make_context("jobarchive", args[:split]).params
    return own, cli.main.commands["serve"].make_context("serve", args[split + 1 :]).params


def mebibytes(quantity: str) -> int:
    return int(quantity[:-2]) * {"Mi": 1, "Gi": 1024}[quantity[-2:]]


def test_the_reader_account_may_only_create_the_reviews_of_its_callers() -> None:
    account = reader("ServiceAccount")["metadata"]
    assert pod()["serviceAccountName"] == account["name"]
    binding = reader("ClusterRoleBinding")
    assert binding["subjects"] == [{"kind": "ServiceAccount", **account}]
    role = reader("ClusterRole")
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": role["metadata"]["name"],
    }
    granted = {
        (group, resource, verb)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }
    assert granted == {
        ("authentication.k8s.io", "tokenreviews", "create"),
        ("authorization.k8s.io", "subjectaccessreviews", "create"),
    }
    assert not {"Role", "RoleBinding"} & {doc["kind"] for doc in READER}


def test_the_reader_reads_its_database_url_from_a_file_only_its_own_group_may_read() -> None:
    own, _ = serve_options()
    directory, _, key = own["db_url_file"].rpartition("/")
    [mount] = [m for m in serving()["volumeMounts"] if m["mountPath"] == directory]
    [volume] = [v["secret"] for v in pod()["volumes"] if v["name"] == mount["name"]]
    # The Secret is created apart (docs/deploy.md's command), in the reader's namespace.
    namespace = reader("Deployment")["metadata"]["namespace"]
    created = [s for s in documented_secrets() if s[1] == volume["secretName"]]
    assert created and mount["readOnly"] is True
    for secret_namespace, _, secret_key, url in created:
        assert (secret_namespace, secret_key) == (namespace, key)
        config.validate_db_url(url, key)
    assert not [doc for doc in READER if doc["kind"] == "Secret"]
    # 0400 would leave the file root's, unreadable to the pod's user; with an fsGroup
    # the kubelet makes it 0440 anyway. So 0440, of the group the pod runs as.
    context = pod()["securityContext"]
    assert (volume["defaultMode"], context["fsGroup"]) == (0o440, context["runAsGroup"])
    # The file is the only database serve opens: no variable names another.
    config_source = "".join(
        p.read_text() for p in (REPO / "operator" / "jobarchive" / "config").glob("*.py")
    )
    for variable in serving()["env"]:
        assert f'"{variable["name"]}"' in config_source and "DB_URL" not in variable["name"]


def test_the_reader_runs_serve_as_non_root_read_only_and_smaller_than_the_operator() -> None:
    assert serving()["command"] == ["jobarchive"] and "serve" in serving()["args"]
    assert serving()["image"] == operator()["image"]
    context = pod()["securityContext"]
    assert context["runAsNonRoot"] is True and context["runAsUser"] != 0
    assert context["seccompProfile"] == {"type": "RuntimeDefault"}
    assert serving()["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }
    resources = serving()["resources"]
    limit = mebibytes(resources["limits"]["memory"])
    assert mebibytes(resources["requests"]["memory"]) <= limit
    assert limit < mebibytes(operator()["resources"]["limits"]["memory"])
    assert reader("Deployment")["spec"]["replicas"] == 2


def test_the_reader_serves_on_the_port_its_probes_service_and_policy_name() -> None:
    _, serve = serve_options()
    assert (serve["host"], serve["auth_mode"]) == ("0.0.0.0", "kubernetes")
    assert {p["name"]: p["containerPort"] for p in serving()["ports"]} == {"api": serve["port"]}
    for probe in ("livenessProbe", "readinessProbe"):
        # A console asset: answered without a token or the database.
        http = serving()[probe]["httpGet"]
        assert http["port"] == "api" and (STATIC / http["path"].removeprefix("/")).is_file()
    labels = reader("Deployment")["spec"]["template"]["metadata"]["labels"]
    assert reader("Deployment")["spec"]["selector"]["matchLabels"].items() <= labels.items()
    service = reader("Service")["spec"]
    assert service["selector"].items() <= labels.items()
    assert [(p["port"], p["targetPort"]) for p in service["ports"]] == [(serve["port"], "api")]
    policy = reader("NetworkPolicy")["spec"]
    assert policy["podSelector"]["matchLabels"].items() <= labels.items()
    assert (policy["policyTypes"], policy["ingress"]) == (
        ["Ingress"],
        [{"from": [{"namespaceSelector": {}}], "ports": [{"port": "api", "protocol": "TCP"}]}],
    )


def selector(doc: dict[str, Any]) -> dict[str, str]:
    """The pod labels an object of the plain install selects (its Services' selector,
    its Deployment's, its NetworkPolicy's)."""
    spec = doc["spec"]
    chosen: dict[str, Any] = spec.get("podSelector") or spec["selector"]
    labels: dict[str, str] = chosen.get("matchLabels", chosen)
    return labels


def test_the_reader_is_an_extra_in_the_namespace_that_nothing_of_the_install_selects() -> None:
    labels = reader("Deployment")["spec"]["template"]["metadata"]["labels"]
    kinds = ("Service", "Deployment", "NetworkPolicy")
    selectors = [selector(doc) for doc in INSTALLED if doc["kind"] in kinds]
    assert len(selectors) == 5 and all(selectors)
    assert not any(chosen.items() <= labels.items() for chosen in selectors)
    [namespace] = [doc["metadata"]["name"] for doc in INSTALLED if doc["kind"] == "Namespace"]
    assert {doc["metadata"].get("namespace", namespace) for doc in READER} == {namespace}
    installed = {(doc["kind"], doc["metadata"]["name"]) for doc in INSTALLED}
    assert installed.isdisjoint((doc["kind"], doc["metadata"]["name"]) for doc in READER)
