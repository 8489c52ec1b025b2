"""Promises of the repository itself: it explains itself, its licence is the one it
declares, and its package stays readable (small modules, functions and classes, every
module in the layer map)."""

import ast
import pathlib
import re
import subprocess
import tomllib
from collections.abc import Iterator

REPO = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = REPO / "operator" / "jobarchive"
LONGEST_MODULE = 400
LONGEST_FUNCTION = 60
LONGEST_CLASS = 200
# A folder the layer map names as a whole, for modules of one kind each.
NAMED_AS_A_FOLDER = ("recording/convert/",)
# Where the house's lengths of modules and functions hold: the package, the test bed,
# the demo and the soak (tests/ and bench/ are not held to them).
CODE = (PACKAGE, REPO / "testbed", REPO / "demo", REPO / "soak", REPO / "bench")


def tracked_files() -> list[pathlib.Path]:
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True
    ).stdout.split(b"\0")
    return [REPO / name.decode() for name in listed if name]


def test_no_file_cites_a_document_that_is_not_in_the_repository() -> None:
    outside = ("DESIGN" + ".md", "PITFALLS" + ".md")
    citing = [
        str(path.relative_to(REPO))
        for path in tracked_files()
        if path.is_file() and any(name.encode() in path.read_bytes() for name in outside)
    ]
    assert citing == []


def test_the_licence_file_is_the_licence_pyproject_declares() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["license"] == "Apache-2.0"
    assert project["license-files"] == ["LICENSE"]
    text = (REPO / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text


def layer_map() -> list[str]:
    """The paths the tree of ARCHITECTURE.md's "Layers" names: a folder ends with ``/``
    and holds what is indented under it; a line may name several (``a.py, b.py``); a
    line that names nothing continues the description of the line above."""
    section = (REPO / "ARCHITECTURE.md").read_text().split("\n## Layers\n", 1)[1]
    tree = section.split("```\n", 2)[1]
    named: list[str] = []
    folders: list[tuple[int, str]] = []
    for line in tree.splitlines():
        found = re.match(r"( *)(\S+(?:, \S+)*)(?:  |$)", line)
        names = found.group(2).split(", ") if found else []
        if not found or not all(name.endswith((".py", "/")) for name in names):
            continue
        depth = len(found.group(1))
        while folders and folders[-1][0] >= depth:
            folders.pop()
        parent = folders[-1][1] if folders else ""
        named += [parent + name for name in names]
        if len(names) == 1 and names[0].endswith("/"):
            folders.append((depth, parent + names[0]))
    return named


def package_map() -> set[str]:
    """What the layer map names inside the package, relative to it."""
    inside = "operator/jobarchive/"
    return {path.removeprefix(inside) for path in layer_map() if path.startswith(inside)}


def test_the_architecture_document_names_every_module_of_the_package_by_its_path() -> None:
    named = package_map()
    modules = [
        str(path.relative_to(PACKAGE))
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name != "__init__.py"
    ]
    missing = [
        module
        for module in modules
        if module not in named and not module.startswith(NAMED_AS_A_FOLDER)
    ]
    assert not missing, "\n".join(missing)
    assert set(NAMED_AS_A_FOLDER) <= named


def test_the_architecture_document_names_no_module_the_package_does_not_have() -> None:
    gone = [path for path in sorted(package_map()) if not (PACKAGE / path).exists()]
    assert not gone, "\n".join(gone)


Definition = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


def definitions(node: ast.AST, prefix: str = "") -> Iterator[tuple[str, Definition]]:
    """Every function and class under ``node``, nested ones too, by qualified name."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, Definition):
            yield prefix + child.name, child
            yield from definitions(child, f"{prefix}{child.name}.")
        else:
            yield from definitions(child, prefix)


def lines(node: Definition) -> int:
    """From ``def`` or ``class`` to the end of the body: decorators left out, the
    docstring counted."""
    assert node.end_lineno is not None
    return node.end_lineno - node.lineno + 1


def modules(folders: tuple[pathlib.Path, ...]) -> list[pathlib.Path]:
    """The Python files under these folders, in order."""
    return [path for folder in folders for path in sorted(folder.rglob("*.py"))]


def longer_than(
    bound: int, kinds: tuple[type[Definition], ...], folders: tuple[pathlib.Path, ...]
) -> list[str]:
    """Each definition of these kinds under ``folders`` longer than ``bound``, with its
    size."""
    return [
        f"{path.relative_to(REPO)}:{name} ({lines(node)} lines)"
        for path in modules(folders)
        for name, node in definitions(ast.parse(path.read_text()))
        if isinstance(node, kinds) and lines(node) > bound
    ]


def test_no_module_of_the_code_is_longer_than_four_hundred_lines() -> None:
    long_modules = [
        f"{path.relative_to(REPO)} ({length} lines)"
        for path in modules(CODE)
        if (length := len(path.read_text().splitlines())) > LONGEST_MODULE
    ]
    assert not long_modules, "\n".join(long_modules)


def test_no_function_of_the_code_is_longer_than_sixty_lines() -> None:
    functions = (ast.FunctionDef, ast.AsyncFunctionDef)
    long_functions = longer_than(LONGEST_FUNCTION, functions, CODE)
    assert not long_functions, "\n".join(long_functions)


def test_no_class_of_the_package_is_longer_than_two_hundred_lines_whatever_it_says() -> None:
    long_classes = longer_than(LONGEST_CLASS, (ast.ClassDef,), (PACKAGE,))
    assert not long_classes, "\n".join(long_classes)


# A file name used twice where the package names the job and the file its object
# (decision 41): the converters' and the queries' per object, each API's routes and
# OpenAPI document.
SHARED_NAMES = {"__init__", "jobs", "pods", "events", "routes", "openapi"}


def test_no_module_name_is_used_twice_for_different_jobs() -> None:
    seen: dict[str, list[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        seen.setdefault(path.stem, []).append(str(path.relative_to(PACKAGE)))
    assert {name: paths for name, paths in seen.items() if len(paths) > 1} == {
        name: paths for name, paths in seen.items() if len(paths) > 1 and name in SHARED_NAMES
    }


def test_no_two_module_names_differ_by_a_suffix() -> None:
    # Forms of one word (``store``, ``storing``; ``schema``, ``schemas``); a qualified
    # name (``database_url`` beside ``database``) names another thing.
    stems = {path.stem for path in PACKAGE.rglob("*.py")} - SHARED_NAMES - {"main"}
    twins = {
        (short, long)
        for short in stems
        for long in stems
        if short != long and long.startswith(short) and long[len(short)] != "_"
    }
    assert twins == set()
