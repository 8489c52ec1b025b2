"""Tolerant readers of untrusted Kubernetes structures (plain JSON as the API serves it),
for every part: a field of the wrong type reads as absent, and nothing here raises."""

from collections.abc import Mapping
from typing import Any


def mapping(value: object) -> Mapping[str, Any]:
    """The value if it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def sequence(value: object) -> list[Any]:
    """The value if it is a JSON array, else an empty one."""
    return value if isinstance(value, list) else []


def text(value: object) -> str | None:
    """The value if it is a string, made safe for utf8mb4 (lone surrogates replaced)."""
    if not isinstance(value, str):
        return None
    # CPython knows whether a string is ASCII without reading it: most strings are.
    if value.isascii():
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return value.encode("utf-8", "replace").decode("utf-8")
    return value


def integer(value: object) -> int | None:
    """The value if it is a JSON integer (booleans are not)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def controller_of(owner_references: object) -> Mapping[str, Any] | None:
    """The ownerReference marked as controller, if any."""
    for ref in sequence(owner_references):
        if isinstance(ref, dict) and ref.get("controller") is True:
            return ref
    return None
