"""The failure taxonomy's rules as data (decision 42): a rules file refused with a
message naming the rule and the field, the shipped table read from the package, and a
site's file whose rules go first."""

import pathlib
import re
import tomllib

import pytest

from jobarchive.core.ruletable import rules_from
from jobarchive.core.taxonomy import ContainerState, PodEvidence, classify
from jobarchive.infra.rules import SHIPPED, load_rules

REPO = pathlib.Path(__file__).resolve().parents[2]

# A rules file's content as YAML loads it, and what the refusal says.
REFUSED = [
    (None, "a rules file is a mapping with one key, 'rules'"),
    ({"rules": [], "version": 2}, "a rules file is a mapping with one key, 'rules'"),
    ({"rules": {"class": "Error"}}, "'rules' must be a list of rules"),
    ({"rules": ["OOMKilled"]}, "rule 1: must be a mapping of fields, not str"),
    ({"rules": [{"tail": ["x"]}]}, "rule 1: 'class' must be a letter"),
    ({"rules": [{"class": "GPU OOM", "tail": ["x"]}]}, "rule 1 (GPU OOM): 'class' must be"),
    (
        {"rules": [{"class": "A", "tail": ["x"]}, {"class": "B", "tails": ["x"]}]},
        "rule 2 (B): unknown field 'tails'; known: class, container_reason,",
    ),
    ({"rules": [{"class": "B", "detail": "matched"}]}, "rule 1 (B): matches nothing; give one of"),
    ({"rules": [{"class": "B", "tail": [], "exit_code": []}]}, "rule 1 (B): matches nothing"),
    (
        {"rules": [{"class": "Evicted", "pod_reason": "Evicted"}]},
        "rule 1 (Evicted): 'pod_reason' must be a list of names, as [Evicted]",
    ),
    (
        {"rules": [{"class": "Evicted", "event_reason": [""]}]},
        "rule 1 (Evicted): 'event_reason' must be a list of names",
    ),
    (
        {"rules": [{"class": "NCCLError", "tail": "NCCL error"}]},
        "rule 1 (NCCLError): 'tail' must be a list of regular expressions",
    ),
    (
        {"rules": [{"class": "NCCLError", "tail": ["NCCL (error"]}]},
        "rule 1 (NCCLError): 'tail' pattern 'NCCL (error' is not a regular expression: "
        "missing ), unterminated subpattern",
    ),
    (
        {"rules": [{"class": "Slow", "tail": ["(\\w+\\s?)*$"]}]},
        "rule 1 (Slow): 'tail' pattern '(\\\\w+\\\\s?)*$' repeats a group that holds a repetition",
    ),
    (
        {"rules": [{"class": "Slow", "event_message": ["(a+)+b"]}]},
        "rule 1 (Slow): 'event_message' pattern '(a+)+b' repeats a group",
    ),
    (
        {"rules": [{"class": "All", "pod_message": ["x*"]}]},
        "rule 1 (All): 'pod_message' pattern 'x*' matches an empty line, and so every line",
    ),
    (
        {"rules": [{"class": "Long", "tail": ["x" * 501]}]},
        "is longer than 500 characters",
    ),
    (
        {"rules": [{"class": "Error", "exit_code": "any"}]},
        "rule 1 (Error): 'exit_code' must be 'nonzero' or a list of integers",
    ),
    (
        {"rules": [{"class": "Error", "exit_code": [True]}]},
        "rule 1 (Error): 'exit_code' must be 'nonzero' or a list of integers",
    ),
    (
        {"rules": [{"class": "UserError", "tail": ["Traceback"], "detail": "exception"}]},
        "rule 1 (UserError): 'detail' must be 'matched' or 'traceback', not 'exception'",
    ),
    (
        {"rules": [{"class": "UserError", "exit_code": [1], "detail": "traceback"}]},
        "rule 1 (UserError): 'detail: traceback' reads the tail; give 'tail' patterns",
    ),
    (
        {"rules": [{"class": "UserError", "tail": ["Traceback"], "wrappers": ["X"]}]},
        "rule 1 (UserError): 'wrappers' is read only with 'detail: traceback'",
    ),
]


@pytest.mark.parametrize(("data", "message"), REFUSED)
def test_a_bad_rules_file_is_refused_naming_the_rule_and_the_field(
    data: object, message: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        rules_from(data)


def test_a_rules_field_holds_what_its_yaml_says() -> None:
    (rule,) = rules_from(
        {
            "rules": [
                {
                    "class": "UserError",
                    "exit_code": [1, 2],
                    "kueue_reason": ["*"],
                    "tail": ["Traceback"],
                    "detail": "traceback",
                    "wrappers": ["ChildFailedError"],
                }
            ]
        }
    )
    assert (rule.failure_class, rule.exit_codes, rule.any_nonzero, rule.kueue_reasons) == (
        "UserError",
        frozenset({1, 2}),
        False,
        frozenset({"*"}),
    )
    assert (rule.traceback, rule.wrappers, [p.pattern for p in rule.tail]) == (
        True,
        frozenset({"ChildFailedError"}),
        ["Traceback"],
    )


def test_the_shipped_table_is_package_data() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert SHIPPED in project["tool"]["setuptools"]["package-data"]["jobarchive.core"]
    assert (REPO / "operator" / "jobarchive" / "core" / SHIPPED).is_file()
    assert any(dependency.startswith("pyyaml") for dependency in project["project"]["dependencies"])


def test_a_sites_rules_go_before_the_shipped_ones(tmp_path: pathlib.Path) -> None:
    site = tmp_path / "rules.yaml"
    site.write_text("rules:\n  - class: StorageError\n    tail: ['Stale file handle']\n")
    rules = load_rules(site)
    assert [rule.failure_class for rule in rules[:2]] == ["StorageError", "OOMKilled"]
    assert len(rules) == len(load_rules()) + 1
    tail = "Traceback (most recent call last):\nOSError: [Errno 116] Stale file handle\n"
    evidence = PodEvidence("p", (ContainerState("pytorch", "Error", exit_code=1, tail=tail),))
    assert classify(evidence, rules).failure_class == "StorageError"
    assert classify(evidence, load_rules()).failure_class == "UserError"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("rules:\n  - class: X\n    tail: [unclosed\n", "{path}: not YAML: "),
        ("rules:\n  - class: X\n    tails: ['x']\n", "{path}: rule 1 (X): unknown field 'tails'"),
        ("", "{path}: a rules file is a mapping with one key, 'rules'"),
    ],
)
def test_a_bad_site_file_is_refused_naming_the_file(
    tmp_path: pathlib.Path, text: str, message: str
) -> None:
    site = tmp_path / "site-rules.yaml"
    site.write_text(text)
    with pytest.raises(ValueError, match="^" + re.escape(message.format(path=site))):
        load_rules(site)


def test_a_site_file_that_cannot_be_read_is_refused_naming_it(tmp_path: pathlib.Path) -> None:
    missing = tmp_path / "missing.yaml"
    with pytest.raises(ValueError, match=re.escape(f"{missing}: cannot be read: ")):
        load_rules(missing)
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(b"\xff\xfe rules")
    with pytest.raises(ValueError, match=re.escape(f"{binary}: cannot be read: ")):
        load_rules(binary)
