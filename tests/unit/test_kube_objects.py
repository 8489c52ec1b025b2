"""The aggregated API's pure parts: rows as Kubernetes objects and back (every field of
the read side's shapes carried), the Table kubectl prints, the discovery documents,
field selectors, and the Accept header read as kube-apiserver reads it."""

import datetime
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jobarchive.reading import auth, embedded
from jobarchive.reading.kube import discovery, objects, selectors, tables
from jobarchive.reading.kube.admitted import NONE
from jobarchive.reading.queries import BadQuery
from jobarchive.reading.queries.shapes import event_json, job_json, pod_json
from jobarchive.storage.models import Event, Job, Pod

T0 = datetime.datetime(2026, 11, 20, 10, 0, tzinfo=datetime.UTC)
NOW = T0 + datetime.timedelta(days=3, hours=2)
TEXT = st.text(max_size=40)
MAYBE_TIME = st.none() | st.datetimes(
    min_value=datetime.datetime(2000, 1, 1), max_value=datetime.datetime(2100, 1, 1)
).map(lambda moment: moment.replace(tzinfo=datetime.UTC))


def a_job(**fields: Any) -> Job:
    values: dict[str, Any] = {
        "id": 7,
        "name": "mnist",
        "namespace": "team-a",
        "job_id": "0b6f8c1e-8d5c-4b7a-9d2e-1f0a2b3c4d5e",
        "version": "1234",
        "status": "Failed",
        "kind": "TFJob",
        "resources": json.dumps(
            {"Worker": {"replicas": 2, "resources": {"limits": {"nvidia.com/gpu": "4"}}}}
        ),
        "deploy_region": "eu-1",
        "cluster": "east",
        "tenant": "ml",
        "owner": "alice",
        "queue": "research",
        "deleted": True,
        "is_in_etcd": False,
        "gmt_created": T0,
        "gmt_modified": T0 + datetime.timedelta(minutes=30),
        "gmt_finished": T0 + datetime.timedelta(minutes=20),
        "gmt_job_running": T0 + datetime.timedelta(minutes=1),
        "gmt_job_finished": T0 + datetime.timedelta(minutes=20),
    }
    return Job(**{**values, **fields})


def a_pod(**fields: Any) -> Pod:
    values: dict[str, Any] = {
        "id": 9,
        "name": "mnist-worker-0",
        "namespace": "team-a",
        "pod_id": "1b6f8c1e-8d5c-4b7a-9d2e-1f0a2b3c4d5e",
        "version": "99",
        "status": "Failed",
        "image": "tf:2",
        "job_id": "0b6f8c1e-8d5c-4b7a-9d2e-1f0a2b3c4d5e",
        "replica_type": "worker",
        "resources": '{"requests": {"nvidia.com/gpu": "2"}}',
        "host_ip": "10.0.0.5",
        "pod_ip": "10.1.0.5",
        "deploy_region": None,
        "cluster": "east",
        "deleted": False,
        "is_in_etcd": False,
        "remark": "OOMKilled (exit code 137)",
        "gmt_created": T0,
        "gmt_modified": T0,
        "gmt_started": T0 + datetime.timedelta(seconds=5),
        "gmt_finished": None,
    }
    return Pod(**{**values, **fields})


def an_event(**fields: Any) -> Event:
    values: dict[str, Any] = {
        "id": 11,
        "event_id": "2b6f8c1e-8d5c-4b7a-9d2e-1f0a2b3c4d5e",
        "name": "mnist-worker-0.17a2b3c4d5e6f7a8",
        "kind": "Pod",
        "type": "Warning",
        "obj_namespace": "team-a",
        "obj_name": "mnist-worker-0",
        "obj_uid": "1b6f8c1e-8d5c-4b7a-9d2e-1f0a2b3c4d5e",
        "job_id": None,
        "reason": "OOMKilling",
        "message": "Memory cgroup out of memory",
        "count": 3,
        "region": None,
        "cluster": "west",
        "first_timestamp": T0,
        "last_timestamp": T0 + datetime.timedelta(minutes=5),
    }
    return Event(**{**values, **fields})


