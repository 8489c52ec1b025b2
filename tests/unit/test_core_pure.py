"""``jobarchive.core`` stays pure: its modules import only each other and standard
library modules that do no I/O. import-linter sees no standard library import, so the
``asyncio``, ``socket`` or ``os`` a change might bring in is caught here."""

import ast
import pathlib

import jobarchive.core

# Computation only: none of these opens a file, a socket or an event loop.
ALLOWED = {
    "collections",
    "dataclasses",
    "datetime",
    "decimal",
    "enum",
    "json",
    "math",
    "re",
    "time",
    "typing",
    "unicodedata",
}
CORE = pathlib.Path(jobarchive.core.__file__).parent


def imported(path: pathlib.Path) -> set[str]:
    """The top-level names of every module the file imports."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names


def test_core_imports_only_itself_and_pure_standard_library() -> None:
    found = {
        (path.name, name)
        for path in CORE.glob("*.py")
        for name in imported(path)
        if not name.startswith("jobarchive.core")
        and name.split(".")[0] not in ALLOWED
        and name != "__future__"
    }
    assert found == set()
