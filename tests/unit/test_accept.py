"""The Accept header: which answer a request prefers."""

import pytest

from jobarchive.reading import accept


@pytest.mark.parametrize(
    ("header", "csv"),
    [
        ("text/csv", True),
        ("", False),
        ("*/*", False),
        ("application/json", False),
        ("text/csv, application/json", True),
        ("application/json, text/csv", False),
        ("text/csv;q=0.1, application/json", False),
        ("application/json;q=0.5, text/csv", True),
        ("TEXT/CSV; Q=0.9, */*;q=0.8", True),
        ("text/csv;q=0", False),
        ("text/csv;q=abc", False),
        ("text/csv;charset=utf-8", True),
    ],
)
def test_csv_is_answered_when_the_accept_header_prefers_it(header: str, csv: bool) -> None:
    assert accept.wants_csv(header) is csv
