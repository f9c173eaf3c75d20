"""`/mcp` and the MCP servers' prompts as slash commands, through `tether acp` (a real
subprocess, every frame validated) and `tether lsp`: the servers' states as the client sees
them and after a reload, a killed server's calls failing clearly until `/mcp reconnect` brings
it back, a prompt's arguments read from the typed text and its text sent to the model."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest

from tests.mcp.test_mcp_config import stdio_table, write_config
from tests.mcp.test_mcp_servers import (
    NOTICES,
    alive,
    calls,
    config,
    new_session,
    notice,
    stdio_server,
    text,
    tool_results,
    wait_for,
)
from tests.support.harness import AgentProcess, spawn_agent
from tests.support.lsp_client import lsp_in_process, script_file
from tests.support.providers.mock_llm_server import MockLLMServer
from tether.engine.mcp.spec import PromptArgument
from tether.engine.slash.mcp_commands import prompt_arguments

pytestmark = pytest.mark.anyio
BROKEN = {
    "name": "broken",
    "command": sys.executable,
    "args": ["-c", "import sys; sys.stderr.write('no config file\\n'); sys.exit(2)"],
    "env": [],
}


async def reply(agent: AgentProcess, sid: str, prompt: str) -> str:
    """The agent's message for `prompt`, as the client shows it."""
    before = len(agent.updates(sid))
    resp = await agent.prompt(sid, prompt)
    assert resp["result"] == {"stopReason": "end_turn"}
    return "".join(
        u["content"]["text"]
        for u in agent.updates(sid)[before:]
        if u["sessionUpdate"] == "agent_message_chunk"
    )


@pytest.mark.slow
async def test_mcp_shows_each_server_and_a_reload_shows_it_again(
    home: Path, project: Path, tmp_path: Path
) -> None:
    async with spawn_agent(home) as agent:
        await agent.initialize(**NOTICES)
        sid = await new_session(agent, project, [stdio_server(), BROKEN])
        await wait_for(agent, sid, notice("MCP server echo is ready"))
        await wait_for(agent, sid, notice("MCP server broken could not start"))
        shown = await reply(agent, sid, "/mcp")
        unknown = await reply(agent, sid, "/mcp restart")
    lines = shown.splitlines()
    assert lines[0] == "MCP servers:"
    assert lines[1] == "- **echo** (stdio): ready, 1 prompt"
    assert lines[2].startswith("  - tools (") and "`mcp__echo__echo`, `mcp__echo__peek`" in lines[2]
    assert lines[3].startswith("- **broken** (stdio): failed: ")
    assert lines[4] == "  - its last output: `no config file`"
    assert lines[5] == "  - start it again with `/mcp reconnect broken`"
    assert unknown.startswith("Unknown: `/mcp restart`.")

    async with spawn_agent(home) as again:
        await again.initialize()
        params = {"sessionId": sid, "cwd": str(project), "mcpServers": []}
        assert "result" in await again.request("session/load", params)
        replayed = "".join(
            u["content"]["text"]
            for u in again.updates(sid)
            if u["sessionUpdate"] == "agent_message_chunk"
        )
        typed = [u for u in again.updates(sid) if u["sessionUpdate"] == "user_message_chunk"]
    assert shown in replayed
    assert [u["content"]["text"] for u in typed] == ["/mcp", "/mcp restart"]


@pytest.mark.slow
async def test_a_killed_server_fails_its_calls_until_reconnected(
    home: Path, project: Path, tmp_path: Path
) -> None:
    pid_file = tmp_path / "echo.pid"
    with MockLLMServer() as llm:
        llm.script(
            "/v1/chat/completions",
            calls(("c1", "mcp__echo__peek", {"text": "gone?"})),
            text("It is gone."),
            calls(("c2", "mcp__echo__peek", {"text": "back"})),
            text("It is back."),
        )
        async with spawn_agent(home, env=config(tmp_path, llm.url)) as agent:
            await agent.initialize(**NOTICES)
            sid = await new_session(
                agent, project, [stdio_server("echo", "--pid-file", str(pid_file))]
            )
            await wait_for(agent, sid, notice("MCP server echo is ready"))
            first = int(pid_file.read_text())
            os.kill(first, signal.SIGKILL)
            await wait_for(agent, sid, notice("MCP server echo stopped; its tools are gone"))
            await agent.prompt(sid, "peek")
            exited = await reply(agent, sid, "/mcp")
            nothing = await reply(agent, sid, "/mcp reconnect nope")
            back = await reply(agent, sid, "/mcp reconnect")
            second = int(pid_file.read_text())
            assert second != first and alive(second)
            await agent.prompt(sid, "peek again")
            none_failed = await reply(agent, sid, "/mcp reconnect")
            restarted = await reply(agent, sid, "/mcp reconnect echo")  # a running one: again
            third = int(pid_file.read_text())
            assert third != second and alive(third) and not alive(second)
        bodies = [r.json() for r in llm.posts]
    gone = tool_results(bodies[1])["c1"]
    assert gone.startswith("error [MCP_SERVER_GONE]: the MCP server echo is not running (exited")
    assert "`/mcp reconnect echo`" in gone
    assert "- **echo** (stdio): exited" in exited
    assert "start it again with `/mcp reconnect echo`" in exited
    assert nothing == "No MCP server named `nope` in this session (its servers: `echo`)."
    assert back.startswith("Reconnected:\n- **echo** (stdio): ready, 1 prompt\n  - tools (")
    assert "mcp__echo__peek" in [t["function"]["name"] for t in bodies[2]["tools"]]
    assert tool_results(bodies[3])["c2"] == "[approval] user (once)\npeeked at 'back'"
    assert none_failed.startswith("No MCP server has failed or exited")
    assert restarted.startswith("Reconnected:\n- **echo** (stdio): ready")


