"""What the aggregated API says of itself, as kube-apiserver says it: the group list,
the group, the version's resources, and the aggregated discovery document, chosen by
the Accept header. Fixed data, built once; nothing here reads the archive (decision 28).
"""

import dataclasses
from typing import Any

from jobarchive.reading.accept import is_json, media_ranges

GROUP = "archive.jobarchive.io"
VERSION = "v1"
GROUP_VERSION = f"{GROUP}/{VERSION}"
PREFIX = f"/apis/{GROUP_VERSION}"
CATEGORY = "archive"
# What kube-apiserver answers for the aggregated document, and what clients check.
AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
AGGREGATED_PARAMS = {"g": "apidiscovery.k8s.io", "v": "v2", "as": "APIGroupDiscoveryList"}


@dataclasses.dataclass(frozen=True)
class Kind:
    """One resource of the group: its plural (the URL's and RBAC's name), kind, singular,
    short names and subresources."""

    plural: str
    kind: str
    singular: str
    short: str
    subresources: tuple[str, ...] = ()


JOBS = Kind("archivedjobs", "ArchivedJob", "archivedjob", "ajob", ("log",))
PODS = Kind("archivedpods", "ArchivedPod", "archivedpod", "apod")
EVENTS = Kind("archivedevents", "ArchivedEvent", "archivedevent", "aev")
KINDS = (JOBS, PODS, EVENTS)
VERBS = ("get", "list")
# A subresource's kind: what it answers (a page of a job's log tails).
SUBRESOURCE_KINDS = {"log": "ArchivedJobLog"}


def group() -> dict[str, Any]:
    """The APIGroup at ``/apis/archive.jobarchive.io``."""
    version = {"groupVersion": GROUP_VERSION, "version": VERSION}
    return {
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": GROUP,
        "versions": [version],
        "preferredVersion": version,
    }


def group_list() -> dict[str, Any]:
    """The APIGroupList at ``/apis``: this server serves one group."""
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [group()]}


def resource_list() -> dict[str, Any]:
    """The APIResourceList at ``PREFIX``: what the aggregator's availability probe and
    legacy discovery read."""
    resources: list[dict[str, Any]] = []
    for kind in KINDS:
        resources.append(
            {
                "name": kind.plural,
                "singularName": kind.singular,
                "namespaced": True,
                "kind": kind.kind,
                "verbs": list(VERBS),
                "shortNames": [kind.short],
                "categories": [CATEGORY],
            }
        )
        resources += [
            {
                "name": f"{kind.plural}/{sub}",
                "singularName": "",
                "namespaced": True,
                "kind": SUBRESOURCE_KINDS[sub],
                "verbs": ["get"],
            }
            for sub in kind.subresources
        ]
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": GROUP_VERSION,
        "resources": resources,
    }


def aggregated() -> dict[str, Any]:
    """The aggregated discovery document (``apidiscovery.k8s.io/v2``) of ``/apis``."""
    resources = [
        {
            "resource": kind.plural,
            "responseKind": {"group": "", "version": "", "kind": kind.kind},
            "scope": "Namespaced",
            "singularResource": kind.singular,
            "verbs": list(VERBS),
            "shortNames": [kind.short],
            "categories": [CATEGORY],
            "subresources": [
                {
                    "subresource": sub,
                    "responseKind": {"group": "", "version": "", "kind": SUBRESOURCE_KINDS[sub]},
                    "verbs": ["get"],
                }
                for sub in kind.subresources
            ],
        }
        for kind in KINDS
    ]
    version = {"version": VERSION, "resources": resources, "freshness": "Current"}
    return {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {},
        "items": [{"metadata": {"name": GROUP}, "versions": [version]}],
    }


def wants_aggregated(accept: str) -> bool | None:
    """True when the Accept header's first range this server can answer is the
    aggregated document, False when it is plain JSON, None when it takes neither."""
    for media, params in media_ranges(accept or "*/*"):
        if media == "application/json" and params == AGGREGATED_PARAMS:
            return True
        if is_json(media) and not params:
            return False
    return None
