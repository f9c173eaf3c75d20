"""Which prompts are slash commands, as `tether ask` shows it: an unknown `/command` answers
"unknown command" with the near names and sends nothing to the model; a prompt that merely
starts with a slash path or word goes to the model; `/help` states every mode."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.harness import REPO
from tests.support.providers.mock_llm_server import MockLLMServer, Reply
from tests.support.providers.wire import chat_text
from tether.engine.sessions.state import MODES

pytestmark = pytest.mark.slow


def _ask(home: Path, tmp_path: Path, url: str, prompt: str) -> subprocess.CompletedProcess[str]:
    config = tmp_path / "config.toml"
    config.write_text(
        f'[providers.p]\nkind = "openai"\nbase_url = "{url}"\napi_key = "sk-test-0123456789abcdef"\n'
        'builtin_models = false\n\n[models."p:m"]\ncontext_window = 64000\n\n'
        '[defaults]\nmodel = "p:m"\n'
    )
    env = {**os.environ, "PYTHONPATH": str(REPO), "TETHER_HOME": str(home)}
    env["TETHER_CONFIG"] = str(config)
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    return subprocess.run(
        [sys.executable, "-m", "tether", "ask", "--cwd", str(project), prompt],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("prompt", "near"),
    [("/stauts", "`/status`"), ("/moed code", "`/mode`"), ("/frobnicate", None)],
)
def test_an_unknown_command_is_answered_not_sent(
    home: Path, tmp_path: Path, prompt: str, near: str | None
) -> None:
    with MockLLMServer() as server:
        done = _ask(home, tmp_path, server.url, prompt)
        assert server.posts == []  # the model never saw it
    assert done.returncode == 0, done.stderr
    name = prompt.split()[0]
    assert f"Unknown command `{name}`." in done.stdout
    if near is None:
        assert "Did you mean" not in done.stdout
    else:
        assert f"Did you mean {near}" in done.stdout


@pytest.mark.parametrize("prompt", ["/usr/bin is odd", "/tmp is nearly full", "/etc/hosts"])
def test_a_prompt_that_starts_with_a_slash_word_goes_to_the_model(
    home: Path, tmp_path: Path, prompt: str
) -> None:
    with MockLLMServer() as server:
        server.script("/chat/completions", Reply(chunks=chat_text(["noted"])))
        done = _ask(home, tmp_path, server.url, prompt)
        [body] = [r.json() for r in server.posts]
    assert done.returncode == 0, done.stderr
    assert "noted" in done.stdout and "Unknown command" not in done.stdout
    assert prompt.strip() in str(body["messages"][-1]["content"])


def test_help_states_every_mode(home: Path, tmp_path: Path) -> None:
    with MockLLMServer() as server:
        done = _ask(home, tmp_path, server.url, "/help")
    assert done.returncode == 0, done.stderr
    modes = done.stdout.split("Modes:")[1].split("Tools:")[0]
    assert [line.split(":")[0] for line in modes.split("\n- ")[1:]] == [
        "ask (now)",
        "code",
        "read-only",
        "allow-all",
    ]
    assert list(MODES) == ["ask", "code", "read-only", "allow-all"]  # as the README lists them
    [mode] = [x for x in done.stdout.splitlines() if x.startswith("- /mode ")]
    assert "ask | code | read-only | allow-all" in mode