@given(
    name=TEXT,
    owner=TEXT,
    status=TEXT,
    finished=MAYBE_TIME,
    running=MAYBE_TIME,
    queue=st.none() | TEXT,
)
def test_an_archived_job_gives_back_the_row_it_was_made_of(
    name: str, owner: str, status: str, finished: Any, running: Any, queue: Any
) -> None:
    job_model = a_job(name=name, owner=owner, status=status, gmt_finished=finished, queue=queue)
    job_model.gmt_job_running = running
    row = job_json(job_model, NOW)
    job = objects.archived_job(row)
    assert objects.job_row(job) == row
    assert (job["apiVersion"], job["kind"]) == ("archive.jobarchive.io/v1", "ArchivedJob")
    assert job["metadata"] == {
        "name": name,
        "namespace": "team-a",
        "uid": row["job_id"],
        "creationTimestamp": "2026-11-20T10:00:00Z",
    }
    assert (job["status"]["phase"], job["status"]["inCluster"], job["spec"]["owner"]) == (
        status,
        False,
        owner,
    )
    assert job["spec"]["queue"] == queue


COUNT = st.none() | st.integers(min_value=0, max_value=2**63 - 1)


@given(
    remark=st.none() | TEXT,
    host=st.none() | TEXT,
    tailed=st.none() | st.booleans(),
    node=st.none() | TEXT,
    gpus=COUNT,
    memory=COUNT,
)
def test_an_archived_pod_gives_back_its_row(
    remark: Any, host: Any, tailed: Any, node: Any, gpus: Any, memory: Any
) -> None:
    row = pod_json(
        a_pod(remark=remark, host_ip=host, node_name=node, gpus=gpus, memory_bytes=memory)
    )
    if tailed is not None:
        # A job's detail: each pod with its log tail's flag and its failure class.
        row["has_log_tail"] = tailed
        row["failure_class"] = "GPUOutOfMemory" if tailed else None
    pod = objects.archived_pod(row, "mnist")
    assert objects.pod_row(pod) == row
    assert (pod["spec"]["jobName"], pod["spec"]["jobUID"]) == ("mnist", row["job_id"])
    assert (pod["spec"]["nodeName"], pod["spec"]["requested"]) == (
        node,
        {"gpus": gpus, "cpuMillis": None, "memoryBytes": memory},
    )


@given(message=TEXT, first=MAYBE_TIME, job=st.none() | TEXT)
def test_an_archived_event_is_a_core_event_and_gives_back_its_row(
    message: str, first: Any, job: Any
) -> None:
    row = event_json(an_event(message=message, first_timestamp=first, job_id=job))
    event = objects.archived_event(row)
    assert objects.event_row(event) == row
    assert event["involvedObject"] == {
        "kind": "Pod",
        "namespace": "team-a",
        "name": "mnist-worker-0",
        "uid": row["obj_uid"],
    }
    assert event["metadata"]["creationTimestamp"] == row["first_timestamp"]


RESOURCES = st.sampled_from(
    ['{"Worker": {"replicas": 2}}', "not JSON", '["' + "x" * 9000 + '"]', "{}"]
)


@given(
    resources=RESOURCES,
    finished=MAYBE_TIME,
    in_cluster=st.booleans(),
    deleted=st.booleans(),
    remark=st.none() | st.text(max_size=5000),
    message=st.text(max_size=5000),
    first=MAYBE_TIME,
)
def test_a_lists_object_made_of_its_row_in_one_step_is_the_one_its_json_row_makes(
    resources: str,
    finished: Any,
    in_cluster: bool,
    deleted: bool,
    remark: Any,
    message: str,
    first: Any,
) -> None:
    # The same fields in the same order: what the aggregated API answered before a list
    # made its objects of the query's rows without the JSON API's shape between.
    job = a_job(resources=resources, gmt_finished=finished, is_in_etcd=in_cluster)
    job.deleted = deleted
    made = objects.listed_job(job, NOW)
    assert json.dumps(made) == json.dumps(objects.archived_job(job_json(job, NOW)))
    pod = a_pod(resources=resources, remark=remark, is_in_etcd=in_cluster, deleted=deleted)
    assert json.dumps(objects.listed_pod(pod)) == json.dumps(objects.archived_pod(pod_json(pod)))
    event = an_event(message=message, first_timestamp=first)
    made_event = objects.listed_event(event)
    assert json.dumps(made_event) == json.dumps(objects.archived_event(event_json(event)))