@pytest.mark.slow
async def test_a_prompt_is_a_command_that_runs_a_turn(
    home: Path, project: Path, tmp_path: Path
) -> None:
    with MockLLMServer() as llm:
        llm.script("/v1/chat/completions", text("Reviewed."), text("Reviewed again."))
        async with spawn_agent(home, env=config(tmp_path, llm.url)) as agent:
            await agent.initialize(**NOTICES)
            sid = await new_session(agent, project, [stdio_server()])
            await wait_for(agent, sid, notice("MCP server echo is ready"))
            listed = await reply(agent, sid, "/help")
            answer = await reply(agent, sid, "/mcp__echo__review app.py focus=style")
            quoted = await reply(agent, sid, '/mcp__echo__review "my file.py" speed')
            missing = await reply(agent, sid, "/mcp__echo__review")
        bodies = [r.json() for r in llm.posts]
    assert "- /mcp__echo__review <file> [focus]: Review a file. (MCP server echo)" in listed
    assert answer == "Reviewed." and quoted == "Reviewed again."
    assert bodies[0]["messages"][-1] == {
        "role": "user",
        "content": "Please review app.py for style.",
    }
    assert bodies[1]["messages"][-1]["content"] == "Please review my file.py for speed."
    assert len(bodies) == 2  # the one without its argument never reached the model
    assert missing == "`/mcp__echo__review`: missing file (arguments: <file> [focus])"


@pytest.mark.slow
async def test_mcp_in_an_lsp_client(
    home: Path, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TETHER_HOME", str(home))
    env = write_config(tmp_path, stdio_table("cfg"))
    monkeypatch.setenv("TETHER_CONFIG", env["TETHER_CONFIG"])
    rounds = script_file(tmp_path / "lsp.json", [[{"text": "Hello."}]])
    async with lsp_in_process(project, rounds) as (editor, _):
        await editor.start()
        assert (await editor.prompt("hi"))["text"] == "Hello."
        await editor.wait_for(
            lambda: any("MCP server cfg is ready" in m.message for m in editor.logs)
        )
        shown = await editor.prompt("/mcp")
    assert shown["stopReason"] == "end_turn"
    assert shown["text"].startswith("MCP servers:\n- **cfg** (stdio): ready, 1 prompt\n")
    assert "`mcp__cfg__echo`" in shown["text"]


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        ("a.py", {"file": "a.py"}),
        ("a.py style", {"file": "a.py", "focus": "style"}),
        ("focus=style a.py", {"file": "a.py", "focus": "style"}),
        ("file=a.py the error paths", {"file": "a.py", "focus": "the error paths"}),
        ("a.py the error paths", {"file": "a.py", "focus": "the error paths"}),
        ('"my file.py" x=1', {"file": "my file.py", "focus": "x=1"}),
        ("it's.py", {"file": "it's.py"}),  # an unclosed quote: the words as typed
    ],
)
def test_prompt_arguments_in_order_or_by_name(typed: str, expected: dict[str, str]) -> None:
    declared = [PromptArgument("file", required=True), PromptArgument("focus")]
    assert prompt_arguments(declared, typed) == expected


def test_prompt_arguments_that_cannot_be_read() -> None:
    declared = [PromptArgument("file", required=True), PromptArgument("focus")]
    with pytest.raises(ValueError, match=r"missing file \(arguments: <file> \[focus\]\)"):
        prompt_arguments(declared, "focus=style")
    with pytest.raises(ValueError, match="too many arguments: 'extra' \\(it takes: none\\)"):
        prompt_arguments([], "extra")
    assert prompt_arguments([], "") == {}


@pytest.mark.slow
async def test_the_client_hears_of_prompt_commands_when_a_server_is_ready(
    home: Path, project: Path, tmp_path: Path
) -> None:
    def offers_review(update: dict[str, object]) -> bool:
        if update["sessionUpdate"] != "available_commands_update":
            return False
        names = [c["name"] for c in update["availableCommands"]]  # type: ignore[index]
        return "mcp__echo__review" in names

    with MockLLMServer() as llm:
        async with spawn_agent(home, env=config(tmp_path, llm.url)) as agent:
            await agent.initialize(**NOTICES)
            sid = await new_session(agent, project, [stdio_server()])
            # Sent once the server is ready (it never is by the session's answer), unasked.
            await wait_for(agent, sid, offers_review)
            menus = [
                u for u in agent.updates(sid) if u["sessionUpdate"] == "available_commands_update"
            ]
    assert not offers_review(menus[0]) and offers_review(menus[-1])
