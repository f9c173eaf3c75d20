"""MCP servers given to `session/new`, through `tether acp` end to end: a real stdio server (a
subprocess) and a real streamable-HTTP server (uvicorn on 127.0.0.1), both built with the MCP
SDK; the model is a loopback OpenAI-compatible server, so what tether offers it and sends
back is read from the requests themselves."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support.harness import REPO, AgentProcess, Frame, spawn_agent
from tests.support.mcp_servers.http_server import serving
from tests.support.providers.mock_llm_server import MockLLMServer, Reply
from tests.support.providers.wire import Chunks, chat_chunk, chat_end, chat_text

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
ECHO = REPO / "tests" / "support" / "mcp_servers" / "echo_stdio.py"
NOTICES = {"session": {"notices": {}}}


def stdio_server(
    name: str = "echo", *args: str, env: dict[str, str] | None = None, vouched: bool = False
) -> Frame:
    """`vouched`: the user marks the server read-only, so its tools run without asking."""
    entry: Frame = {
        "name": name,
        "command": sys.executable,
        "args": [str(ECHO), "--name", name, *args],
        "env": [{"name": k, "value": v} for k, v in (env or {}).items()],
    }
    if vouched:
        entry["_meta"] = {"tether": {"readOnly": True}}
    return entry


def calls(*items: tuple[str, str, Any]) -> Reply:
    """One round asking for these tool calls (id, name, arguments)."""
    tool_calls = [
        {
            "index": i,
            "id": cid,
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(args)},
        }
        for i, (cid, name, args) in enumerate(items)
    ]
    first = chat_chunk({"role": "assistant", "content": None, "tool_calls": tool_calls})
    chunks: Chunks = [first, *chat_end("tool_calls")]
    return Reply(chunks=chunks)


def text(answer: str) -> Reply:
    return Reply(chunks=chat_text([answer]))


def config(tmp_path: Path, url: str) -> dict[str, str]:
    path = tmp_path / "config.toml"
    path.write_text(
        f'[providers.p]\nkind = "openai"\nbase_url = "{url}/v1"\n'
        'builtin_models = false\n\n[models."p:m"]\ncontext_window = 64000\n\n'
        '[defaults]\nmodel = "p:m"\n'
    )
    return {"TETHER_CONFIG": str(path)}


async def new_session(agent: AgentProcess, cwd: Path, servers: list[Frame]) -> str:
    resp = await agent.request("session/new", {"cwd": str(cwd), "mcpServers": servers})
    return resp["result"]["sessionId"]


async def wait_for(
    agent: AgentProcess, sid: str, match: Callable[[Frame], bool], timeout: float = 20
) -> Frame:
    """Read until a session/update of `sid` matches; returns it."""
    with anyio.fail_after(timeout):
        while True:
            found = [u for u in agent.updates(sid) if match(u)]
            if found:
                return found[0]
            await agent.recv()


def notice(title: str) -> Callable[[Frame], bool]:
    return lambda u: u["sessionUpdate"] == "notice" and u["title"] == title


def tool_names(body: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in body.get("tools", [])]


def tool_results(body: dict[str, Any]) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in body["messages"] if m["role"] == "tool"}


def alive(pid: int) -> bool:
    """In the process table and not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


async def until(check: Callable[[], bool], timeout: float = 10) -> None:
    with anyio.fail_after(timeout):
        while not check():
            await anyio.sleep(0.02)


