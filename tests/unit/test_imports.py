"""Importing a module reads no setting and builds nothing (ARCHITECTURE.md, decision 27):
every module of the package imports in a fresh process whose every setting is garbage."""

import os
import pathlib
import re
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = REPO / "operator" / "jobarchive"
GARBAGE = "\u2603 not a setting, -1, mysql://@/?#"

# Imports every module of the package, each on its own, and names each one imported.
IMPORT_EVERY_MODULE = """
import importlib, pkgutil, jobarchive
for module in pkgutil.walk_packages(jobarchive.__path__, "jobarchive."):
    importlib.import_module(module.name)
    print(module.name)
"""


def modules_on_disk() -> set[str]:
    """The dotted name of every module file of the package but its own ``__init__``."""
    names = set()
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        names.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names - {"jobarchive"}


def garbage_environment(home: pathlib.Path) -> dict[str, str]:
    """This process's environment with every setting the package reads set to garbage,
    and a kubeconfig that does not exist."""
    source = "".join(path.read_text() for path in (PACKAGE / "config").glob("*.py"))
    variables = set(re.findall(r'"((?:JOBARCHIVE|MYSQL)_[A-Z_]+|REGION)"', source))
    kept = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("JOBARCHIVE_", "MYSQL_"))
    }
    return {
        **kept,
        **dict.fromkeys(variables, GARBAGE),
        "KUBECONFIG": str(home / "missing" / "kubeconfig"),
    }


def test_every_module_imports_in_a_process_whose_every_setting_is_garbage(
    tmp_path: pathlib.Path,
) -> None:
    env = garbage_environment(tmp_path)
    assert len([name for name in env if name.startswith("JOBARCHIVE_")]) > 30

    done = subprocess.run(
        [sys.executable, "-c", IMPORT_EVERY_MODULE],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )

    assert done.returncode == 0, done.stderr[-3000:]
    modules = modules_on_disk()
    assert set(done.stdout.split()) == modules and len(modules) > 60
    # Nothing was written either: no database file, no kubeconfig's directory.
    assert list(tmp_path.iterdir()) == []
