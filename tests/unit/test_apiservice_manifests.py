"""The aggregated API in the plain install (manifests/08-apiservice.yaml): an APIService
of archive.jobarchive.io/v1 whose Service reaches the operator's API port, which serves
HTTPS; the RBAC an aggregated server needs and nothing more; and the cert-manager overlay
(manifests/overlays/cert-manager/), built as `kubectl apply -k` builds it."""

from typing import Any

import kubernetes_validate  # type: ignore[import-untyped]  # the package ships no type information
import yaml

from jobarchive.config import load
from testbed.operator import REPO
from tests.support.manifests import KUBERNETES, built

PLAIN = sorted((REPO / "manifests").glob("*.yaml"))
DOCS = [doc for path in PLAIN for doc in yaml.safe_load_all(path.read_text()) if doc]
OVERLAY = REPO / "manifests" / "overlays" / "cert-manager"
ACCOUNT = {"kind": "ServiceAccount", "name": "jobarchive", "namespace": "jobarchive"}


def one(kind: str, name: str | None = None) -> dict[str, Any]:
    [doc] = [doc for doc in DOCS if doc["kind"] == kind and name in (None, doc["metadata"]["name"])]
    return doc


def container() -> dict[str, Any]:
    [only] = one("Deployment")["spec"]["template"]["spec"]["containers"]
    return only


def test_the_apiservice_reaches_the_operators_api_port_over_https() -> None:
    service = one("APIService")
    assert service["metadata"]["name"] == "v1.archive.jobarchive.io"
    spec = service["spec"]
    assert (spec["group"], spec["version"]) == ("archive.jobarchive.io", "v1")
    assert (spec["groupPriorityMinimum"], spec["versionPriority"]) == (100, 100)
    backend = one("Service", spec["service"]["name"])
    assert backend["metadata"]["namespace"] == spec["service"]["namespace"] == "jobarchive"
    [port] = backend["spec"]["ports"]
    assert (port["port"], port["targetPort"]) == (spec["service"]["port"], "api") == (443, "api")
    pod_labels = one("Deployment")["spec"]["template"]["metadata"]["labels"]
    assert backend["spec"]["selector"].items() <= pod_labels.items()
    # The certificate is made at start, and the APIService does not verify it.
    env = {v["name"]: v["value"] for v in container()["env"] if "value" in v}
    assert load(env).api_tls.self_signed and load(env).api_port
    assert spec["insecureSkipTLSVerify"] is True


def test_the_serving_account_is_bound_as_an_aggregated_server_and_to_nothing_more() -> None:
    bindings = [d for d in DOCS if d["kind"] in ("RoleBinding", "ClusterRoleBinding")]
    bound = {
        (doc["kind"], doc["metadata"].get("namespace"), *doc["roleRef"].values())
        for doc in bindings
        if ACCOUNT in doc["subjects"]
    }
    rbac = "rbac.authorization.k8s.io"
    assert bound == {
        ("ClusterRoleBinding", None, rbac, "ClusterRole", "jobarchive"),
        ("ClusterRoleBinding", None, rbac, "ClusterRole", "system:auth-delegator"),
        ("RoleBinding", "kube-system", rbac, "Role", "extension-apiserver-authentication-reader"),
    }


def test_the_cert_manager_overlay_builds_the_plain_install_with_a_verified_certificate() -> None:
    docs = built(OVERLAY)
    plain = {(doc["kind"], doc["metadata"]["name"]) for doc in DOCS}
    cert_manager = [doc for doc in docs if doc["apiVersion"] == "cert-manager.io/v1"]
    assert {(doc["kind"], doc["metadata"]["name"]) for doc in docs} == plain | {
        (doc["kind"], doc["metadata"]["name"]) for doc in cert_manager
    }
    for doc in docs:
        if doc not in cert_manager:
            kubernetes_validate.validate(doc, KUBERNETES, strict=True)
    [apiservice] = [doc for doc in docs if doc["kind"] == "APIService"]
    assert "insecureSkipTLSVerify" not in apiservice["spec"]
    injected = apiservice["metadata"]["annotations"]["cert-manager.io/inject-ca-from"]
    [serving] = [
        doc
        for doc in cert_manager
        if doc["kind"] == "Certificate" and f"jobarchive/{doc['metadata']['name']}" == injected
    ]
    backend = apiservice["spec"]["service"]
    assert f"{backend['name']}.{backend['namespace']}.svc" in serving["spec"]["dnsNames"]
    # The operator serves the Secret cert-manager writes, by the files its variables name.
    [deployment] = [doc for doc in docs if doc["kind"] == "Deployment"]
    pod = deployment["spec"]["template"]["spec"]
    [operator] = pod["containers"]
    env = {v["name"]: v.get("value") for v in operator["env"]}
    assert "JOBARCHIVE_API_TLS_SELF_SIGNED" not in env
    [volume] = [
        v
        for v in pod["volumes"]
        if v.get("secret", {}).get("secretName") == serving["spec"]["secretName"]
    ]
    [mount] = [m for m in operator["volumeMounts"] if m["name"] == volume["name"]]
    assert env["JOBARCHIVE_API_TLS_CERT_FILE"] == f"{mount['mountPath']}/tls.crt"
    assert env["JOBARCHIVE_API_TLS_KEY_FILE"] == f"{mount['mountPath']}/tls.key"
    assert pod["securityContext"]["fsGroup"] == pod["securityContext"]["runAsGroup"]
    # Its CA is of its own issuer chain: a renewed serving certificate keeps the caBundle.
    issuer = serving["spec"]["issuerRef"]["name"]
    [ca_issuer] = [
        d for d in cert_manager if d["kind"] == "Issuer" and d["metadata"]["name"] == issuer
    ]
    [ca] = [d for d in cert_manager if d["kind"] == "Certificate" and d["spec"].get("isCA")]
    assert ca_issuer["spec"]["ca"]["secretName"] == ca["spec"]["secretName"]


def test_the_overlay_builds_on_the_base_the_plain_install_is() -> None:
    kustomization = yaml.safe_load((OVERLAY / "kustomization.yaml").read_text())
    assert [r for r in kustomization["resources"] if r.startswith("..")] == ["../base"]
