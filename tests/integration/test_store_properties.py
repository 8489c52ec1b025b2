"""Property-based, on both databases: whatever text a valid object carries (every Unicode
plane, SQL-looking strings, quotes, NULs, 253-character names, opaque resourceVersions,
a MiB of message) is stored whole and read back unchanged."""

import uuid
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobarchive.recording.convert import event_row, pod_row
from jobarchive.storage.models import Event, Pod
from jobarchive.storage.store import Store
from testbed import objects as o
from tests.support.strategies import hostile_text

STORED = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
valid_text = hostile_text.map(lambda text: text.encode("utf-8", "replace").decode("utf-8"))
name = st.text(min_size=1, max_size=253)
version = st.one_of(
    st.integers(min_value=0, max_value=2**70).map(str), st.text(min_size=1, max_size=60)
)


@STORED
@given(
    name=name,
    namespace=st.text(max_size=63),
    rv=version,
    image=valid_text,
    label=st.text(max_size=63),
    message=st.one_of(valid_text, st.just("✓ 'x' \\ \x00 " * 80_000)),
    reason=valid_text,
)
async def test_any_text_in_a_valid_pod_and_event_is_stored_whole(
    database: str,
    name: str,
    namespace: str,
    rv: str,
    image: str,
    label: str,
    message: str,
    reason: str,
) -> None:
    pod: dict[str, Any] = o.fixture("mpijob-v2beta1-launcher-pod.yaml")
    pod["metadata"].update(
        uid=str(uuid.uuid4()), name=name, namespace=namespace, resourceVersion=rv
    )
    pod["metadata"]["labels"]["training.kubeflow.org/replica-type"] = label
    pod["spec"]["containers"][0]["image"] = image
    event = o.event(pod, reason, message)
    event["metadata"].update(uid=str(uuid.uuid4()), resourceVersion=rv, creationTimestamp=o.T0)
    pod_fields = pod_row(pod, "job", "mpi-launcher", None)
    event_fields = event_row(event, None)

    await Store().upsert(Pod, [pod_fields])
    await Store().upsert(Event, [event_fields])

    stored_pod = await Pod.get(pod_id=pod_fields["pod_id"])
    assert (stored_pod.name, stored_pod.namespace, stored_pod.version) == (name, namespace, rv)
    assert (stored_pod.image, stored_pod.replica_type) == (
        pod_fields["image"],
        pod_fields["replica_type"],
    )
    stored_event = await Event.get(event_id=event_fields["event_id"])
    assert (stored_event.message, stored_event.reason) == (
        event_fields["message"],
        event_fields["reason"],
    )
    assert stored_event.obj_name == name
