"""What the listing of live jobs at start says of a listed job and of a failed list."""

import pytest
from kubernetes_asyncio.client.exceptions import ApiException

from jobarchive.recording.priming import failure, identity


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
    assert failure(ValueError("x" * 500)) == "ValueError " + "x" * 200
