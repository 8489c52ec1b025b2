"""A namespace asked for is a DNS label, as the API server makes every namespace: any
other is refused before a review or a query (never an empty answer for a typo)."""

import pytest

from jobarchive.reading.params import BadQuery, check_namespace


@pytest.mark.parametrize("name", ["team-a", "a", "0", "a" * 63, "ns-1-2", "", None])
def test_a_namespace_s_name_passes(name: str | None) -> None:
    assert check_namespace(name) == name


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("Team-A", "'Team-A' is not a namespace's name (lowercase letters, digits and '-'"),
        ("team_a", "'team_a' is not a namespace's name"),
        ("-team", "'-team' is not a namespace's name"),
        ("team-", "'team-' is not a namespace's name"),
        ("team.a", "'team.a' is not a namespace's name"),
        ("a" * 64, "is not a namespace's name"),
        ("a" * 129, "129 characters, longer than any stored value (128)"),
        ("team-a\n", "'team-a\\n' is not a namespace's name"),
    ],
)
def test_any_other_is_refused_naming_the_parameter(name: str, said: str) -> None:
    with pytest.raises(BadQuery) as refused:
        check_namespace(name)
    assert str(refused.value).startswith("namespace: ")
    assert said in str(refused.value)
