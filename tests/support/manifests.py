"""The manifests' tests' shared parts: the objects of a folder as `kubectl apply -f`
reads them, the kustomize overlays as `kubectl apply -k` builds them (a real kubectl's
kustomize, with its default load restrictions), and the strict schema check."""

import json
import pathlib
import re
import subprocess
from typing import Any

import kubernetes_validate  # type: ignore[import-untyped]  # the package ships no type information
import yaml

from testbed.operator import REPO
from tests.support.kube import kubectl_binary

MANIFESTS = REPO / "manifests"
OVERLAYS = MANIFESTS / "overlays"
BASE = OVERLAYS / "base"
# The Kubernetes version whose schemas every manifest is validated against.
KUBERNETES = "1.33"
# Kinds of CRDs installed beforehand, whose schemas kubernetes-validate does not have.
FOREIGN_GROUPS = ("cert-manager.io",)

Doc = dict[str, Any]


def documents(paths: list[pathlib.Path]) -> list[Doc]:
    """Every object of these YAML files, in order."""
    return [doc for path in paths for doc in yaml.safe_load_all(path.read_text()) if doc]


def overlays() -> list[pathlib.Path]:
    """Every folder under manifests/overlays/ that `kubectl apply -k` builds: each
    Kustomization, not the components they include."""
    found = []
    for path in sorted(OVERLAYS.rglob("kustomization.yaml")):
        if yaml.safe_load(path.read_text())["kind"] == "Kustomization":
            found.append(path.parent)
    return found


def built(overlay: pathlib.Path) -> list[Doc]:
    """The objects `kubectl apply -k overlay` applies."""
    command = [kubectl_binary(), "kustomize", str(overlay)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


def read_by_apply(folder: pathlib.Path) -> list[Doc]:
    """The objects `kubectl apply -f folder` reads: a real kubectl's file walk (which
    follows symbolic links, takes .yaml, .yml and .json, and does not recurse),
    offline (`label --local`), with the probe label it adds taken off again."""
    probe = "jobarchive.io/read-by-apply"
    command = [kubectl_binary(), "label", "--local", "-f", str(folder), f"{probe}=1", "-o", "json"]
    done = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"KUBECONFIG": "/nonexistent"},
    )
    assert done.returncode == 0, done.stderr
    # One JSON object after another, not a list.
    decoder, docs, rest = json.JSONDecoder(), [], done.stdout.strip()
    while rest:
        doc, end = decoder.raw_decode(rest)
        rest = rest[end:].lstrip()
        labels = doc["metadata"]["labels"]
        del labels[probe]
        if not labels:
            del doc["metadata"]["labels"]
        docs.append(doc)
    return docs


def validation_failures(docs: list[Doc], where: str) -> list[str]:
    """What the strict schemas of KUBERNETES refuse in ``docs`` (unknown fields
    included), one line per object; the foreign groups' objects are skipped."""
    failures = []
    for doc in docs:
        if doc.get("apiVersion", "").split("/")[0] in FOREIGN_GROUPS:
            continue
        name = f"{where}: {doc.get('kind')}/{doc['metadata']['name']}"
        try:
            version = kubernetes_validate.validate(doc, KUBERNETES, strict=True)
        except kubernetes_validate.ValidationError as error:
            failures.append(f"{name}: at {error.json_path}: {error.message}")
        except kubernetes_validate.SchemaNotFoundError as error:
            failures.append(f"{name}: {error.message}")
        else:
            if version != KUBERNETES:
                failures.append(f"{name}: validated against {version}, not {KUBERNETES}")
    return failures


def secrets_with_data(docs: list[Doc]) -> list[str]:
    """The Secrets among ``docs`` that carry a value (data or stringData)."""
    return [
        f"{doc['metadata'].get('namespace')}/{doc['metadata']['name']}"
        for doc in docs
        if doc.get("kind") == "Secret" and (doc.get("data") or doc.get("stringData"))
    ]


def depending_on_own_crds(docs: list[Doc]) -> list[str]:
    """The objects among ``docs`` of a kind a CRD among them defines: they would fail in
    one pass on a fresh cluster, before the CRD is served."""
    defined = {
        (doc["spec"]["group"], doc["spec"]["names"]["kind"])
        for doc in docs
        if doc["kind"] == "CustomResourceDefinition"
    }
    return [
        f"{doc['kind']}/{doc['metadata']['name']}"
        for doc in docs
        if (doc["apiVersion"].split("/")[0], doc["kind"]) in defined
    ]


def containers(docs: list[Doc]) -> list[Doc]:
    """Every container of every Deployment among ``docs``."""
    return [
        container
        for doc in docs
        if doc["kind"] == "Deployment"
        for container in doc["spec"]["template"]["spec"]["containers"]
    ]


CREATED_SECRET = re.compile(
    r"kubectl (?:--context \S+ )?(?:-n (?P<namespace>\S+) )?create secret generic (?P<name>\S+)"
    r""" +--from-literal=(?P<key>[^=\s]+)=(?P<value>'[^']*'|"[^"]*"|\S+)"""
)


def documented_secrets() -> list[tuple[str, str, str, str]]:
    """Each `kubectl create secret generic NAME --from-literal=KEY=VALUE` README.md and
    the pages of docs/ give (continued lines joined): namespace, name, key, value (quotes
    taken off)."""
    pages = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    text = "".join(page.read_text() for page in pages).replace("\\\n", " ")
    return [
        (found["namespace"] or "", found["name"], found["key"], found["value"].strip("'\""))
        for found in CREATED_SECRET.finditer(text)
    ]
