"""Where the console is served: which paths are its own at either mount, and its links
to the JSON of a job, written relative to a page and quoted."""

import pytest

from jobarchive.reading import auth
from jobarchive.reading.console import mounts

CONSOLE = "/apis/archive.jobarchive.io/v1/console"


@pytest.mark.parametrize(
    ("path", "ours"),
    [
        ("/", True),
        ("/job", True),
        ("/console.css", True),
        ("/jobs/some-uid/logs", True),
        ("/apix", True),
        (CONSOLE, True),
        (CONSOLE + "/", True),
        (CONSOLE + "/job", True),
        (CONSOLE + "/a/b", True),
        ("/api", False),
        ("/api/v1/jobs", False),
        ("/apis", False),
        ("/apis/archive.jobarchive.io/v1", False),
        ("/apis/archive.jobarchive.io/v1/consoles", False),
        ("/apis/archive.jobarchive.io/v1/namespaces/team-a/archivedjobs", False),
        ("/openapi/v2", False),
    ],
)
def test_the_console_serves_every_path_but_the_apis(path: str, ours: bool) -> None:
    assert mounts.serves(path) is ours


def test_each_mount_reviews_its_own_resources_and_links_its_own_json() -> None:
    job = {"namespace": "team-a", "job_id": "a/b?c"}
    root = mounts.at_root("/api/v1")
    assert (root.jobs, root.lists.events, root.lists.pods, root.lists.logs) == (auth.JOBS,) * 4
    assert root.json_of(job) == "api/v1/jobs/a%2Fb%3Fc"
    assert root.logs_json_of(job) == "api/v1/jobs/a%2Fb%3Fc/logs"
    prefixed = mounts.AGGREGATED
    lists = prefixed.lists
    assert (str(prefixed.jobs), str(lists.events), str(lists.pods), str(lists.logs)) == (
        "archivedjobs.archive.jobarchive.io",
        "archivedevents.archive.jobarchive.io",
        "archivedpods.archive.jobarchive.io",
        "archivedjobs/log.archive.jobarchive.io",
    )
    assert prefixed.json_of(job) == "../namespaces/team-a/archivedjobs/a%2Fb%3Fc"
    assert prefixed.logs_json_of(job).endswith("/archivedjobs/a%2Fb%3Fc/log")
    assert prefixed.path == CONSOLE
