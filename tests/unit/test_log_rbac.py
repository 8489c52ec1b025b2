"""The operator's role lets it read logs, and only read them: the path the fetcher GETs
is the pods/log subresource, granted `get` and nothing more."""

from typing import Any

import yaml

from jobarchive.logtails.fetcher import log_path
from jobarchive.logtails.triggers import Failure
from testbed.operator import REPO


def operator_role() -> dict[str, Any]:
    documents = yaml.safe_load_all((REPO / "manifests" / "02-rbac.yaml").read_text())
    [role] = [
        doc
        for doc in documents
        if doc and doc["kind"] == "ClusterRole" and doc["metadata"]["name"] == "jobarchive"
    ]
    return role


def test_the_role_grants_get_on_the_subresource_the_fetcher_reads_and_nothing_more() -> None:
    failure = Failure("ml", "worker-0", "uid", "pytorch", "container", 0, 1, "Error", None, False)
    parts = log_path(failure).strip("/").split("/")
    # /api/v1/namespaces/NS/pods/NAME/log: the core group, pods, subresource log.
    assert (parts[0], parts[4], parts[6]) == ("api", "pods", "log")
    granted = [
        set(rule["verbs"])
        for rule in operator_role()["rules"]
        if "" in rule["apiGroups"] and "pods/log" in rule["resources"]
    ]
    assert granted == [{"get"}]
