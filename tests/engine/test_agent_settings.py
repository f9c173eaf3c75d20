"""The `[agent]` settings kept in the config file (issue 32, item 2), through real processes:
the tool directives and the MCP servers' guidance in the system prompt, the compaction
summary's instructions, directories open without asking, and the limits raised without asking
(`auto_continue_limits`, `tether ask --auto-continue --max-rounds`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.mcp.test_mcp_config import stdio_table
from tests.mcp.test_mcp_servers import NOTICES, notice, wait_for
from tests.support.harness import REPO, configured_turn, script, spawn_agent
from tests.support.providers.mock_llm_server import MockLLMServer, Reply
from tests.support.providers.wire import chat_text
from tests.support.stored import tool_results

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


def _config(tmp_path: Path, url: str, *tables: str) -> dict[str, str]:
    path = tmp_path / "config.toml"
    path.write_text(PROVIDER.format(url=url) + "".join(tables))
    return {"TETHER_CONFIG": str(path)}


@pytest.mark.slow
@pytest.mark.anyio
async def test_tool_directives_replace_the_tool_rules_and_mcp_guidance_can_be_left_out(
    home: Path, project: Path, tmp_path: Path
) -> None:
    agent_table = (
        '[agent]\ntool_directives = "Call one tool per reply."\nmcp_instructions = false\n\n'
    )
    with MockLLMServer() as server:
        server.script("/chat/completions", Reply(chunks=chat_text(["hi"])))
        env = _config(tmp_path, server.url, agent_table, stdio_table("echo"))
        async with spawn_agent(home, env=env) as agent:
            await agent.initialize(**NOTICES)
            sid = await agent.new_session(project)
            await wait_for(agent, sid, notice("MCP server echo is ready"))
            await agent.prompt(sid, "hello")
        [post] = server.posts
    body = post.json()
    system = body["messages"][0]["content"]
    assert "\n\nCall one tool per reply.\n\n" in system
    assert "# How tools and approvals work" not in system  # tether's rules replaced
    assert "mcp__echo__echo" in [t["function"]["name"] for t in body["tools"]]  # offered
    assert "Use the echo tools to repeat text back." not in system  # its guidance left out


@pytest.mark.slow
@pytest.mark.anyio
async def test_an_empty_tool_directives_leaves_the_rules_out_and_mcp_guidance_stays(
    home: Path, project: Path, tmp_path: Path
) -> None:
    with MockLLMServer() as server:
        server.script("/chat/completions", Reply(chunks=chat_text(["hi"])))
        env = _config(
            tmp_path, server.url, '[agent]\ntool_directives = ""\n\n', stdio_table("echo")
        )
        async with spawn_agent(home, env=env) as agent:
            await agent.initialize(**NOTICES)
            sid = await agent.new_session(project)
            await wait_for(agent, sid, notice("MCP server echo is ready"))
            await agent.prompt(sid, "hello")
        [post] = server.posts
    system = post.json()["messages"][0]["content"]
    assert "# How tools and approvals work" not in system
    assert "## echo\nUse the echo tools to repeat text back." in system  # default: on


@pytest.mark.slow
@pytest.mark.anyio
async def test_compact_system_prompt_is_what_the_summary_request_follows(
    home: Path, project: Path, tmp_path: Path
) -> None:
    agent_table = '[agent]\ncompact_system_prompt = "Summarise as three terse bullets."\n'
    with MockLLMServer() as server:
        server.script(
            "/chat/completions",
            Reply(chunks=chat_text(["first answer"])),
            Reply(chunks=chat_text(["second answer"])),
            Reply(chunks=chat_text(["- the user said hello twice"])),
        )
        env = _config(tmp_path, server.url, agent_table)
        async with spawn_agent(home, env=env) as agent:
            await agent.initialize()
            sid = await agent.new_session(project)
            await agent.prompt(sid, "hello")
            await agent.prompt(sid, "hello again")
            done = await agent.prompt(sid, "/compact")
            assert done["result"] == {"stopReason": "end_turn"}
        summary = server.posts[-1].json()
    assert summary["messages"][0] == {
        "role": "system",
        "content": "Summarise as three terse bullets.",
    }
    assert "tools" not in summary or not summary["tools"]


@pytest.mark.slow
@pytest.mark.anyio
async def test_allow_paths_opens_a_directory_without_asking_and_never_a_denylisted_one(
    home: Path, project: Path, tmp_path: Path
) -> None:
    other = tmp_path / "shared"
    (other / ".ssh").mkdir(parents=True)
    (other / "notes.txt").write_text("shared note\n")
    (other / ".ssh" / "id_test").write_text("PRIVATE\n")
    config = f'[agent]\nallow_paths = {{ "{other}" = "read", "{other / ".ssh"}" = "read" }}\n'
    calls = [
        {"name": "read_file", "arguments": {"path": str(other / "notes.txt")}},
        {"name": "read_file", "arguments": {"path": str(other / ".ssh" / "id_test")}},
        {"name": "write_file", "arguments": {"path": str(other / "new.txt"), "content": "x"}},
    ]
    sid, frames = await configured_turn(home, project, config, calls)
    read, secret, write = tool_results(home, sid)
    assert "shared note" in read
    assert "PRIVATE" not in secret and "PATH_DENIED" in secret
    assert "OUTSIDE_ROOTS" in write or "reading only" in write
    assert not (other / "new.txt").exists()
    asked = [f for f in frames if f.get("method") == "session/request_permission"]
    assert [f["params"]["toolCall"]["toolCallId"] for f in asked] == []


def _scripted_rounds(tmp_path: Path, rounds: int) -> Path:
    reads = [
        [{"tool_call": {"id": f"c{i}", "name": "read_file", "arguments": {"path": "a.txt"}}}]
        for i in range(rounds)
    ]
    return script(tmp_path / "rounds.json", [*reads, [{"text": "all read"}]])


def _ask(home: Path, project: Path, *args: str, config: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "TETHER_HOME": str(home),
        "PYTHONPATH": str(REPO),
        "TETHER_CONFIG": str(config),
        "TETHER_NONINTERACTIVE": "1",
    }
    return subprocess.run(
        [sys.executable, "-m", "tether", "ask", "--cwd", str(project), *args, "read a.txt"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


@pytest.mark.slow
@pytest.mark.cold_start
def test_ask_max_rounds_stops_the_turn_and_auto_continue_goes_past_it(
    home: Path, project: Path, tmp_path: Path
) -> None:
    (project / "a.txt").write_text("alpha\n")
    turn = _scripted_rounds(tmp_path, 3)
    none = Path(os.devnull)  # no config file
    stopped = _ask(home, project, "--script", str(turn), "--max-rounds", "2", config=none)
    assert stopped.returncode == 1, stopped.stderr
    assert "Continue this turn past 2 rounds?" in stopped.stderr
    assert "[stop: max_turn_requests]" in stopped.stderr
    assert "all read" not in stopped.stdout
    went_on = _ask(
        home,
        project,
        *("--script", str(turn), "--max-rounds", "2", "--auto-continue"),
        config=none,
    )
    assert went_on.returncode == 0, went_on.stderr
    assert "Continue this turn" not in went_on.stderr  # nobody was asked
    assert "all read" in went_on.stdout
    assert "[stop: end_turn]" in went_on.stderr


@pytest.mark.slow
@pytest.mark.cold_start
def test_auto_continue_limits_in_the_config_file(home: Path, project: Path, tmp_path: Path) -> None:
    (project / "a.txt").write_text("alpha\n")
    config = tmp_path / "config.toml"
    config.write_text("[agent]\nmax_rounds = 1\nauto_continue_limits = true\n")
    done = _ask(home, project, "--script", str(_scripted_rounds(tmp_path, 2)), config=config)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Continue this turn" not in done.stderr
    assert "[stop: end_turn]" in done.stderr


@pytest.mark.slow
def test_doctor_checks_the_new_agent_keys_with_their_lines(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "TETHER_CONFIG": str(path),
        "TETHER_HOME": str(tmp_path / "home"),
    }
    path.write_text(
        "[agent]\n"
        'tool_directives = ""\n'
        "mcp_instructions = false\n"
        'compact_system_prompt = "Be brief."\n'
        "auto_continue_limits = true\n"
        "max_ptys = 4\n"
        "pty_output_budget = 1048576\n"
        "\n[agent.allow_paths]\n"
        '"~/src/shared" = "read"\n'
        '"/opt/tools" = "exec"\n'
    )

    def doctor() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "tether", "doctor"],
            capture_output=True,
            text=True,
            env=env,
            cwd=REPO,
            timeout=60,
        )

    ok = doctor()
    assert ok.returncode == 0, ok.stdout
    assert '  allow_paths            {"~/src/shared": "read", "/opt/tools": "exec"}' in ok.stdout
    path.write_text(
        "[agent]\n"
        "mcp_instructions = 1\n"
        "max_ptys = 0\n"
        "\n[agent.allow_paths]\n"
        '"relative/dir" = "read"\n'
        '"/opt/tools" = "rwx"\n'
    )
    bad = doctor()
    assert bad.returncode == 1
    out = bad.stdout
    assert f"  error: {path}:2: agent.mcp_instructions: expected true or false" in out, out
    assert f"  error: {path}:3: agent.max_ptys: " in out
    assert f'  error: {path}:6: agent.allow_paths."relative/dir": expected an absolute path' in out
    assert f"  error: {path}:7: agent.allow_paths.\"/opt/tools\": invalid value 'rwx'" in out


def test_allow_paths_expand_home_and_exec_is_write_access(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tether.engine.workspace import DirGrant, configured_grants

    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "tools").mkdir()
    grants = configured_grants({"~/tools": "exec", str(tmp_path / "docs"): "read"})
    assert grants == [
        DirGrant(tmp_path.resolve() / "tools", "write"),
        DirGrant(tmp_path.resolve() / "docs", "read"),
    ]


@pytest.mark.slow
@pytest.mark.cold_start
def test_zero_max_rounds_is_refused_on_the_command_line(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO), "TETHER_HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "tether", "acp", "--max-rounds", "0"],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    assert done.returncode == 2
    assert "--max-rounds: expected a whole number of at least 1, not '0'" in done.stderr