async def test_tools_of_stdio_and_http_servers_are_offered_asked_for_and_called(
    home: Path, project: Path, tmp_path: Path
) -> None:
    broken = {
        "name": "broken",
        "command": sys.executable,
        "args": ["-c", "import sys; sys.stderr.write('no config file\\n'); sys.exit(2)"],
        "env": [],
    }
    old = {"type": "sse", "name": "old", "url": "http://127.0.0.1:9/sse", "headers": []}
    with serving("web") as url, MockLLMServer() as llm:
        web = {
            "type": "http",
            "name": "web",
            "url": url,
            "headers": [{"name": "X-Team", "value": "tools"}],
            "_meta": {"tether": {"readOnly": True}},  # the user vouches: nothing asks
        }
        llm.script(
            "/v1/chat/completions",
            calls(
                ("c1", "mcp__echo__echo", {"text": "hello"}),
                ("c2", "mcp__echo__peek", {"text": "hi"}),  # readOnlyHint: asks all the same
                ("c3", "mcp__web__echo", {"text": "over http"}),
                ("c4", "mcp__echo__echo", {"text": 3}),  # refused before anyone is asked
            ),
            text("Done."),
            calls(
                ("c5", "mcp__echo__fail", {"reason": "the disk is full"}),
                ("c6", "mcp__echo__picture", {}),
                ("c7", "mcp__echo__env", {"name": "ECHO_GREETING"}),
            ),
            text("Seen."),
        )
        async with spawn_agent(home, env=config(tmp_path, llm.url)) as agent:
            init = await agent.initialize(**NOTICES)
            assert init["result"]["agentCapabilities"]["mcpCapabilities"]["http"] is True
            servers = [stdio_server(env={"ECHO_GREETING": "hola"}), web, broken, old]
            sid = await new_session(agent, project, servers)
            await wait_for(agent, sid, notice("MCP server echo is ready"))
            await wait_for(agent, sid, notice("MCP server web is ready"))
            failed = await wait_for(agent, sid, notice("MCP server broken could not start"))
            assert failed["severity"] == "error" and "no config file" in failed["description"]
            sse = await wait_for(agent, sid, notice("MCP server old could not start"))
            assert "SSE" in sse["description"]

            first = await agent.prompt(sid, "use the servers")
            second = await agent.prompt(sid, "and the rest")
            await agent.close_input()
            assert await agent.wait_exit(10) == 0
        bodies = [r.json() for r in llm.posts]
    assert first["result"] == second["result"] == {"stopReason": "end_turn"}

    offered = tool_names(bodies[0])
    assert {"read_file", "mcp__echo__echo", "mcp__echo__file_items", "mcp__web__echo"} <= set(
        offered
    )
    assert not any(n.startswith("mcp__broken") or n.startswith("mcp__old") for n in offered)
    echo = next(
        t["function"] for t in bodies[0]["tools"] if t["function"]["name"] == "mcp__echo__echo"
    )
    assert echo["description"] == "Repeat the text."
    assert echo["parameters"] == {  # the server's own schema
        "type": "object",
        "properties": {"text": {"title": "Text", "type": "string"}},
        "required": ["text"],
        "title": "echoArguments",
    }
    system = bodies[0]["messages"][0]["content"]
    assert "## echo\nUse the echo tools to repeat text back." in system
    assert "## web\nUse the web tools to repeat text back." in system

    # echo and peek ask (peek's readOnlyHint is the server's word, not the user's), on one
    # card for the round; the server the user vouched for does not.
    asked = [f for f in agent.frames if f.get("method") == "session/request_permission"]
    listing = asked[0]["params"]["toolCall"]["content"][-1]["content"]["text"]
    assert "1. MCP echo: echo\n2. MCP echo: peek (read-only, says the server)" in listing
    assert len(asked) == 2  # this round, and the next one's hinted tools
    results = tool_results(bodies[1])
    assert results["c1"] == "[approval] user (round)\nhello"
    assert results["c2"] == "[approval] user (round)\npeeked at 'hi'"
    assert results["c3"] == "over http"
    assert results["c4"].startswith("error [INVALID_ARGS]") and "`text`" in results["c4"]
    starts = {u["toolCallId"]: u for u in agent.updates(sid) if u["sessionUpdate"] == "tool_call"}
    assert (starts["c1"]["title"], starts["c1"]["kind"]) == ("MCP echo: echo", "other")
    assert (starts["c3"]["title"], starts["c3"]["kind"]) == ("MCP web: echo", "read")

    results = tool_results(bodies[3])
    assert "cannot do that: the disk is full" in results["c5"]
    assert results["c6"] == (
        "[approval] user (round)\n[image: image/png, 67 bytes — this model does not take images]"
    )
    assert results["c7"] == "[approval] user (round)\nhola"
    ends = {
        u["toolCallId"]: u["status"]
        for u in agent.updates(sid)
        if u["sessionUpdate"] == "tool_call_update" and u.get("status") in ("completed", "failed")
    }
    assert (ends["c5"], ends["c6"], ends["c7"]) == ("failed", "completed", "completed")


