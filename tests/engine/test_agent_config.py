"""`[agent]` through `tether acp` (a real subprocess, the config file read as users write it):
the system prompt replaced or extended, more instruction files, how a round runs its calls, how
long a result may be, and how a new session starts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.harness import configured_turn, spawn_agent
from tests.support.providers.mock_llm_server import MockLLMServer, Reply
from tests.support.providers.wire import chat_text
from tests.support.stored import tool_results

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

PROVIDER = """
[providers.p]
kind = "openai"
base_url = "{url}"
api_key = "sk-test-0123456789abcdef"
builtin_models = false

[models."p:m"]
context_window = 64000

[defaults]
model = "p:m"
"""


async def test_the_system_prompt_and_instruction_files(
    home: Path, project: Path, tmp_path: Path
) -> None:
    (project / "docs").mkdir()
    (project / "docs" / "RULES.md").write_text("Never touch the vendored code.\n")
    (tmp_path / "mine.md").write_text("Prefer tabs.\n")
    agent_table = (
        '[agent]\nsystem_prompt = "You are Bob, a careful reviewer."\n'
        'append_system_prompt = "Answer briefly."\n'
        f'instructions = ["docs/RULES.md", "{tmp_path / "mine.md"}", "missing.md"]\n'
    )
    with MockLLMServer() as server:
        server.script("/chat/completions", Reply(chunks=chat_text(["hi"])))
        config = tmp_path / "config.toml"
        config.write_text(PROVIDER.format(url=server.url) + agent_table)
        async with spawn_agent(home, env={"TETHER_CONFIG": str(config)}) as agent:
            await agent.initialize()
            sid = await agent.new_session(project)
            await agent.prompt(sid, "hello")
        [post] = server.posts
    system = post.json()["messages"][0]["content"]
    assert system.startswith("You are Bob, a careful reviewer.\n\nAnswer briefly.\n\n")
    assert "You are tether" not in system
    assert "## docs/RULES.md\nNever touch the vendored code." in system
    assert f"## {tmp_path / 'mine.md'}\nPrefer tabs." in system
    assert "missing.md" not in system
    assert "# How tools and approvals work" in system  # the tool rules stay


async def test_long_results_spill_past_max_tool_result_chars(home: Path, project: Path) -> None:
    for i in range(60):
        (project / f"file_with_a_long_name_{i:03d}.txt").write_text("x\n")
    config = "[agent]\nmax_tool_result_chars = 1000\n"
    calls = [{"name": "glob_paths", "arguments": {"pattern": "*.txt"}}]
    sid, _ = await configured_turn(home, project, config, calls)
    [result] = tool_results(home, sid)
    assert "[Truncated (1000 chars max; " in result
    assert "You may ask for user to increase the limit via configuration file." in result
    assert len(result) < 1600


async def test_sequential_tools_and_the_default_mode(home: Path, project: Path) -> None:
    config = '[agent]\nparallel_tools = false\ndefault_mode = "code"\n'
    calls = [
        {"name": "write_file", "arguments": {"path": "a.txt", "content": "a\n"}},
        {"name": "write_file", "arguments": {"path": "b.txt", "content": "b\n"}},
    ]
    _, frames = await configured_turn(home, project, config, calls)
    asked = [f for f in frames if f.get("method") == "session/request_permission"]
    assert asked == []  # code mode: new files need no approval
    steps = [_step(f) for f in frames if _step(f) is not None]
    assert steps == [
        ("r0", "in_progress"),
        ("r0", "completed"),
        ("r1", "in_progress"),
        ("r1", "completed"),
    ]
    assert (project / "a.txt").exists() and (project / "b.txt").exists()


def _step(frame: dict[str, Any]) -> tuple[str, str] | None:
    if frame.get("method") != "session/update":
        return None
    update = frame["params"]["update"]
    if update.get("sessionUpdate") != "tool_call_update" or "status" not in update:
        return None
    return update["toolCallId"], update["status"]
