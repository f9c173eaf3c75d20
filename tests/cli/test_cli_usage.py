"""The command line's own errors: a bad flag shows the usage of the command it was given to,
a command group alone shows its help, `--cwd` is checked in plain words, `--mode` takes every
mode the engine has, and `--max-retry-seconds` caps how long a request is retried."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.harness import REPO, script
from tests.support.providers.mock_llm_server import MockLLMServer, error_reply
from tether.engine.sessions.modes import MODES

pytestmark = pytest.mark.slow


def _run(
    home: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "TETHER_HOME": str(home), "PYTHONPATH": str(REPO), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "tether", *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=full,
        timeout=90,
    )


def test_an_unknown_flag_shows_the_commands_own_usage(home: Path) -> None:
    for args, usage in (
        (["ask", "--foo", "hi"], "usage: tether ask "),
        (["sessions", "list", "--foo"], "usage: tether sessions list "),
        (["doctor", "--foo"], "usage: tether doctor "),
    ):
        done = _run(home, *args)
        assert done.returncode == 2
        assert done.stderr.startswith(usage), done.stderr
        assert done.stderr.endswith(": error: unrecognized arguments: --foo\n"), done.stderr


def test_a_command_group_alone_shows_its_help(home: Path) -> None:
    for group, subcommands in (
        ("sessions", "{list,show,export,delete}"),
        ("config", "{path,init,edit}"),
    ):
        done = _run(home, group)
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith(f"usage: tether {group} [-h] {subcommands} ...\n")
        assert "_command" not in done.stdout + done.stderr


def test_cwd_errors_are_plain_words(home: Path, tmp_path: Path) -> None:
    missing = tmp_path / "missing"
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    for where, why in ((missing, "no such directory"), (a_file, "not a directory")):
        done = _run(home, "-p", "hi", "--cwd", str(where))
        assert done.returncode == 2
        assert done.stderr == f"tether: --cwd {where}: {why}\n"
        assert done.stdout == ""


def test_every_mode_is_accepted_and_takes_effect(home: Path, project: Path, tmp_path: Path) -> None:
    write = {"id": "w1", "name": "write_file", "arguments": {"path": "new.md", "content": "n\n"}}
    turn = script(tmp_path / "w.json", [[{"tool_call": write}], [{"text": "done"}]])
    seen: dict[str, dict[str, object]] = {}
    for mode in MODES:
        (project / "new.md").unlink(missing_ok=True)
        done = _run(home, "-p", "write", "--mode", mode, "--no", "--output-format", "stream-json",
                    "--script", str(turn), "--cwd", str(project))  # fmt: skip
        events = [json.loads(line) for line in done.stdout.splitlines()]
        assert events[0]["mode"] == mode, done.stderr
        asked = any(e["type"] == "permission_request" for e in events)
        seen[mode] = {"asked": asked, "written": (project / "new.md").exists()}
    assert seen["ask"] == {"asked": True, "written": False}  # asked, and --no refused
    assert seen["read-only"] == {"asked": False, "written": False}  # refused without asking
    assert seen["allow-all"] == {"asked": False, "written": True}
    assert seen["code"] == {"asked": False, "written": True}  # a new file: no question
    refused = _run(home, "-p", "write", "--mode", "nope")
    assert refused.returncode == 2 and "usage: tether " in refused.stderr


def test_max_retry_seconds_caps_the_retries(home: Path, project: Path, tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    with MockLLMServer() as server:
        config.write_text(
            '[providers.loop]\nkind = "openai"\n'
            f'base_url = "{server.url}/v1"\nbuiltin_models = false\n'
            '[models."loop:tiny"]\ncontext_window = 8000\nmax_output_tokens = 1000\n'
            '[defaults]\nmodel = "loop:tiny"\n'
            "[agent]\nretry_delays = [1.0]\nretry_step = 1.0\n"
        )
        down = [error_reply(503, "down for maintenance") for _ in range(6)]
        server.script("/v1/chat/completions", *down)
        started = time.monotonic()
        # Waits of 1, then 2 s: the second would end past 2 s of trying, so there is none.
        done = _run(home, "-p", "hi", "--max-retry-seconds", "2", "--output-format", "json",
                    "--cwd", str(project), env={"TETHER_CONFIG": str(config)})  # fmt: skip
        took = time.monotonic() - started
        posts = len(server.posts)
    result = json.loads(done.stdout)
    assert done.returncode == 1, done.stderr
    assert posts == 2 and took < 30
    assert "HTTP 503: down for maintenance" in result["error"]