def test_a_jobs_detail_carries_its_pods_events_replicas_and_cursors() -> None:
    detail = job_json(a_job(), NOW)
    detail.update(NONE)  # Kueue never saw it: nothing of it in the status
    pod = {**pod_json(a_pod()), "has_log_tail": True}
    detail.update(
        pods=[pod],
        pods_next_cursor="next-pods",
        replicas={"worker": {"active": 0, "succeeded": 0, "failed": 1, "stopped": 0}},
        events=[event_json(an_event())],
        events_next_cursor=None,
    )
    job = objects.job_with_detail(detail, {detail["job_id"]: "mnist"})
    assert "attempts" not in job["status"] and "preemptions" not in job["status"]
    assert job["status"]["podsContinue"] == "next-pods"
    assert "eventsContinue" not in job["status"]
    assert job["status"]["pods"][0]["status"]["remark"] == "OOMKilled (exit code 137)"
    assert objects.detail_row(job) == detail


def test_a_jobs_detail_leaves_out_what_its_reader_may_not_list_and_names_it() -> None:
    detail = job_json(a_job(), NOW)
    detail.update(NONE)  # Kueue never saw it: nothing of it in the status
    detail.update(
        pods=[{**pod_json(a_pod()), "has_log_tail": True}],
        pods_next_cursor="next-pods",
        replicas={"worker": {"active": 0, "succeeded": 0, "failed": 1, "stopped": 0}},
        events=[event_json(an_event())],
        events_next_cursor="next-events",
    )
    logs = auth.Resource("archive.jobarchive.io", "archivedjobs", "log")
    shown = embedded.Shown(
        (
            embedded.Omission("events", "list", auth.JOBS, "team-a"),
            embedded.Omission("pods[].has_log_tail", "get", logs, "team-a"),
        )
    ).of(detail)
    assert "events" not in shown and "events_next_cursor" not in shown
    assert "has_log_tail" not in shown["pods"][0] and shown["pods_next_cursor"] == "next-pods"
    job = objects.job_with_detail(shown, {detail["job_id"]: "mnist"})
    assert "events" not in job["status"] and "eventsContinue" not in job["status"]
    assert "hasLogTail" not in job["status"]["pods"][0]["status"]
    assert job["status"]["omitted"] == [
        {
            "field": "status.events",
            "reason": "forbidden: list jobs.jobarchive.io in namespace team-a",
        },
        {
            "field": "status.pods[].status.hasLogTail",
            "reason": "forbidden: get archivedjobs/log.archive.jobarchive.io in namespace team-a",
        },
    ]
    assert objects.detail_row(job) == shown
    assert embedded.Shown().of(detail) == detail


def test_a_list_says_where_the_next_page_begins_only_when_there_is_one() -> None:
    assert objects.list_of(discovery.PODS, [], "c")["metadata"]["continue"] == "c"
    last = objects.list_of(discovery.JOBS, [], None)
    assert (last["kind"], last["metadata"]) == ("ArchivedJobList", {"resourceVersion": ""})


@pytest.mark.parametrize(
    ("seconds", "written"),
    [
        (-5, "<invalid>"),
        (-1, "0s"),
        (59, "59s"),
        (119, "119s"),
        (150, "2m30s"),
        (600, "10m"),
        (3 * 3600 - 1, "179m"),
        (3 * 3600 + 60, "3h1m"),
        (9 * 3600, "9h"),
        (50 * 3600, "2d2h"),
        (8 * 86400, "8d"),
        (800 * 86400, "2y70d"),
        (9 * 365 * 86400, "9y"),
    ],
)
def test_ages_are_written_as_kube_apiserver_writes_them(seconds: float, written: str) -> None:
    assert tables.human_duration(seconds) == written


def test_a_jobs_table_has_the_columns_kubectl_prints_and_the_wide_ones() -> None:
    job = objects.archived_job(job_json(a_job(name="evil\x1b]0;x\x07"), NOW))
    table = tables.table(discovery.JOBS, [job], "more", "v1", "Metadata", NOW)
    names = [(column["name"], column["priority"]) for column in table["columnDefinitions"]]
    assert names == [
        ("Name", 0),
        ("Kind", 0),
        ("Status", 0),
        ("Failure", 0),
        ("Age", 0),
        ("Duration", 0),
        ("Cluster", 1),
        ("Owner", 1),
        ("Tenant", 1),
        ("Region", 1),
        ("Queue", 1),
        ("GPUs", 1),
        ("UID", 1),
    ]
    [row] = table["rows"]
    assert row["cells"] == [
        "evil\\x1b]0;x\\x07",
        "TFJob",
        "Failed",
        "",
        "3d2h",
        "20m",
        "east",
        "alice",
        "ml",
        "eu-1",
        "research",
        "8",
        job["metadata"]["uid"],
    ]
    assert row["object"] == {
        "apiVersion": "meta.k8s.io/v1",
        "kind": "PartialObjectMetadata",
        "metadata": job["metadata"],
    }
    assert table["metadata"]["continue"] == "more"


