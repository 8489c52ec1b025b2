"""Which cluster this process runs in (decision 35): the name every row it writes
carries, and that the read side needs to tell this cluster's namespaces from others'.

``JOBARCHIVE_CLUSTER`` names it (checked by ``core.rows.valid_cluster``); unset, the
cluster is known by the ``kube-system`` namespace's uid (``discover``), as
OpenTelemetry's ``k8s.cluster.uid`` is: made once when the cluster is created, the
same for every replica and shard of it, and unchanged by upgrades. It is read once, at
start, with one GET.
"""

import dataclasses
import re
from typing import TYPE_CHECKING

from jobarchive.core.rows import CLUSTER_PATTERN
from jobarchive.core.untrusted import mapping

if TYPE_CHECKING:
    from kubernetes_asyncio import client

VARIABLE = "JOBARCHIVE_CLUSTER"
NAMESPACE = "kube-system"


class Unknown(Exception):
    """The cluster's identity could not be read; one line saying why and what to do."""


@dataclasses.dataclass(frozen=True)
class Identity:
    """A cluster's name, and where it came from (for the line said at start)."""

    name: str
    source: str

    def describe(self) -> str:
        """``Cluster 1f0c... (the kube-system namespace's uid)``: the start's line."""
        return f"Cluster {self.name} ({self.source})"


async def identify(configured: str | None) -> Identity:
    """The name ``JOBARCHIVE_CLUSTER`` gave (``configured``, validated already), else
    the discovered one, read with the operator's credentials (the pod's service
    account, else the kubeconfig); raises Unknown."""
    if configured is not None:
        return Identity(configured, VARIABLE)
    # Imported here, as in ``discover``.
    from jobarchive.infra import cluster

    try:
        api = await cluster.api_client()
    except cluster.Unavailable as exc:
        raise Unknown(f"cannot read the {NAMESPACE} namespace's uid: {exc}") from None
    try:
        return await discover(api)
    finally:
        await api.close()


async def discover(api: "client.ApiClient") -> Identity:
    """The kube-system namespace's uid, read with one GET; raises Unknown."""
    # Imported here: the settings import this module, and the command line's --help
    # must not import the Kubernetes client (decision 30).
    from kubernetes_asyncio.client.exceptions import ApiException

    from jobarchive.infra import cluster

    try:
        body = await cluster.get_json(api, f"/api/v1/namespaces/{NAMESPACE}")
    except ApiException as exc:
        raise Unknown(
            f"cannot read the {NAMESPACE} namespace's uid ({exc.status} {exc.reason}): "
            f"grant get on namespaces/{NAMESPACE} (manifests/02-rbac.yaml) or set {VARIABLE}"
        ) from None
    # Whatever else stopped the request (the connection, a timeout), in one line.
    except Exception as exc:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise Unknown(f"cannot read the {NAMESPACE} namespace's uid: {reason}") from None
    uid = mapping(mapping(body).get("metadata")).get("uid")
    if not isinstance(uid, str) or not re.fullmatch(CLUSTER_PATTERN, uid):
        raise Unknown(f"the {NAMESPACE} namespace has no usable uid: set {VARIABLE}")
    return Identity(uid, f"the {NAMESPACE} namespace's uid; {VARIABLE} names it otherwise")
