"""Where the console is served (decision 31): at ``/``, and under the aggregated API's
prefix, where kube-apiserver authorizes each page as the resource ``console``; what
each mount reviews the data of its pages as, and where their JSON is, relative to a
page."""

import dataclasses
import urllib.parse
from collections.abc import Mapping
from typing import Any

from jobarchive.reading import auth, embedded
from jobarchive.reading.kube.discovery import GROUP, PREFIX

# Every page and asset is one path segment below it: kube-apiserver names that segment
# the resource's name, so one RBAC rule on ``console`` covers them all.
PATH = f"{PREFIX}/console"
# The paths of the JSON API and of the Kubernetes API (discovery, the aggregated
# resources, and the OpenAPI documents kube-apiserver asks an aggregated server for).
API_ROOTS = ("/api", "/apis", "/openapi")


@dataclasses.dataclass(frozen=True)
class Mount:
    """A place the console is served: the path its pages are one segment below, the
    resources its pages' reads are reviewed as (a job's lists as its API's: ``lists``),
    and its links to the JSON of what a page shows (templates of links relative to a
    page: ``{namespace}``, ``{uid}``)."""

    path: str
    jobs: auth.Resource
    lists: embedded.Lists
    api: str
    job_json: str
    logs_json: str

    def json_of(self, job: Mapping[str, Any]) -> str:
        """The link to a job's JSON."""
        return self.job_json.format(**_quoted(job))

    def logs_json_of(self, job: Mapping[str, Any]) -> str:
        """The link to the JSON of a job's log tails."""
        return self.logs_json.format(**_quoted(job))


def _quoted(job: Mapping[str, Any]) -> dict[str, str]:
    return {
        "namespace": urllib.parse.quote(str(job["namespace"]), safe=""),
        "uid": urllib.parse.quote(str(job["job_id"]), safe=""),
    }


def at_root(api_prefix: str) -> Mount:
    """The console at ``/``: reads reviewed as the JSON API's (``jobs.jobarchive.io``),
    its JSON links to the API under ``api_prefix``."""
    api = api_prefix.lstrip("/")
    return Mount(
        path="",
        jobs=auth.JOBS,
        lists=embedded.AT_ROOT,
        api=f"{api}/openapi.json",
        job_json=f"{api}/jobs/{{uid}}",
        logs_json=f"{api}/jobs/{{uid}}/logs",
    )


# The console under the aggregated prefix: the archive's own resources, a job's JSON
# the ArchivedJob (a uid as its name selects that incarnation).
AGGREGATED = Mount(
    path=PATH,
    jobs=auth.Resource(GROUP, "archivedjobs"),
    lists=embedded.ARCHIVED,
    api="../../v1",
    job_json="../namespaces/{namespace}/archivedjobs/{uid}",
    logs_json="../namespaces/{namespace}/archivedjobs/{uid}/log",
)


def aggregated(path: str) -> bool:
    """Whether a path is the console's under the aggregated prefix."""
    return path == PATH or path.startswith(PATH + "/")


def serves(path: str) -> bool:
    """Whether a path is the console's: every path but the APIs' (``API_ROOTS``), and
    its own below ``/apis``."""
    apis = any(path == root or path.startswith(root + "/") for root in API_ROOTS)
    return aggregated(path) or not apis