def test_pods_and_events_tables_and_what_a_row_carries_of_its_object() -> None:
    pod = objects.archived_pod(pod_json(a_pod()), "mnist")
    [row] = tables.table(discovery.PODS, [pod], None, "v1beta1", "Object", NOW)["rows"]
    assert row["cells"] == [
        "mnist-worker-0",
        "mnist",
        "worker",
        "Failed",
        "10.0.0.5",
        "3d2h",
        "tf:2",
        "2",
        "east",
        pod["metadata"]["uid"],
    ]
    assert row["object"] == pod
    # The node by name, and the GPUs as counted, where the row keeps them.
    counted = objects.archived_pod(pod_json(a_pod(node_name="gpu-node-3", gpus=3)), "mnist")
    [row] = tables.table(discovery.PODS, [counted], None, "v1", "None", NOW)["rows"]
    assert (row["cells"][4], row["cells"][7]) == ("gpu-node-3", "3")
    event = objects.archived_event(event_json(an_event()))
    table = tables.table(discovery.EVENTS, [event], None, "v1", "None", NOW)
    [row] = table["rows"]
    assert "object" not in row
    assert row["cells"] == [
        "3d1h",
        "Warning",
        "OOMKilling",
        "pod/mnist-worker-0",
        "Memory cgroup out of memory",
        3,
        "3d2h",
        "west",
    ]
    assert "continue" not in table["metadata"]


@pytest.mark.parametrize(
    ("accept", "wanted"),
    [
        (
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;"
            "v=v1beta1;g=meta.k8s.io,application/json",
            "v1",
        ),
        ("application/json;as=Table;v=v1beta1;g=meta.k8s.io, application/json", "v1beta1"),
        ("application/json", "json"),
        ("*/*", "json"),
        ("", "json"),
        ("application/vnd.kubernetes.protobuf, application/json", "json"),
        ("application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io", None),
        ("application/yaml", None),
        ("application/json;q=0", None),
    ],
)
def test_the_accept_header_chooses_a_table_or_plain_json(accept: str, wanted: str | None) -> None:
    assert tables.wanted_format(accept) == wanted


def test_discovery_chooses_the_aggregated_document_as_kube_apiserver_does() -> None:
    kubectl = (
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
        "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,"
        "application/json"
    )
    assert discovery.wants_aggregated(kubectl) is True
    assert discovery.wants_aggregated("application/json") is False
    assert (
        discovery.wants_aggregated(
            "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
        )
        is None
    )
    [group] = discovery.aggregated()["items"]
    [version] = group["versions"]
    jobs = version["resources"][0]
    assert (jobs["resource"], jobs["shortNames"], jobs["categories"], jobs["scope"]) == (
        "archivedjobs",
        ["ajob"],
        ["archive"],
        "Namespaced",
    )
    assert [sub["subresource"] for sub in jobs["subresources"]] == ["log"]
    listed = discovery.resource_list()["resources"]
    assert [r["name"] for r in listed] == [
        "archivedjobs",
        "archivedjobs/log",
        "archivedpods",
        "archivedevents",
    ]
    assert discovery.group_list()["groups"][0]["preferredVersion"]["version"] == "v1"


