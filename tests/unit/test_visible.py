"""The one neutraliser of what is shown: no character that acts on a terminal or hides
or reorders text survives it, whatever the text; plain text passes unchanged, and
nothing is lost."""

import ast
import pathlib
import sys
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jobarchive.core import visible as module
from jobarchive.core.visible import CUT, HIDDEN, visible

PROPERTIES = settings(max_examples=500, deadline=None)
# What the probe of issue 24 stored, and the other invisible characters judged dangerous.
DANGEROUS = [
    *"\x00\x07\x08\x0b\x0c\x0d\x1b\x7f\x85\x9b\x9d",
    *"\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069",
    *"\u200b\u200d\u2028\u2029\u2060\ufeff\u00ad\U000e0041\ud800\udfff",
]
anything = st.lists(
    st.one_of(st.characters(exclude_categories=()), st.sampled_from(DANGEROUS)), max_size=80
).map("".join)
plain = st.text(st.characters(exclude_categories=("Cc", "Cf", "Cs", "Zl", "Zp")), max_size=80)


def hidden(text: str) -> list[str]:
    return [char for char in text if unicodedata.category(char) in HIDDEN]


@PROPERTIES
@given(anything)
def test_no_hidden_character_survives_whatever_the_text(text: str) -> None:
    assert [char for char in hidden(visible(text)) if char != "\t"] == []


@PROPERTIES
@given(anything)
def test_with_lines_only_line_endings_and_tabs_survive(text: str) -> None:
    shown = visible(text, lines=True)
    assert set(hidden(shown)) <= {"\t", "\n", "\r"}
    assert shown.count("\r") == shown.count("\r\n")


@PROPERTIES
@given(plain)
def test_plain_text_passes_unchanged(text: str) -> None:
    assert visible(text) == text
    assert visible(text, lines=True) == text


@PROPERTIES
@given(anything.filter(lambda text: "\\" not in text))
def test_nothing_is_lost_the_escapes_read_back_as_the_text(text: str) -> None:
    shown = visible(text)
    assert shown.encode("ascii", "backslashreplace").decode("unicode_escape") == text


@PROPERTIES
@given(anything)
def test_showing_twice_changes_nothing_more(text: str) -> None:
    assert visible(visible(text)) == visible(text)
    assert visible(visible(text, lines=True), lines=True) == visible(text, lines=True)


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("\x1b]0;owned\x07", "\\x1b]0;owned\\x07"),
        ("\x1b]52;c;ZXZpbA==\x07", "\\x1b]52;c;ZXZpbA==\\x07"),
        ("\x1b[2J\x1b[8m\x1b[10;1H", "\\x1b[2J\\x1b[8m\\x1b[10;1H"),
        ("[link=https://evil.example/login]x[/link]", "[link=https://evil.example/login]x[/link]"),
        ("abc\u202edef", "abc\\u202edef"),
        ("nul\x00 csi\x9b", "nul\\x00 csi\\x9b"),
        ("tag\U000e0041", "tag\\U000e0041"),
        (
            "tab\tstays, C:\\path too, ünïcödé, 日本語, 😀",
            "tab\tstays, C:\\path too, ünïcödé, 日本語, 😀",
        ),
        ("two\nlines\r\n", "two\\nlines\\r\\n"),
    ],
)
def test_each_hidden_character_is_shown_as_python_writes_its_escape(text: str, shown: str) -> None:
    assert visible(text) == shown


def test_with_lines_a_lone_carriage_return_is_shown_but_a_crlf_ending_kept() -> None:
    assert visible("10%\r20%\r\ndone\n", lines=True) == "10%\\r20%\r\ndone\n"


@PROPERTIES
@given(anything, st.integers(min_value=0, max_value=90), st.booleans())
def test_with_a_limit_the_text_is_cut_between_escapes_with_the_one_mark(
    text: str, limit: int, lines: bool
) -> None:
    whole = visible(text, lines=lines)
    shown = visible(text, lines=lines, limit=limit)
    if len(whole) <= limit:
        assert shown == whole
        return
    kept = shown.removesuffix(CUT.format(len(text)))
    assert kept != shown and len(kept) <= limit
    # A whole number of characters, each written as without a limit: no escape split.
    assert kept in {visible(text[:end], lines=lines) for end in range(len(text) + 1)}
    assert whole.startswith(kept)


@pytest.mark.parametrize(
    ("text", "limit", "shown"),
    [
        ("abcdef", 3, "abc…(6 characters)"),
        ("abc", 3, "abc"),
        ("\x1b[2J", 5, "\\x1b[…(4 characters)"),
        ("\x00" * 100_000, 10, "\\x00\\x00…(100000 characters)"),
        ("a\r\nb", 3, "a…(4 characters)"),
    ],
)
def test_a_cut_says_how_long_the_text_was(text: str, limit: int, shown: str) -> None:
    assert visible(text, limit=limit) == shown


def test_the_neutraliser_imports_the_standard_library_only() -> None:
    tree = ast.parse(pathlib.Path(module.__file__ or "").read_text())
    imported = {
        alias.name.partition(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in (
            node.names if isinstance(node, ast.Import) else [ast.alias(node.module or "")]
        )
    }
    assert imported and imported <= sys.stdlib_module_names
