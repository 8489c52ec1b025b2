"""The failure taxonomy's rules read (decision 42): the table shipped in the package,
``jobarchive/core/taxonomy.yaml``, and a site's file named in the configuration.

A site's rules go first: the shipped table ends with ``Error``, which every container
with a non-zero exit code matches, so a rule after it would never be reached, and a
site's rule is there to say more than the shipped ones (its own launcher's message, a
class of its own). A shipped rule cannot be removed, only preceded. Every problem is a
ValueError naming the file, and the rule and field where there is one.
"""

import importlib.resources
import pathlib

import yaml

from jobarchive.core.ruletable import Rule, rules_from

SHIPPED = "taxonomy.yaml"


def load_rules(extra: pathlib.Path | None = None) -> tuple[Rule, ...]:
    """The shipped rules, after the rules of ``extra`` when a file is named."""
    source = importlib.resources.files("jobarchive.core").joinpath(SHIPPED)
    shipped = _parsed(source.read_text(encoding="utf-8"), f"the shipped {SHIPPED}")
    if extra is None:
        return shipped
    try:
        text = extra.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ValueError(f"{extra}: cannot be read: {error}") from None
    return _parsed(text, str(extra)) + shipped


def _parsed(text: str, name: str) -> tuple[Rule, ...]:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise ValueError(f"{name}: not YAML: {error}") from None
    try:
        return rules_from(data)
    except ValueError as error:
        raise ValueError(f"{name}: {error}") from None
