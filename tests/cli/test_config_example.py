"""The example `tether config init` writes covers every table the config reference documents,
and every example in it, uncommented, is a valid file."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.support.harness import REPO

pytestmark = pytest.mark.slow

REFERENCE = REPO / "docs" / "configuration.md"
# An example line is commented out with "#" and no space: "#[agent]", "#max_rounds = 32".
_EXAMPLE_LINE = re.compile(r'#(?=\[|[A-Za-z"])')


def run(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "PYTHONPATH": str(REPO), **env}
    return subprocess.run(
        [sys.executable, "-m", "tether", *args],
        capture_output=True,
        text=True,
        env=full,
        cwd=REPO,
        timeout=60,
    )


def documented_tables() -> set[str]:
    """The top-level tables the reference's TOML examples show."""
    blocks = re.findall(r"```toml\n(.*?)```", REFERENCE.read_text(), re.S)
    return {m[1] for b in blocks for m in re.finditer(r"^\[([A-Za-z_]+)", b, re.M)}


def uncommented(text: str) -> str:
    return "\n".join(_EXAMPLE_LINE.sub("", line, count=1) for line in text.splitlines())


def test_the_written_example_covers_every_documented_table(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    done = run("config", "init", env={"TETHER_CONFIG": str(path)})
    assert done.returncode == 0, done.stderr
    example = tomllib.loads(uncommented(path.read_text()))
    documented = documented_tables()
    assert {"agent", "providers", "defaults", "workspace", "web", "trash"} <= documented
    assert set(example) == documented

    # Every example in it is valid: uncommented, the file has no bad key.
    live = tmp_path / "live.toml"
    live.write_text(uncommented(path.read_text()))
    show = run("config", "show", "--json", env={"TETHER_CONFIG": str(live)})
    assert show.returncode == 0, show.stderr
    assert json.loads(show.stdout)["warnings"] == []
    assert show.stderr == ""
