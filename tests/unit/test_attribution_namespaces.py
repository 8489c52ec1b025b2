"""A job's pods, intermediate objects and Events live in its namespace: whatever names
it from another is judged unrelated, as Kubernetes ignores an ownerReference across
namespaces."""

from jobarchive.recording.attribution import UNRELATED, Attribution, Waiting


def pod(uid: str, namespace: str) -> Waiting:
    return Waiting("Pod", uid, namespace, f"name-of-{uid}")


def test_only_objects_of_the_jobs_namespace_are_its_own() -> None:
    attribution = Attribution()
    attribution.job_seen("ml-prod", "mnist", "job-uid", gone=False)
    worker, injected = pod("worker", "ml-prod"), pod("injected", "sandbox")
    event = Waiting("Event", "ev-1", "sandbox", "mnist.17a")
    assert attribution.judge("job-uid", [worker, injected, event]) == ([worker], [injected, event])


def test_nothing_belongs_to_no_job() -> None:
    attribution = Attribution()
    worker = pod("worker", "ml-prod")
    assert attribution.judge(UNRELATED, [worker]) == ([], [worker])


def test_a_job_whose_namespace_is_unknown_cannot_be_judged_yet() -> None:
    attribution = Attribution()
    assert attribution.judge("job-uid", [pod("worker", "ml-prod")]) is None
    attribution.job_looked_up("job-uid", "ml-prod")
    assert attribution.judge("job-uid", []) == ([], [])
    attribution.load([("ml-prod", "mnist", "other-uid")], [])
    assert attribution.job_namespace("other-uid") == "ml-prod"


def test_a_label_names_a_job_only_in_the_pods_own_namespace() -> None:
    attribution = Attribution()
    labelled = pod("labelled", "sandbox")
    attribution.wait(("sandbox", "mnist"), labelled)
    assert attribution.job_seen("ml-prod", "mnist", "job-uid", gone=False) == []
    assert attribution.job_uid("sandbox", "mnist") is None
    assert attribution.waiting_counts() == (1, 0)
