import datetime
from typing import Any

import pytest

from jobarchive.core.rows import MESSAGE_LENGTH
from jobarchive.recording.convert import InvalidObject, event_row, involved_object
from testbed import objects as o
from testbed.objects import Body

UTC = datetime.UTC
POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "mnist-worker-0", "namespace": "kubeflow", "uid": "pod-uid"},
}


def core_event(**fields: Any) -> Body:
    event = o.event(POD, "BackOff", "Back-off restarting failed container", type="Warning")
    event["metadata"].update(uid="ev-uid", resourceVersion="55", creationTimestamp=o.T0)
    event.update(fields)
    return event


def test_a_core_event_converts_field_by_field() -> None:
    event = core_event(count=4, lastTimestamp="2026-11-20T10:09:00Z")
    row = event_row(event, "eu-1", "job-uid")
    assert row == {
        "event_id": "ev-uid",
        "version": "55",
        "name": event["metadata"]["name"],
        "gmt_created": datetime.datetime(2026, 11, 20, 10, 0, tzinfo=UTC),
        "kind": "Pod",
        "type": "Warning",
        "obj_namespace": "kubeflow",
        "obj_name": "mnist-worker-0",
        "obj_uid": "pod-uid",
        "job_id": "job-uid",
        "reason": "BackOff",
        "message": "Back-off restarting failed container",
        "count": 4,
        "region": "eu-1",
        "first_timestamp": datetime.datetime(2026, 11, 20, 10, 0, tzinfo=UTC),
        "last_timestamp": datetime.datetime(2026, 11, 20, 10, 9, tzinfo=UTC),
    }


def test_an_events_k8s_io_event_read_through_core_uses_series_and_event_time() -> None:
    event = core_event(
        count=None,
        firstTimestamp=None,
        lastTimestamp=None,
        eventTime="2026-11-20T10:00:00.123456Z",
        series={"count": 7, "lastObservedTime": "2026-11-20T10:30:00.000001Z"},
    )
    row = event_row(event, None)
    assert row["count"] == 7
    assert row["first_timestamp"] == datetime.datetime(2026, 11, 20, 10, 0, 0, 123456, tzinfo=UTC)
    assert row["last_timestamp"] == datetime.datetime(2026, 11, 20, 10, 30, 0, 1, tzinfo=UTC)


def test_a_single_events_k8s_io_event_counts_once_at_its_event_time() -> None:
    event = core_event(count=0, firstTimestamp=None, lastTimestamp=None, eventTime=o.T0)
    row = event_row(event, None)
    assert (row["count"], row["first_timestamp"], row["last_timestamp"]) == (
        1,
        datetime.datetime(2026, 11, 20, 10, tzinfo=UTC),
        datetime.datetime(2026, 11, 20, 10, tzinfo=UTC),
    )


def test_an_event_in_the_events_k8s_io_shape_converts_too() -> None:
    event = core_event(note="pulled", deprecatedCount=2, regarding=core_event()["involvedObject"])
    del event["involvedObject"], event["message"], event["count"]
    row = event_row(event, None)
    assert (row["obj_uid"], row["message"], row["count"]) == ("pod-uid", "pulled", 2)


def test_an_event_without_times_falls_back_to_its_creation() -> None:
    row = event_row(core_event(firstTimestamp=None, lastTimestamp=None), None)
    assert row["first_timestamp"] == row["last_timestamp"] == row["gmt_created"]


def test_an_involved_object_without_namespace_takes_the_events() -> None:
    event = core_event()
    del event["involvedObject"]["namespace"]
    assert involved_object(event).namespace == "kubeflow"


@pytest.mark.parametrize("involved", [None, {}, {"kind": "Pod"}, {"name": "x"}, "Pod/x"])
def test_an_event_about_nothing_is_invalid(involved: object) -> None:
    with pytest.raises(InvalidObject, match="involvedObject"):
        involved_object(core_event(involvedObject=involved))


def test_huge_non_ascii_messages_with_quotes_are_cut_to_their_bound_with_a_mark() -> None:
    message = ("日本語 'quoted' \"double\" back\\slash 🚀 \x00 " * 30_000)[:1_048_576]
    stored = event_row(core_event(message=message), None)["message"]
    assert len(stored) == MESSAGE_LENGTH and stored == message[: MESSAGE_LENGTH - 1] + "…"
    short = message[:MESSAGE_LENGTH]
    assert event_row(core_event(message=short), None)["message"] == short


def test_a_lone_surrogate_is_replaced_so_the_database_can_store_it() -> None:
    row = event_row(core_event(message="bad \ud800 half"), None)
    assert row["message"] == "bad ? half"


def test_an_overlong_reason_is_clipped_not_lost() -> None:
    row = event_row(core_event(reason="R" * 400), None)
    assert len(row["reason"]) == 255


def test_an_absurd_count_is_capped_to_the_column() -> None:
    assert event_row(core_event(count=2**40), None)["count"] == 2**31 - 1