async def test_a_slow_server_does_not_hold_up_the_session(
    home: Path, project: Path, tmp_path: Path
) -> None:
    """The server cannot start until the test opens its gate: session/new has answered and a
    first prompt has run without its tools; once it is ready, the next request offers them."""
    gate = tmp_path / "gate"
    with MockLLMServer() as llm:
        llm.script("/v1/chat/completions", text("Before."), text("After."))
        async with spawn_agent(home, env=config(tmp_path, llm.url)) as agent:
            await agent.initialize(**NOTICES)
            sid = await new_session(agent, project, [stdio_server("slow", "--gate", str(gate))])
            assert (await agent.prompt(sid, "hi"))["result"] == {"stopReason": "end_turn"}
            assert not gate.exists()  # so the server could not have been ready
            gate.touch()
            await wait_for(agent, sid, notice("MCP server slow is ready"))
            assert (await agent.prompt(sid, "again"))["result"] == {"stopReason": "end_turn"}
        before, after = (tool_names(r.json()) for r in llm.posts)
    assert not any(n.startswith("mcp__") for n in before)
    assert "mcp__slow__echo" in after
    assert "## slow" in llm.posts[1].json()["messages"][0]["content"]


async def test_a_server_that_crashes_is_reported_and_its_tools_leave(
    home: Path, project: Path, tmp_path: Path
) -> None:
    """A client without notices: the report comes as a thought."""
    pid_file = tmp_path / "echo.pid"
    with MockLLMServer() as llm:
        llm.script(
            "/v1/chat/completions", calls(("c1", "mcp__echo__crash", {})), text("It crashed.")
        )
        async with spawn_agent(home, env=config(tmp_path, llm.url)) as agent:
            await agent.initialize()
            sid = await new_session(
                agent, project, [stdio_server("echo", "--pid-file", str(pid_file))]
            )
            with anyio.fail_after(20):
                while "mcp__echo__crash" not in await _help(agent, sid):  # no notices: ask
                    await anyio.sleep(0.05)
            pid = int(pid_file.read_text())
            resp = await agent.prompt(sid, "crash it")
            thought = await wait_for(
                agent,
                sid,
                lambda u: (
                    u["sessionUpdate"] == "agent_thought_chunk"
                    and "MCP server echo stopped; its tools are gone" in u["content"]["text"]
                ),
            )
        bodies = [r.json() for r in llm.posts]
    assert resp["result"] == {"stopReason": "end_turn"}
    assert "crashing on request" in thought["content"]["text"]  # the server's last words
    result = tool_results(bodies[1])["c1"]
    assert result.startswith("error [MCP_SERVER_GONE]")
    assert "mcp__echo__crash" in tool_names(bodies[0])
    assert not any(n.startswith("mcp__") for n in tool_names(bodies[1]))
    assert not alive(pid)


async def _help(agent: AgentProcess, sid: str) -> str:
    before = len(agent.updates(sid))
    await agent.prompt(sid, "/help")
    return "".join(
        u["content"]["text"]
        for u in agent.updates(sid)[before:]
        if u["sessionUpdate"] == "agent_message_chunk"
    )


