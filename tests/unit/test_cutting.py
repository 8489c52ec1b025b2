"""A stored JSON column read back: parsed when it is JSON, its text otherwise, whatever
it holds."""

from jobarchive.core.cutting import clipped_json


def test_json_is_parsed_and_text_is_kept() -> None:
    assert clipped_json('{"worker": {"replicas": 2}}', 1000) == {"worker": {"replicas": 2}}
    assert clipped_json("not json", 1000) == "not json"


def test_json_nested_past_the_recursion_limit_is_answered_as_its_text() -> None:
    deep = "[" * 50_000 + "]" * 50_000
    assert clipped_json(deep, 200_000) == deep
