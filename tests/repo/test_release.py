"""Releasing: the version lives in one place (`tether/__init__.py`), and everything that names
it agrees (the built package's metadata, `tether --version`, the ACP registry entry Zed installs
with uvx, the changelog); the release workflow builds, checks and publishes on a version tag
through PyPI's trusted publishing; and the wheel built from this tree installs into a fresh venv
whose `tether` prints the version and runs a scripted turn.

The fresh venv here takes the dependencies from the development venv (a `.pth` line: no network
in the suite); `.ci/release-check`, which CI and the release workflow run, installs the wheel
into a clean venv with its dependencies from PyPI."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest

import tether
from tests.support.harness import REPO, script

VERSION = tether.__version__
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
WORKFLOW = REPO / ".github" / "workflows" / "release.yml"
CHECK = REPO / ".ci" / "release-check"


@pytest.mark.slow
def test_the_version_is_written_once_and_everything_agrees() -> None:
    project = PYPROJECT["project"]
    assert "version" not in project and project["dynamic"] == ["version"]
    assert PYPROJECT["tool"]["hatch"]["version"]["path"] == "tether/__init__.py"
    assert re.fullmatch(r"\d+\.\d+\.\d+", VERSION)
    done = subprocess.run(
        [sys.executable, "-m", "tether", "--version"], capture_output=True, text=True, check=True
    )
    assert done.stdout == f"tether {VERSION}\n"
    entry = json.loads((REPO / "editors" / "zed" / "registry" / "agent.json").read_text())
    assert entry["version"] == VERSION
    assert entry["distribution"]["uvx"]["package"] == f"{project['name']}=={VERSION}"
    changelog = (REPO / "CHANGELOG.md").read_text()
    assert re.search(
        rf"^## {re.escape(VERSION)} \((unreleased|\d{{4}}-\d\d-\d\d)\)$", changelog, re.M
    )


def test_the_release_workflow_checks_then_publishes_a_version_tag_by_trusted_publishing() -> None:
    text = WORKFLOW.read_text()
    assert re.search(r"^on:\n  push:\n    tags: \[\"v\*\"\]", text, re.M), text
    # the build job runs the same check as CI, with the tag to compare to the version
    assert re.search(r"RELEASE_TAG: \$\{\{.*github\.ref_name.*\}\}", text)
    assert "run: .ci/release-check dist" in text
    publish = text[text.index("\n  publish:") :]
    assert "id-token: write" in publish and "environment:" in publish
    assert "uses: pypa/gh-action-pypi-publish@release/v1" in publish
    assert "password" not in publish and "secrets." not in text  # no stored token
    assert "needs: build" in publish
    assert (
        os.access(CHECK, os.X_OK) and "bash .ci/release-check" in (REPO / ".ci" / "run").read_text()
    )


@pytest.mark.slow
def test_the_built_wheel_runs_a_turn_from_a_fresh_venv(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    # hatchling (the build backend) builds both from the tree, as `python -m build` would
    # through it; .ci/release-check runs `python -m build` itself, isolated
    subprocess.run(
        [sys.executable, "-m", "hatchling", "build", "-d", str(dist)],
        check=True,
        capture_output=True,
        timeout=120,
        cwd=REPO,
    )
    name = f"tether_acp-{VERSION}"
    wheel = dist / f"{name}-py3-none-any.whl"
    assert sorted(p.name for p in dist.iterdir()) == [wheel.name, f"{name}.tar.gz"]
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
    assert "tether/engine/config/example.toml" in names  # the data `tether config init` writes
    assert not [n for n in names if n.startswith(("tests/", "editors/"))]

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
         "--no-index", str(wheel)],
        check=True, timeout=120,
    )  # fmt: skip
    # its dependencies: the development venv's (the .pth adds the directory, not its .pth files,
    # so the editable install of this tree stays out)
    site = Path(
        subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()
    )  # fmt: skip
    (site / "dev-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TETHER_CONFIG")}
    env.update(TETHER_HOME=str(tmp_path / "home"), TETHER_WARM="0", TETHER_NONINTERACTIVE="1")
    where = subprocess.run(
        [python, "-c", "import tether; print(tether.__file__)"],
        capture_output=True, text=True, check=True, env=env, cwd=tmp_path,
    ).stdout  # fmt: skip
    assert where.startswith(str(site)), where  # the wheel's tether, not this tree's

    tether_bin = venv / "bin" / "tether"
    done = subprocess.run([tether_bin, "--version"], capture_output=True, text=True, env=env)
    assert done.stdout == f"tether {VERSION}\n", done.stderr

    project = tmp_path / "project"
    project.mkdir()
    write = {"path": "hello.txt", "content": "written by the wheel\n"}
    turn = script(
        tmp_path / "turn.json",
        [
            [{"tool_call": {"id": "w1", "name": "write_file", "arguments": write}}],
            [{"text": "Wrote hello.txt."}],
        ],
    )
    done = subprocess.run(
        [tether_bin, "ask", "--yes", "--script", str(turn), "--cwd", str(project), "write it"],
        capture_output=True, text=True, env=env, timeout=60, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Wrote hello.txt." in done.stdout and "[stop: end_turn]" in done.stderr
    assert (project / "hello.txt").read_text() == "written by the wheel\n"
