"""TokenReviews and SubjectAccessReviews answered from tables, as the API server's
authenticators and RBAC would: the emulator's reactions to the API's authorization."""

from typing import TYPE_CHECKING, Any

import kmock

from testbed.objects import Body
from testbed.resources import ACCESS_REVIEWS, TOKEN_REVIEWS

if TYPE_CHECKING:  # the cluster names the reviews' class among its own
    from testbed.cluster import Cluster


class Reviews:
    """TokenReview and SubjectAccessReview answered as an API server does, from two
    tables: whose each token is, and who may read what of jobarchive's resources where
    (the ``jobarchive-reader`` ClusterRole's: ``jobs.jobarchive.io`` and the aggregated
    API's resources, unless a grant names fewer). Every access review's attributes are
    kept, in order (``asked``), and the user it asked about (``asked_by``).

    As with RBAC, a grant in namespace ``""`` (a ClusterRoleBinding of the reader
    role) allows every namespace and requests over all of them; a grant in a namespace
    (a RoleBinding) allows that namespace only. A subject is ``user:<name>`` or
    ``group:<name>``. A cluster grant (``grant_clusters``) is a ClusterRole's rule on
    ``clusters`` with ``resourceNames``, or without them: every cluster, and a review
    that names none.
    """

    GROUP, RESOURCE, VERBS = "jobarchive.io", "jobs", ("get", "list")
    # (group, resource, subresource) as the reader role grants them.
    READER = frozenset(
        {
            ("jobarchive.io", "jobs", ""),
            *(
                ("archive.jobarchive.io", resource, "")
                for resource in ("archivedjobs", "archivedpods", "archivedevents", "stats")
            ),
            ("archive.jobarchive.io", "archivedjobs", "log"),
            ("archive.jobarchive.io", "console", ""),
        }
    )

    def __init__(self, cluster: "Cluster") -> None:
        self.tokens: dict[str, Body] = {}
        self.grants: set[tuple[str, str]] = set()
        self.scoped: dict[tuple[str, str], frozenset[tuple[str, str, str]]] = {}
        # Per grant, the verbs it allows when fewer than ``VERBS``.
        self.verbs: dict[tuple[str, str], tuple[str, ...]] = {}
        # Per subject, the clusters it may get; None: every cluster (no resourceNames).
        self.clusters: dict[str, frozenset[str] | None] = {}
        self.asked: list[Body] = []
        self.asked_by: list[str] = []
        # While set, both reviews answer 500, as an API server whose etcd is away.
        self.failing = False
        answers = {TOKEN_REVIEWS: self._token_review, ACCESS_REVIEWS: self._access_review}
        for resource, answer in answers.items():
            target = kmock.resource(resource.group, resource.version, resource.plural)
            failure = {"kind": "Status", "code": 500, "message": "etcdserver: request timed out"}
            # Registered first, so it answers before the table while failing.
            cluster.emulator[kmock.action.CREATE, target, lambda: self.failing] << 500 << failure
            cluster.emulator[kmock.action.CREATE, target] << answer

    def user(self, token: str, name: str, *groups: str) -> None:
        """Make ``token`` authenticate ``name`` with ``groups`` (and system:authenticated)."""
        self.tokens[token] = {
            "username": name,
            "uid": f"uid-of-{name}",
            "groups": [*groups, "system:authenticated"],
            "extra": {"authentication.kubernetes.io/credential-id": [f"JTI={name}"]},
        }

    def grant(
        self,
        subject: str,
        namespace: str = "",
        resources: frozenset[tuple[str, str, str]] | None = None,
        verbs: tuple[str, ...] = VERBS,
    ) -> None:
        """Let ``subject`` get and list (or only ``verbs``) the reader's resources (or
        only ``resources``) in ``namespace`` ("": cluster-wide)."""
        self.grants.add((subject, namespace))
        if resources is not None:
            self.scoped[(subject, namespace)] = resources
        self.verbs[(subject, namespace)] = verbs

    def grant_clusters(self, subject: str, *names: str) -> None:
        """Let ``subject`` get the ``clusters`` named (none: every cluster), in either
        group, cluster-scoped."""
        self.clusters[subject] = frozenset(names) if names else None

    def _cluster_granted(self, subjects: set[str], wanted: Body) -> bool:
        name = wanted.get("name") or ""
        if wanted.get("verb") != "get" or wanted.get("namespace"):
            return False
        for subject in subjects & set(self.clusters):
            names = self.clusters[subject]
            if names is None or name in names:
                return True
        return False

    def _token_review(self, request: Any) -> Body:
        spec = request.data["spec"]
        user = self.tokens.get(spec.get("token"))
        status: Body = {"authenticated": True, "user": user, "audiences": ["https://kubernetes"]}
        if user is None:
            status = {"authenticated": False, "error": "invalid bearer token", "user": {}}
        return {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "status": status}

    def _access_review(self, request: Any) -> Body:
        spec = request.data["spec"]
        wanted = spec.get("resourceAttributes") or {}
        self.asked.append(dict(wanted))
        self.asked_by.append(str(spec.get("user")))
        namespace = wanted.get("namespace") or ""
        subjects = {f"user:{spec.get('user')}", *(f"group:{g}" for g in spec.get("groups", []))}
        asked = (wanted.get("group"), wanted.get("resource"), wanted.get("subresource") or "")
        allowed = any(
            (subject, place) in self.grants
            and asked in self.scoped.get((subject, place), self.READER)
            and wanted.get("verb") in self.verbs.get((subject, place), self.VERBS)
            for subject in subjects
            for place in {"", namespace}
        )
        if wanted.get("resource") == "clusters":
            allowed = self._cluster_granted(subjects, wanted)
        status: Body = {"allowed": allowed}
        if allowed:
            status["reason"] = "RBAC: allowed by a binding of ClusterRole jobarchive-reader"
        return {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": spec,
            "status": status,
        }
