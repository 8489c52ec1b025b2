"""The version, said once and followed everywhere: the newest release in CHANGELOG.md is
setuptools-scm's fallback, the image's default VERSION and every manifest's image tag;
the image's lock file pins each dependency within pyproject's range; the command line
and the metrics say the installed version."""

import importlib.metadata
import re
import subprocess
import tomllib

from packaging.requirements import Requirement
from prometheus_client import generate_latest

from jobarchive import __version__
from jobarchive.infra import metrics
from testbed.operator import REPO
from tests.support.commands import JOBARCHIVE


def newest_release() -> str:
    found = re.search(
        r"^## (\d+\.\d+\.\d+) - \d{4}-\d\d-\d\d$", (REPO / "CHANGELOG.md").read_text(), re.M
    )
    assert found, "CHANGELOG.md names no release"
    return found.group(1)


def test_the_newest_release_is_the_fallback_the_images_default_and_every_tag() -> None:
    release = newest_release()
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert project["tool"]["setuptools_scm"]["fallback_version"] == release
    assert f"ARG VERSION={release}\n" in (REPO / "Dockerfile").read_text()
    manifests = REPO / "manifests"
    tags = {
        *re.findall(
            r"image: jobarchive:(\S+)", (manifests / "overlays/base/05-deployment.yaml").read_text()
        ),
        *re.findall(
            r"image: jobarchive:(\S+)", (manifests / "reader/03-deployment.yaml").read_text()
        ),
        *re.findall(r"newTag: (\S+)", (manifests / "overlays/base/kustomization.yaml").read_text()),
    }
    assert tags == {release}


def test_the_lock_file_pins_every_dependency_within_its_range() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    pinned = {}
    for line in (REPO / "requirements.lock").read_text().splitlines():
        if line and not line.startswith("#"):
            name, _, version = line.partition("==")
            pinned[name.lower().replace("_", "-")] = version
    for dependency in project["project"]["dependencies"]:
        wanted = Requirement(dependency)
        name = wanted.name.lower().replace("_", "-")
        assert name in pinned, f"{name} is not in requirements.lock"
        assert wanted.specifier.contains(pinned[name]), f"{name}=={pinned[name]} vs {wanted}"


def test_the_command_and_the_metric_say_the_installed_version() -> None:
    installed = importlib.metadata.version("jobarchive")
    assert __version__ == installed
    said = subprocess.run(
        [str(JOBARCHIVE), "--version"], capture_output=True, text=True, timeout=60
    )
    assert (said.stdout, said.returncode) == (f"jobarchive {installed}\n", 0)
    assert metrics.BUILD is not None
    exposed = generate_latest().decode()
    assert f'version="{installed}"' in next(
        line for line in exposed.splitlines() if line.startswith("jobarchive_build_info{")
    )
