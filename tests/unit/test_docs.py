"""The documentation a newcomer reads: a README short enough to read top to bottom,
whose links reach their files, and a site under docs/ that MkDocs builds with no
broken link or anchor (issue 36)."""

import pathlib
import re
import subprocess
import sys

from testbed.operator import REPO

LONGEST_README = 300
# A Markdown link's target: relative ones only (no scheme, no in-page anchor).
RELATIVE_LINK = re.compile(r"\]\((?![a-z]+:|#)([^)#\s]+)(?:#[^)\s]*)?\)")


def test_the_readme_is_read_top_to_bottom_in_at_most_300_lines() -> None:
    lines = (REPO / "README.md").read_text().splitlines()
    assert len(lines) <= LONGEST_README


def test_every_relative_link_of_the_readme_reaches_a_file() -> None:
    targets = RELATIVE_LINK.findall((REPO / "README.md").read_text())
    assert targets and [t for t in targets if not (REPO / t).exists()] == []


def test_the_site_builds_strictly(tmp_path: pathlib.Path) -> None:
    # --strict: mkdocs.yml's validation makes a broken link or anchor a warning, and so
    # a failed build.
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin"},
    )
    assert built.returncode == 0, built.stderr
    assert (tmp_path / "configuration" / "index.html").exists()
