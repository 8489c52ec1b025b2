"""When an object last changed, as the lag metric reads it from the object itself."""

import datetime

from jobarchive.recording.convert import last_change


def at(text: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


def test_a_pod_changed_when_its_newest_manager_wrote_it() -> None:
    pod = {
        "metadata": {
            "creationTimestamp": "2026-11-29T10:00:00Z",
            "managedFields": [
                {
                    "manager": "training-operator",
                    "operation": "Update",
                    "time": "2026-11-29T10:00:00Z",
                },
                {
                    "manager": "kubelet",
                    "operation": "Update",
                    "subresource": "status",
                    "time": "2026-11-29T10:04:31Z",
                },
            ],
        },
        "status": {"conditions": [{"type": "Ready", "lastTransitionTime": "2026-11-29T10:04:30Z"}]},
    }
    assert last_change(pod) == at("2026-11-29T10:04:31Z")


def test_a_job_without_managed_fields_changed_at_its_newest_condition() -> None:
    job = {
        "metadata": {"creationTimestamp": "2026-11-29T10:00:00Z"},
        "status": {
            "conditions": [
                {"type": "Created", "lastTransitionTime": "2026-11-29T10:00:01Z"},
                {"type": "Running", "lastUpdateTime": "2026-11-29T10:00:09Z"},
            ]
        },
    }
    assert last_change(job) == at("2026-11-29T10:00:09Z")


def test_a_deleted_object_changed_when_its_deletion_began() -> None:
    meta = {
        "creationTimestamp": "2026-11-29T10:00:00Z",
        "deletionTimestamp": "2026-11-29T11:00:00Z",
    }
    assert last_change({"metadata": meta}) == at("2026-11-29T11:00:00Z")


def test_an_event_changed_at_its_last_occurrence() -> None:
    core = {
        "metadata": {"creationTimestamp": "2026-11-29T10:00:00Z"},
        "lastTimestamp": "2026-11-29T10:30:00Z",
    }
    series = {
        "eventTime": "2026-11-29T10:00:00.123456Z",
        "series": {"count": 4, "lastObservedTime": "2026-11-29T10:45:00.500000Z"},
    }
    assert last_change(core) == at("2026-11-29T10:30:00Z")
    assert last_change(series) == at("2026-11-29T10:45:00.500000Z")


def test_an_object_without_times_or_with_garbage_has_no_last_change() -> None:
    assert last_change({}) is None
    garbage = {
        "metadata": {"creationTimestamp": 17, "managedFields": ["x", {"time": None}]},
        "status": {"conditions": "Running"},
        "series": [],
        "lastTimestamp": "not a time",
    }
    assert last_change(garbage) is None
