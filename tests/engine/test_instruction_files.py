"""Instruction files as Codex and Claude Code read them: the user's own, then AGENTS.md and
CLAUDE.md in each folder from the repository's root down to the working folder (nearest
last), then `[agent] instructions`, resolved from the project's root. Judged by the system
prompt the model server receives, and by what `/status` answers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.harness import REPO
from tests.support.providers.mock_llm_server import MockLLMServer, Reply
from tests.support.providers.wire import chat_text

pytestmark = pytest.mark.slow


def _config(path: Path, url: str, extra: str = "") -> Path:
    path.write_text(
        f'[providers.p]\nkind = "openai"\nbase_url = "{url}"\napi_key = "sk-test-0123456789abcdef"\n'
        'builtin_models = false\n\n[models."p:m"]\ncontext_window = 64000\n\n'
        f'[defaults]\nmodel = "p:m"\n\n[agent]\n{extra}'
    )
    return path


def _ask(home: Path, config: Path, cwd: Path, prompt: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "TETHER_HOME": str(home)}
    env["TETHER_CONFIG"] = str(config)
    return subprocess.run(
        [sys.executable, "-m", "tether", "ask", "--cwd", str(cwd), prompt],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,  # not the project: relative paths must not depend on where tether started
        timeout=60,
    )


def _repository(tmp_path: Path) -> Path:
    """A repository with instruction files at its root, in a folder on the way, and in the
    working folder; the working folder."""
    top = tmp_path / "repo"
    work = top / "pkg" / "lib"
    work.mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=top, check=True)
    (top / "AGENTS.md").write_text("ROOT-AGENTS\n")
    (top / "CLAUDE.md").write_text("ROOT-CLAUDE\n")
    (top / "pkg" / "AGENTS.md").write_text("MIDDLE-AGENTS\n")
    (work / "AGENTS.md").write_text("NEAREST-AGENTS\n")
    (work / "CLAUDE.md").symlink_to("AGENTS.md")  # one file under two names: read once
    (top / "docs").mkdir()
    (top / "docs" / "STYLE.md").write_text("CONFIGURED-STYLE\n")
    return work


def test_every_instruction_file_from_the_user_and_the_root_down_in_order(
    home: Path, tmp_path: Path
) -> None:
    work = _repository(tmp_path)
    settings = tmp_path / "settings"
    settings.mkdir()
    (settings / "AGENTS.md").write_text("USER-AGENTS\n")  # beside the config file
    with MockLLMServer() as server:
        server.script("/chat/completions", Reply(chunks=chat_text(["ok"])))
        config = _config(settings / "config.toml", server.url, 'instructions = ["docs/STYLE.md"]\n')
        done = _ask(home, config, work, "hello")
        assert done.returncode == 0, done.stderr
        system = server.posts[0].json()["messages"][0]["content"]
    order = [
        "USER-AGENTS",
        "ROOT-AGENTS",
        "ROOT-CLAUDE",
        "MIDDLE-AGENTS",
        "NEAREST-AGENTS",
        "CONFIGURED-STYLE",
    ]
    at = [system.find(marker) for marker in order]
    assert -1 not in at and at == sorted(at), system
    assert system.count("NEAREST-AGENTS") == 1
    assert "## pkg/lib/AGENTS.md\nNEAREST-AGENTS" in system
    assert "## docs/STYLE.md\nCONFIGURED-STYLE" in system


def test_status_lists_the_instruction_files_in_effect(home: Path, tmp_path: Path) -> None:
    work = _repository(tmp_path)
    with MockLLMServer() as server:
        config = _config(tmp_path / "config.toml", server.url, 'instructions = ["docs/STYLE.md"]\n')
        done = _ask(home, config, work, "/status")
        assert done.returncode == 0, done.stderr
        assert server.posts == []  # a command, not a model request
    [line] = [x for x in done.stdout.splitlines() if "Instruction files:" in x]
    assert line.endswith(
        "`AGENTS.md`, `CLAUDE.md`, `pkg/AGENTS.md`, `pkg/lib/AGENTS.md`, `docs/STYLE.md`"
    ), line
