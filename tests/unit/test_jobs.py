import datetime
import json

import pytest

from jobarchive.core.kinds import BUILTIN_KINDS, JobKind
from jobarchive.recording.convert import InvalidObject, job_row, mark_gone
from jobarchive.recording.convert.strategies import kubeflow_status
from testbed import objects as o
from testbed.objects import Body

KINDS = {(k.group, k.kind): k for k in BUILTIN_KINDS}
PYTORCH = KINDS["kubeflow.org", "PyTorchJob"]
UTC = datetime.UTC


def live(body: Body, uid: str = "u-1", rv: str = "7") -> Body:
    """A published example as the API server serves it: with uid, resourceVersion, time."""
    return o.with_meta(body, uid=uid, resourceVersion=rv, creationTimestamp=o.T0)


def kind_of(body: Body) -> JobKind:
    return KINDS[str(body["apiVersion"]).split("/")[0], str(body["kind"])]


@pytest.mark.parametrize(
    ("filename", "resources"),
    [
        (
            "pytorch-simple.yaml",
            {"Master": (1, {}, {}), "Worker": (1, {}, {})},
        ),
        ("tfjob-simple.yaml", {"Worker": (2, {}, {})}),
        ("xgboostjob.yaml", {"Master": (1, {}, {}), "Worker": (2, {}, {})}),
        (
            "paddle-simple-gpu.yaml",
            {"Worker": (2, {"nvidia.com/gpu": "2"}, {"nvidia.com/gpu": "2"})},
        ),
        ("jaxjob-simple.yaml", {"Worker": (2, {}, {})}),
        ("pytorch-elastic-echo.yaml", {"Worker": (2, {}, {})}),
    ],
)
def test_published_kubeflow_examples_convert_with_their_replicas_and_resources(
    filename: str, resources: dict[str, tuple[int, dict[str, str], dict[str, str]]]
) -> None:
    body = live(o.example(filename))
    row = job_row(body, kind_of(body), None)
    assert row["kind"] == body["kind"]
    assert row["status"] == "Created"
    assert json.loads(row["resources"]) == {
        replica: {"replicas": n, "resources": {"requests": req, "limits": lim}}
        for replica, (n, req, lim) in resources.items()
    }


def test_a_missing_namespace_is_stored_empty_rather_than_lost() -> None:
    body = live(o.example("xgboostjob.yaml"))
    assert job_row(body, kind_of(body), None)["namespace"] == ""


def test_replicas_default_to_one_as_the_api_does() -> None:
    body = live(o.example("pytorch-simple.yaml"))
    del body["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"]
    assert json.loads(job_row(body, PYTORCH, None)["resources"])["Worker"]["replicas"] == 1


def test_an_mpijob_v2beta1_that_succeeded() -> None:
    body = o.fixture("mpijob-v2beta1-pi.yaml")
    row = job_row(body, KINDS["kubeflow.org", "MPIJob"], None)
    assert row["status"] == "Succeeded"
    assert row["gmt_finished"] == datetime.datetime(2026, 11, 20, 9, 1, 10, tzinfo=UTC)
    assert row["gmt_created"] == datetime.datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
    assert (row["job_id"], row["version"]) == ("4f0e2a51-0d8a-4c43-9b7e-1f6a7c2d3e4f", "884211")
    one_cpu = {"cpu": "1", "memory": "1Gi"}
    assert json.loads(row["resources"]) == {
        "Launcher": {"replicas": 1, "resources": {"requests": one_cpu, "limits": one_cpu}},
        "Worker": {"replicas": 2, "resources": {"requests": one_cpu, "limits": one_cpu}},
    }


def test_a_kubedl_tfjob_with_tenancy_init_containers_and_gpus() -> None:
    body = o.fixture("kubedl-tfjob.yaml")
    row = job_row(body, KINDS["training.kubedl.io", "TFJob"], None)
    assert (row["status"], row["kind"], row["gmt_finished"]) == ("Running", "TFJob", None)
    assert (row["tenant"], row["owner"], row["deploy_region"]) == ("search", "alice", "cn-hangzhou")
    assert json.loads(row["resources"]) == {
        "PS": {
            "replicas": 1,
            "resources": {
                "requests": {"cpu": "500m", "memory": "1Gi"},
                "limits": {"cpu": "1", "memory": "2Gi"},
            },
        },
        "Worker": {
            "replicas": 3,
            "resources": {
                "requests": {"cpu": "2", "memory": "2176Mi", "nvidia.com/gpu": "1"},
                "limits": {"nvidia.com/gpu": "1"},
            },
        },
    }


def test_the_configured_region_wins_over_the_annotation() -> None:
    body = o.fixture("kubedl-tfjob.yaml")
    assert job_row(body, KINDS["training.kubedl.io", "TFJob"], "eu-1")["deploy_region"] == "eu-1"


@pytest.mark.parametrize(
    "annotation",
    [
        "{not json",
        "[1, 2]",
        '"text"',
        '{"tenant": 5}',
        "null",
        # Valid JSON nested deeper than the parser may recurse.
        "[" * 3000 + "]" * 3000,
        '{"tenant": "search", "user": ' + '{"a": ' * 3000 + "1" + "}" * 3001,
    ],
)
def test_an_unreadable_tenancy_annotation_is_ignored(annotation: str) -> None:
    body = o.with_meta(
        o.fixture("kubedl-tfjob.yaml"), annotations={"kubedl.io/tenancy": annotation}
    )
    row = job_row(body, KINDS["training.kubedl.io", "TFJob"], None)
    assert (row["tenant"], row["owner"], row["deploy_region"]) == ("", "", None)


