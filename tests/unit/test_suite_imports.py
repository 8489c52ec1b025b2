"""Tests share helpers through ``tests/support`` and fixtures through conftest, never by
importing a test module or conftest: a helper kept there ties every importer to tests
that change for reasons of their own, and to fixtures pytest already provides."""

import ast
import pathlib

TESTS = pathlib.Path(__file__).resolve().parents[1]


def imported_modules(source: str, package: tuple[str, ...]) -> set[str]:
    """Every module that ``source``, a file of ``package``, may import: relative imports
    resolved, and ``from a import b`` counted as both ``a`` and ``a.b``."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else ()
            module = ".".join([*base, *([node.module] if node.module else [])])
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def is_test_module(module: str) -> bool:
    """Whether a module is a test module or a conftest of this suite."""
    parts = module.split(".")
    if parts[0] == "tests":
        return any(part == "conftest" or part.startswith("test_") for part in parts[1:])
    # A bare name: how a test module would import a sibling in rootdir-insert mode.
    return parts[0] == "conftest" or parts[0].startswith("test_")


def test_no_file_under_tests_imports_a_test_module_or_conftest() -> None:
    offenders = []
    for path in sorted(TESTS.rglob("*.py")):
        package = path.relative_to(TESTS.parent).parent.parts
        imported = imported_modules(path.read_text(), package)
        offenders += [
            f"{path.relative_to(TESTS.parent)}: {module}"
            for module in sorted(imported)
            if is_test_module(module)
        ]
    assert offenders == []


def test_the_check_sees_absolute_relative_and_bare_imports_of_tests() -> None:
    source = (
        "import tests.conftest\n"
        "from tests.integration.test_store import job\n"
        "from ..unit import test_rows\n"
        "from . import conftest\n"
        "import test_writer\n"
        "from aiohttp.test_utils import TestClient\n"
        "from tests.support.rows import pod\n"
    )
    flagged = {m for m in imported_modules(source, ("tests", "e2e")) if is_test_module(m)}
    assert flagged == {
        "tests.conftest",
        "tests.integration.test_store",
        "tests.integration.test_store.job",
        "tests.unit.test_rows",
        "tests.e2e.conftest",
        "test_writer",
    }