def test_field_selectors_become_the_lists_filters() -> None:
    assert selectors.filters("archivedjobs", "status.phase=Failed,spec.kind==TFJob") == [
        ("status", "Failed"),
        ("kind", "TFJob"),
    ]
    assert selectors.filters("archivedjobs", "metadata.name=a\\,b,spec.owner=") == [
        ("exact_name", "a,b"),
        ("owner", ""),
    ]
    assert selectors.filters("archivedjobs", "spec.queue=research") == [("queue", "research")]
    assert selectors.filters("archivedpods", "spec.jobUID=u") == [("job_uid", "u")]
    assert selectors.filters("archivedevents", "involvedObject.uid=u,type=Warning") == [
        ("uid", "u"),
        ("type", "Warning"),
    ]
    assert selectors.filters("archivedevents", "") == []


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        ("status.phase!=Failed", "only = and == are supported"),
        ("spec.colour=red", "'spec.colour' is not a field selector of archivedjobs (supported:"),
        ("status.phase", "is not FIELD=VALUE"),
        ("status.phase=a=b", "is not FIELD=VALUE"),
        ("status.phase in (Failed)", "is not FIELD=VALUE"),
        ("status.phase=A,status.phase=B", "given twice"),
        ("status.phase=A\\", "unfinished escape"),
        (
            "status.durationSeconds=60",
            "'status.durationSeconds': no index serves this field of archivedjobs (supported: "
            "metadata.name, metadata.namespace, metadata.uid, status.phase, spec.kind, "
            "spec.owner, spec.tenant, spec.queue, spec.cluster, served by an index; "
            "spec.region, status.inCluster, which sift what those select)",
        ),
    ],
)
def test_other_field_selectors_are_refused_naming_what_is_supported(
    selector: str, message: str
) -> None:
    with pytest.raises(BadQuery, match=None) as refused:
        selectors.filters("archivedjobs", selector)
    assert message in str(refused.value)


def test_a_failed_jobs_detail_carries_its_failure_as_kubernetes_spells_it() -> None:
    detail = job_json(a_job(), NOW)
    detail.update(NONE)  # Kueue never saw it: nothing of it in the status
    failure: dict[str, Any] = {"class": "OOMKilled", "pod": "mnist-worker-0"}
    failure.update(container="tensorflow", exit_code=137, signal=9, detail="OOMKilled")
    failure["derived_exit_code"] = 137
    detail.update(replicas={}, failure=failure)
    job = objects.job_with_detail(detail, {})
    shown = job["status"]["failure"]
    assert (shown["class"], shown["exitCode"], shown["derivedExitCode"]) == ("OOMKilled", 137, 137)
    assert "exit_code" not in shown
    assert objects.detail_row(job) == detail


def test_a_failed_jobs_class_is_its_tables_failure_column() -> None:
    job = objects.archived_job(job_json(a_job(), NOW))
    job["status"]["failureClass"] = "GPUOutOfMemory"
    [row] = tables.table(discovery.JOBS, [job], None, "v1", "None", NOW)["rows"]
    assert row["cells"][2:4] == ["Failed", "GPUOutOfMemory"]


def test_a_jobs_kueue_attempts_waits_and_figures_are_spelt_as_kubernetes_does() -> None:
    detail = job_json(a_job(), NOW)
    attempt = {
        "cluster_queue": "cq-a100",
        "local_queue": "user-queue",
        "flavors": {"worker": {"nvidia.com/gpu": "a100"}},
        "quota_reserved_at": "2026-11-20T10:05:00Z",
        "admitted_at": "2026-11-20T10:05:00Z",
        "running_at": None,
        "ended_at": "2026-11-20T11:00:00Z",
        "end_reason": "Preempted",
        "underlying_cause": "InClusterQueue",
        "message": "Preempted to accommodate a workload",
        "preemptor_workload_id": "w-uid",
        "preemptor_job_id": "j-uid",
        "requeues": 1,
    }
    wait: dict[str, Any] = {"reason": "Pending", "message": "quota"}
    wait["first_seen"] = "2026-11-20T10:00:02Z"
    wait.update(last_seen="2026-11-20T10:05:00Z", held_s=298.0)
    detail.update(replicas={}, attempts=[attempt], attempts_truncated=False, waits=[wait])
    detail.update(waits_truncated=False, preemptions=1, preempted_gpu_hours=3.622)
    detail.update(evicted_gpu_hours=0.0, quota_wait_s=300.0, start_wait_s=None)
    detail["requeue_wait_s"] = 0.0
    job = objects.job_with_detail(detail, {})
    status = job["status"]
    assert status["attempts"][0]["endReason"] == "Preempted"
    assert status["attempts"][0]["preemptorJobUID"] == "j-uid"
    assert status["waits"][0]["heldSeconds"] == 298.0
    assert (status["preemptedGPUHours"], status["quotaWaitSeconds"]) == (3.622, 300.0)
    assert status["failureClass"] is None and not status["attemptsTruncated"]
    assert objects.detail_row(job) == detail
