"""Promises of the repository itself: it explains itself, its licence is the one it
declares, and its package stays readable (small classes, every part documented)."""

import ast
import pathlib
import subprocess
import tomllib

REPO = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = REPO / "operator" / "jobarchive"
LONGEST_CLASS = 150
# Where a class may be longer: its docstring says why, in these words.
LONG_CLASS_REASON = "Longer than"


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


def test_the_architecture_document_names_every_module_of_the_package() -> None:
    document = (REPO / "ARCHITECTURE.md").read_text()
    modules = [
        path
        for path in PACKAGE.rglob("*.py")
        if path.name != "__init__.py" and "convert" not in path.relative_to(PACKAGE).parts
    ]
    missing = [str(path.relative_to(PACKAGE)) for path in modules if path.name not in document]
    assert missing == []


def test_no_class_is_longer_than_a_sitting_without_saying_why() -> None:
    long_classes = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ClassDef) or node.end_lineno is None:
                continue
            length = node.end_lineno - node.lineno + 1
            if length > LONGEST_CLASS and LONG_CLASS_REASON not in (ast.get_docstring(node) or ""):
                long_classes.append(f"{path.relative_to(PACKAGE)}:{node.name} ({length} lines)")
    assert long_classes == []
