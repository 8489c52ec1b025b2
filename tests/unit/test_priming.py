"""What the listing at start makes of a listed job, of a listed intermediate object and
its controllers, and of a failed list."""

import pytest
from kubernetes_asyncio.client.exceptions import ApiException

from jobarchive.config import load
from jobarchive.recording.priming import Owned, failure, identity, owned, owners


@pytest.mark.parametrize(
    ("meta", "expected"),
    [
        ({"namespace": "ns", "name": "a", "uid": "u"}, ("ns", "a", "u")),
        ({"namespace": "ns", "name": "a"}, None),
        ({"namespace": "", "name": "a", "uid": "u"}, None),
        ({"namespace": "ns", "name": 7, "uid": "u"}, None),
        ({}, None),
    ],
)
def test_a_listed_job_is_known_by_its_namespace_name_and_uid_or_not_at_all(
    meta: dict[str, object], expected: tuple[str, str, str] | None
) -> None:
    assert identity(meta) == expected


def test_a_failed_list_is_said_in_a_few_words() -> None:
    assert failure(ApiException(status=403, reason="Forbidden")) == "403 Forbidden"
    assert failure(TimeoutError()) == "TimeoutError"
    assert failure(ValueError("x" * 500)) == "ValueError " + "x" * 200 + "…(500 characters)"
    assert failure(ValueError("two\nlines")) == "ValueError two\\nlines"


JOBS = [("team", "train", "job-1"), ("other", "train", "job-2")]
TRAINER = "trainer.kubeflow.org/v1alpha1"


@pytest.mark.parametrize(
    ("listed", "expected"),
    [
        # A JobSet of a TrainJob, and its batch Job: two links, either order.
        (
            [Owned("js", "team", "job-1", True), Owned("b", "team", "js", False)],
            {"js": "job-1", "b": "job-1"},
        ),
        (
            [Owned("b", "team", "js", False), Owned("js", "team", "job-1", True)],
            {"js": "job-1", "b": "job-1"},
        ),
        # Three links deep, listed deepest first.
        (
            [
                Owned("c", "team", "b", False),
                Owned("b", "team", "js", False),
                Owned("js", "team", "job-1", True),
            ],
            {"js": "job-1", "b": "job-1", "c": "job-1"},
        ),
        # Naming a job of another namespace: not its job's (the recorder judges so too).
        ([Owned("js", "team", "job-2", True)], {}),
        ([Owned("js", "team", "job-1", True), Owned("b", "other", "js", False)], {"js": "job-1"}),
        # A job not listed, an owner not listed, a cycle no API server makes.
        ([Owned("js", "team", "job-9", True)], {}),
        ([Owned("b", "team", "nobody", False)], {}),
        ([Owned("a", "team", "b", False), Owned("b", "team", "a", False)], {}),
        ([], {}),
    ],
)
def test_intermediate_objects_are_their_jobs_when_every_link_is_in_its_namespace(
    listed: list[Owned], expected: dict[str, str]
) -> None:
    assert owners(JOBS, listed) == expected


def controlled_by(api_version: str, kind: str, uid: str = "owner") -> dict[str, object]:
    ref = {"apiVersion": api_version, "kind": kind, "name": "x", "uid": uid, "controller": True}
    return {"namespace": "team", "name": "obj", "uid": "me", "ownerReferences": [ref]}


@pytest.mark.parametrize(
    ("meta", "expected"),
    [
        (
            controlled_by("trainer.kubeflow.org/v1alpha1", "TrainJob"),
            Owned("me", "team", "owner", True),
        ),
        (controlled_by("jobset.x-k8s.io/v1alpha2", "JobSet"), Owned("me", "team", "owner", False)),
        (controlled_by("ray.io/v1", "RayJob"), Owned("me", "team", "owner", True)),
        # A CronJob's batch Job, an owner with no uid, no controller, no uid of its own.
        (controlled_by("batch/v1", "CronJob"), None),
        (controlled_by("jobset.x-k8s.io/v1alpha2", "JobSet", uid=""), None),
        ({"namespace": "team", "name": "obj", "uid": "me", "ownerReferences": []}, None),
        ({**controlled_by("ray.io/v1", "RayJob"), "uid": None}, None),
        ({"namespace": "team", "uid": "me", "ownerReferences": "not a list"}, None),
    ],
)
def test_a_listed_intermediate_object_is_known_by_its_controller(
    meta: dict[str, object], expected: Owned | None
) -> None:
    assert owned(meta, load({}).kinds) == expected