def test_a_huge_tenancy_value_is_clipped_to_its_column() -> None:
    tenancy = json.dumps({"tenant": "t" * 1000, "user": "ü" * 300})
    body = o.with_meta(o.fixture("kubedl-tfjob.yaml"), annotations={"kubedl.io/tenancy": tenancy})
    row = job_row(body, KINDS["training.kubedl.io", "TFJob"], None)
    assert len(row["tenant"]) == 255 and row["tenant"].endswith("…")
    assert len(row["owner"]) == 255


@pytest.mark.parametrize(
    ("conditions", "status"),
    [
        ([], "Created"),
        ([o.condition("Created")], "Created"),
        ([o.condition("Created"), o.condition("Running")], "Running"),
        (
            [o.condition("Created"), o.condition("Running", "False"), o.condition("Failed")],
            "Failed",
        ),
        ([o.condition("Running"), o.condition("Restarting", "False")], "Running"),
        ([o.condition("Created"), o.condition("Suspended")], "Suspended"),
        (
            [o.condition("Created"), o.condition("example.com/Quarantined")],
            "example.com/Quarantined",
        ),
        ([{"type": None, "status": "True"}, {"status": "True"}], "Created"),
        ([o.condition("Running", "Unknown")], "Created"),
    ],
)
def test_status_is_the_last_true_condition(conditions: list[dict[str, str]], status: str) -> None:
    assert kubeflow_status({"status": {"conditions": conditions}}) == status


def test_a_failed_job_without_completion_time_finishes_at_the_failed_transition() -> None:
    body = live(o.example("tfjob-simple.yaml"))
    body["status"] = o.job_status(
        o.condition("Created"), o.condition("Failed", at="2026-11-20T11:00:00Z")
    )
    row = job_row(body, KINDS["kubeflow.org", "TFJob"], None)
    assert row["gmt_finished"] == datetime.datetime(2026, 11, 20, 11, 0, tzinfo=UTC)


@pytest.mark.parametrize("status", [None, "broken", [], {"conditions": None}, {"conditions": "x"}])
def test_a_null_or_malformed_status_reads_as_created(status: object) -> None:
    body = live(o.example("tfjob-simple.yaml"))
    body["status"] = status
    row = job_row(body, KINDS["kubeflow.org", "TFJob"], None)
    assert (row["status"], row["gmt_finished"]) == ("Created", None)


def test_a_deletion_timestamp_marks_the_job_deleted_but_still_in_etcd() -> None:
    body = o.with_meta(live(o.example("tfjob-simple.yaml")), deletionTimestamp=o.T0)
    row = job_row(body, KINDS["kubeflow.org", "TFJob"], None)
    assert (row["deleted"], row["is_in_etcd"]) == (True, True)


@pytest.mark.parametrize("field", ["uid", "name", "resourceVersion"])
def test_an_object_without_identity_is_invalid(field: str) -> None:
    body = live(o.example("tfjob-simple.yaml"))
    del body["metadata"][field]
    with pytest.raises(InvalidObject, match=field):
        job_row(body, KINDS["kubeflow.org", "TFJob"], None)


@pytest.mark.parametrize("metadata", [None, "x", [], {}])
def test_missing_metadata_is_invalid(metadata: object) -> None:
    body = live(o.example("tfjob-simple.yaml"))
    body["metadata"] = metadata
    with pytest.raises(InvalidObject):
        job_row(body, KINDS["kubeflow.org", "TFJob"], None)


def test_a_253_character_name_is_kept_whole_and_a_longer_one_is_invalid() -> None:
    body = o.with_meta(live(o.example("tfjob-simple.yaml")), name="n" * 253)
    assert job_row(body, KINDS["kubeflow.org", "TFJob"], None)["name"] == "n" * 253
    body["metadata"]["name"] = "n" * 254
    with pytest.raises(InvalidObject, match="254 characters"):
        job_row(body, KINDS["kubeflow.org", "TFJob"], None)


def test_non_numeric_resource_versions_are_kept_as_they_are() -> None:
    body = live(o.example("tfjob-simple.yaml"), rv="opaque/v2:abc")
    assert job_row(body, KINDS["kubeflow.org", "TFJob"], None)["version"] == "opaque/v2:abc"


def test_non_integer_replicas_make_the_job_invalid_with_the_path_named() -> None:
    body = live(o.example("tfjob-simple.yaml"))
    body["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] = "two"
    with pytest.raises(InvalidObject, match=r"tfReplicaSpecs\.Worker\.replicas"):
        job_row(body, KINDS["kubeflow.org", "TFJob"], None)


def test_a_job_gone_while_running_becomes_stopped_now() -> None:
    body = live(o.example("tfjob-simple.yaml"))
    body["status"] = o.job_status(o.condition("Created"), o.condition("Running"))
    row = job_row(body, KINDS["kubeflow.org", "TFJob"], None)
    now = datetime.datetime(2026, 11, 22, tzinfo=UTC)
    mark_gone(row, now)
    assert (row["status"], row["gmt_finished"], row["deleted"], row["is_in_etcd"]) == (
        "Stopped",
        now,
        True,
        False,
    )


def test_a_job_gone_after_succeeding_keeps_its_status_and_finish() -> None:
    row = job_row(o.fixture("mpijob-v2beta1-pi.yaml"), KINDS["kubeflow.org", "MPIJob"], None)
    finished = row["gmt_finished"]
    mark_gone(row, datetime.datetime(2026, 11, 22, tzinfo=UTC))
    assert (row["status"], row["gmt_finished"], row["is_in_etcd"]) == ("Succeeded", finished, False)