async def test_a_cancelled_turn_cancels_the_mcp_request(
    home: Path, project: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "marker"
    with MockLLMServer() as llm:
        llm.script(
            "/v1/chat/completions", calls(("c1", "mcp__echo__hang", {"marker": str(marker)}))
        )
        async with spawn_agent(home, env=config(tmp_path, llm.url)) as agent:
            await agent.initialize(**NOTICES)
            sid = await new_session(agent, project, [stdio_server(vouched=True)])
            await wait_for(agent, sid, notice("MCP server echo is ready"))
            params = {"sessionId": sid, "prompt": [{"type": "text", "text": "wait"}]}
            rid = await agent.start_request("session/prompt", params)
            await until(lambda: marker.exists())
            await agent.notify("session/cancel", {"sessionId": sid})
            resp = await agent.until_response(rid)
            await until(lambda: marker.read_text() == "cancelled")  # the server was told
    assert resp["result"] == {"stopReason": "cancelled"}


async def test_closing_the_session_and_ending_the_input_stop_every_server(
    home: Path, project: Path, tmp_path: Path
) -> None:
    pids = {n: tmp_path / f"{n}.pid" for n in ("one", "two", "starting")}
    gate = tmp_path / "never"
    async with spawn_agent(home) as agent:
        await agent.initialize(**NOTICES)
        first = await new_session(
            agent, project, [stdio_server("one", "--pid-file", str(pids["one"]))]
        )
        second = await new_session(
            agent,
            project,
            [
                stdio_server("two", "--pid-file", str(pids["two"])),
                stdio_server("starting", "--pid-file", str(pids["starting"]), "--gate", str(gate)),
            ],
        )
        await wait_for(agent, first, notice("MCP server one is ready"))
        await wait_for(agent, second, notice("MCP server two is ready"))
        await until(lambda: pids["starting"].exists() and pids["starting"].read_text() != "")
        one, two, starting = (int(p.read_text()) for p in pids.values())
        resp = await agent.request("session/close", {"sessionId": first})
        assert resp["result"] == {}
        assert not alive(one) and alive(two) and alive(starting)
        await agent.close_input()
        assert await agent.wait_exit(15) == 0
    assert not alive(two) and not alive(starting)


async def test_load_and_resume_start_the_servers_they_are_given(
    home: Path, project: Path, tmp_path: Path
) -> None:
    """`session/resume` without `mcpServers` restarts the stored ones; `session/load` starts
    the ones it names (a client passes its servers again)."""
    pid_file = tmp_path / "one.pid"
    one = stdio_server("one", "--pid-file", str(pid_file))
    ready = notice("MCP server one is ready")
    with MockLLMServer() as llm:
        llm.script("/v1/chat/completions", text("Hello."))
        async with spawn_agent(home, env=config(tmp_path, llm.url)) as agent:
            await agent.initialize(**NOTICES)
            sid = await new_session(agent, project, [one])
            await wait_for(agent, sid, ready)
            first = int(pid_file.read_text())
            await agent.request("session/close", {"sessionId": sid})
            assert not alive(first)

            resumed = await agent.request("session/resume", {"sessionId": sid, "cwd": str(project)})
            assert "result" in resumed
            with anyio.fail_after(20):
                while len([u for u in agent.updates(sid) if ready(u)]) < 2:
                    await agent.recv()
            second = int(pid_file.read_text())
            assert second != first and alive(second)
            await agent.request("session/close", {"sessionId": sid})
            assert not alive(second)

            params = {"sessionId": sid, "cwd": str(project), "mcpServers": [stdio_server("two")]}
            assert "result" in await agent.request("session/load", params)
            await wait_for(agent, sid, notice("MCP server two is ready"))
            assert (await agent.prompt(sid, "hi"))["result"] == {"stopReason": "end_turn"}
        offered = tool_names(llm.posts[0].json())
    assert "mcp__two__echo" in offered and not any(n.startswith("mcp__one") for n in offered)


def test_the_sdk_is_not_imported_without_servers() -> None:
    """Startup, the agent and the built-in tools leave the MCP SDK (and jsonschema) unloaded."""
    code = (
        "import sys, tether.rpc.acp.acp_serve, tether.rpc.acp.agent, tether.tools\n"
        "tether.tools.catalog()\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'mcp', 'jsonschema', 'pydantic'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert out.stdout.strip() == "[]", out.stderr
