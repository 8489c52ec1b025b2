"""The failure taxonomy's rules as data (decision 42): ``rules_from`` makes rules of a
rules file's loaded mapping (the shipped ``taxonomy.yaml``, or a site's), and refuses
anything it does not understand with a ValueError naming the rule and the field.

A rule's fields are documented at the head of ``taxonomy.yaml``. A regular expression
is checked before it is used: it compiles, it is at most ``PATTERN_LENGTH`` long, it
does not match an empty line (a rule matching every line is a mistake), and no group of
it that is repeated holds a repetition itself (``(a+)+``, ``(\\w+\\s?)*``): the shape whose
backtracking explodes. Pure: the file is read by ``jobarchive.infra.rules``.
"""

import dataclasses
import re
from collections.abc import Mapping

# A class's name: a letter, then letters and digits (it is stored and filtered on).
CLASS_NAME = re.compile(r"[A-Za-z][A-Za-z0-9]{0,62}")
PATTERN_LENGTH = 500
# ``exit_code: nonzero``: any exit code but 0.
NONZERO = "nonzero"
# ``kueue_reason: ['*']``: any reason Kueue evicted for.
ANY = "*"
MATCHED = "matched"
TRACEBACK = "traceback"
# A repeated group holding a repetition, its parentheses not nested (a simple check).
_NESTED = re.compile(r"\((?:[^()\\]|\\.)*[*+{](?:[^()\\]|\\.)*\)[*+{]")
_NAME_FIELDS = ("container_reason", "pod_reason", "disruption", "event_reason", "kueue_reason")
_PATTERN_FIELDS = ("pod_message", "event_message", "tail")
_MATCHERS = frozenset({*_NAME_FIELDS, *_PATTERN_FIELDS, "exit_code"})
_FIELDS = _MATCHERS | {"class", "detail", "wrappers"}


@dataclasses.dataclass(frozen=True)
class Rule:
    """One rule: the class it gives and what it matches; each set or tuple is "any of".
    ``traceback``: its detail is the last traceback's exception, passing over
    ``wrappers``."""

    failure_class: str
    container_reasons: frozenset[str] = frozenset()
    exit_codes: frozenset[int] = frozenset()
    any_nonzero: bool = False
    pod_reasons: frozenset[str] = frozenset()
    pod_messages: tuple[re.Pattern[str], ...] = ()
    disruptions: frozenset[str] = frozenset()
    event_reasons: frozenset[str] = frozenset()
    event_messages: tuple[re.Pattern[str], ...] = ()
    kueue_reasons: frozenset[str] = frozenset()
    tail: tuple[re.Pattern[str], ...] = ()
    traceback: bool = False
    wrappers: frozenset[str] = frozenset()


def rules_from(data: object) -> tuple[Rule, ...]:
    """The rules of a rules file's loaded content, a mapping ``{rules: [...]}``, in order.
    Raises ValueError naming the rule (its position from 1, and its class) and field."""
    if not isinstance(data, Mapping) or set(data) != {"rules"}:
        raise ValueError("a rules file is a mapping with one key, 'rules': a list of rules")
    listed = data["rules"]
    if not isinstance(listed, list):
        raise ValueError("'rules' must be a list of rules")
    return tuple(_rule(index, entry) for index, entry in enumerate(listed, 1))


def _rule(index: int, entry: object) -> Rule:
    if not isinstance(entry, Mapping):
        raise ValueError(f"rule {index}: must be a mapping of fields, not {_kind(entry)}")
    name = entry.get("class")
    where = f"rule {index} ({name})" if isinstance(name, str) else f"rule {index}"
    if not isinstance(name, str) or not CLASS_NAME.fullmatch(name):
        raise ValueError(f"{where}: 'class' must be a letter, then at most 62 letters or digits")
    unknown = sorted(str(field) for field in entry if field not in _FIELDS)
    if unknown:
        raise ValueError(
            f"{where}: unknown field {unknown[0]!r}; known: {', '.join(sorted(_FIELDS))}"
        )
    if not any(entry.get(field) for field in _MATCHERS):
        raise ValueError(f"{where}: matches nothing; give one of {', '.join(sorted(_MATCHERS))}")
    names = {field: _names(where, field, entry.get(field, [])) for field in _NAME_FIELDS}
    patterns = {field: _patterns(where, field, entry.get(field, [])) for field in _PATTERN_FIELDS}
    codes, nonzero = _exit_codes(where, entry.get("exit_code", []))
    traceback = _detail(where, entry, bool(patterns["tail"]))
    return Rule(
        failure_class=name,
        container_reasons=names["container_reason"],
        exit_codes=codes,
        any_nonzero=nonzero,
        pod_reasons=names["pod_reason"],
        pod_messages=patterns["pod_message"],
        disruptions=names["disruption"],
        event_reasons=names["event_reason"],
        event_messages=patterns["event_message"],
        kueue_reasons=names["kueue_reason"],
        tail=patterns["tail"],
        traceback=traceback,
        wrappers=_names(where, "wrappers", entry.get("wrappers", [])),
    )


def _detail(where: str, entry: Mapping[object, object], has_tail: bool) -> bool:
    """Whether the rule's detail is a traceback's exception; checked with its wrappers."""
    detail = entry.get("detail", MATCHED)
    if detail not in (MATCHED, TRACEBACK):
        raise ValueError(f"{where}: 'detail' must be {MATCHED!r} or {TRACEBACK!r}, not {detail!r}")
    if detail == TRACEBACK and not has_tail:
        raise ValueError(f"{where}: 'detail: {TRACEBACK}' reads the tail; give 'tail' patterns")
    if "wrappers" in entry and detail != TRACEBACK:
        raise ValueError(f"{where}: 'wrappers' is read only with 'detail: {TRACEBACK}'")
    return detail == TRACEBACK


def _names(where: str, field: str, value: object) -> frozenset[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
        raise ValueError(f"{where}: '{field}' must be a list of names, as [Evicted]")
    return frozenset(value)


def _patterns(where: str, field: str, value: object) -> tuple[re.Pattern[str], ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
        raise ValueError(f"{where}: '{field}' must be a list of regular expressions")
    return tuple(_pattern(where, field, item) for item in value)


def _pattern(where: str, field: str, text: str) -> re.Pattern[str]:
    shown = f"{where}: '{field}' pattern {text[:80]!r}"
    if len(text) > PATTERN_LENGTH:
        raise ValueError(f"{shown} is longer than {PATTERN_LENGTH} characters")
    if _NESTED.search(text):
        raise ValueError(f"{shown} repeats a group that holds a repetition; write it flatter")
    try:
        pattern = re.compile(text)
    except re.error as error:
        raise ValueError(f"{shown} is not a regular expression: {error}") from None
    if pattern.search(""):
        raise ValueError(f"{shown} matches an empty line, and so every line")
    return pattern


def _exit_codes(where: str, value: object) -> tuple[frozenset[int], bool]:
    if value == NONZERO:
        return frozenset(), True
    if not isinstance(value, list) or not all(
        isinstance(code, int) and not isinstance(code, bool) for code in value
    ):
        raise ValueError(f"{where}: 'exit_code' must be {NONZERO!r} or a list of integers")
    return frozenset(value), False


def _kind(value: object) -> str:
    return "nothing" if value is None else type(value).__name__
