import pymysql
import pytest
from tortoise.exceptions import OperationalError

from jobarchive.storage.failures import is_retryable
from jobarchive.storage.store import is_older


@pytest.mark.parametrize(
    ("version", "than", "older"),
    [
        ("9", "10", True),
        ("10", "9", False),
        ("10", "10", False),
        ("99999999999999999999", "100000000000000000000", True),
        ("a", "b", False),
        ("1", "x", False),
        ("", "1", False),
        ("٣", "4", False),
    ],
)
def test_resource_versions_compare_as_integers_only_when_both_are(
    version: str, than: str, older: bool
) -> None:
    assert is_older(version, than) is older


def test_deadlocks_and_lock_timeouts_are_retryable_however_wrapped() -> None:
    deadlock = pymysql.err.OperationalError(1213, "Deadlock found")
    assert is_retryable(deadlock)
    assert is_retryable(OperationalError(deadlock))
    wrapped = OperationalError("batch failed")
    wrapped.__cause__ = pymysql.err.OperationalError(1205, "Lock wait timeout")
    assert is_retryable(wrapped)
    assert not is_retryable(OperationalError(pymysql.err.IntegrityError(1062, "Duplicate")))
    assert not is_retryable(ValueError("x"))
