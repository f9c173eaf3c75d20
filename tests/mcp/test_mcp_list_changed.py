"""A server whose tools change while the session runs: `notifications/tools/list_changed`, sent
on a `subscriptions/listen` stream by a 2026-07-28 server (the SDK-built echo server) or unasked
by a server of the handshake era (written by hand), makes tether list its tools again; the
model's next request carries the new set, and the user is told what changed. The host's change
events (the hook a front uses to offer its commands again) are checked on a real server too."""

from __future__ import annotations

import sys
from contextlib import ExitStack
from pathlib import Path

import anyio
import pytest

from tests.mcp.test_mcp_servers import (
    ECHO,
    NOTICES,
    calls,
    config,
    new_session,
    notice,
    stdio_server,
    text,
    tool_names,
    tool_results,
    wait_for,
)
from tests.support.harness import REPO, spawn_agent
from tests.support.mcp_servers.http_server import serving
from tests.support.providers.mock_llm_server import MockLLMServer
from tether.engine.events import Notice
from tether.engine.mcp.host import McpHost
from tether.engine.mcp.server_state import McpChange, tools_changed
from tether.engine.mcp.spec import RemoteTool, ServerSpec

pytestmark = pytest.mark.anyio
HOSTILE = REPO / "tests" / "support" / "mcp_servers" / "hostile_stdio.py"


@pytest.mark.slow
async def test_a_tool_added_by_a_call_is_in_the_next_request(
    home: Path, project: Path, tmp_path: Path
) -> None:
    """Within one turn: the round that calls `grow` is answered, and the very next request
    (the same turn's next round) offers the new tool, which the model then calls."""
    with MockLLMServer() as llm:
        llm.script(
            "/v1/chat/completions",
            calls(("c1", "mcp__echo__grow", {"name": "shout"})),
            calls(("c2", "mcp__echo__shout", {"text": "hi"})),
            text("Done."),
        )
        async with spawn_agent(home, env=config(tmp_path, llm.url)) as agent:
            await agent.initialize(**NOTICES)
            sid = await new_session(agent, project, [stdio_server()])
            await wait_for(agent, sid, notice("MCP server echo is ready"))
            done = await agent.prompt(sid, "grow a tool and use it")
            told = await wait_for(agent, sid, notice("MCP server echo: tools changed: +shout"))
        bodies = [r.json() for r in llm.posts]
    assert done["result"] == {"stopReason": "end_turn"}
    assert told["severity"] == "info"
    assert "mcp__echo__shout" not in tool_names(bodies[0])
    assert "mcp__echo__shout" in tool_names(bodies[1])
    shout = next(
        t["function"] for t in bodies[1]["tools"] if t["function"]["name"] == "mcp__echo__shout"
    )
    assert shout["description"] == "The tool shout, added on request."
    assert tool_results(bodies[1])["c1"] == "[approval] user (once)\nadded shout"  # a hint asks
    assert tool_results(bodies[2])["c2"] == "[approval] user (once)\nshout: hi"


@pytest.mark.slow
async def test_a_server_of_the_handshake_era_notifies_unasked(
    home: Path, project: Path, tmp_path: Path
) -> None:
    server = {"name": "h", "command": sys.executable, "args": [str(HOSTILE), "list-changed"]}
    with MockLLMServer() as llm:
        llm.script(
            "/v1/chat/completions",
            calls(("c1", "mcp__h__grow", {})),
            text("Grown."),
            calls(("c2", "mcp__h__extra", {"text": "x"})),
            text("Done."),
        )
        async with spawn_agent(home, env=config(tmp_path, llm.url)) as agent:
            await agent.initialize(**NOTICES)
            sid = await new_session(agent, project, [{**server, "env": []}])
            await wait_for(agent, sid, notice("MCP server h is ready"))
            await agent.prompt(sid, "grow")
            await wait_for(agent, sid, notice("MCP server h: tools changed: +extra"))
            await agent.prompt(sid, "use it")
        bodies = [r.json() for r in llm.posts]
    assert tool_names(bodies[0]).count("mcp__h__extra") == 0
    assert "mcp__h__extra" in tool_names(bodies[1])
    assert "mcp__h__extra" in tool_names(bodies[2])
    assert tool_results(bodies[3])["c2"].endswith('{"text": "x"}')


@pytest.mark.slow
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_the_host_tells_its_listeners_about_state_and_tools(
    tmp_path: Path, transport: str
) -> None:
    """The hook a front uses: McpHost.listen gets each server's state and list changes. Over
    stdio the change is told before the call that made it returns (the server says so first,
    on the same pipe); over streamable HTTP the change stream is a request of its own, so it
    may come a moment after the call's answer."""
    with ExitStack() as stack:
        if transport == "stdio":
            spec = ServerSpec("echo", "stdio", command=sys.executable, args=[str(ECHO)])
        else:
            spec = ServerSpec("echo", "http", url=stack.enter_context(serving("echo")))
        await _host_and_listeners(tmp_path, spec, ordered=transport == "stdio")


async def _host_and_listeners(tmp_path: Path, spec: ServerSpec, *, ordered: bool) -> None:
    notices: list[Notice] = []
    changes: list[McpChange] = []

    async def notify(n: Notice) -> None:
        notices.append(n)

    async def changed(c: McpChange) -> None:
        changes.append(c)

    host = McpHost([spec], cwd=tmp_path, notify=notify)
    host.listen(changed)
    async with anyio.create_task_group() as tg:
        host.start(tg)
        with anyio.fail_after(30):
            while McpChange("echo", "state") not in changes:
                await anyio.sleep(0.02)
        [status] = host.statuses()
        assert status.state == "ready" and status.prompts == 1
        assert "mcp__echo__grow" in status.tools
        grow = next(t for t in host.tools() if t.name == "mcp__echo__grow")
        out = await grow.fn(_NoModel(), {"name": "later"})  # type: ignore[arg-type]
        assert out.text == "added later"  # type: ignore[union-attr]
        await _told(changes, McpChange("echo", "tools"), ordered)
        assert "mcp__echo__later" in [t.name for t in host.tools()]
        teach = next(t for t in host.tools() if t.name == "mcp__echo__teach")
        await teach.fn(_NoModel(), {"name": "lesson"})  # type: ignore[arg-type]
        await _told(changes, McpChange("echo", "prompts"), ordered)
        assert [p.name for _, p in host.prompts()] == ["review", "lesson"]
        text, pictures = await host.get_prompt("echo", "lesson", {}, images=False)
        assert (text, pictures) == ("You were taught lesson.", [])
        await host.aclose()
        tg.cancel_scope.cancel()
    assert [n.title for n in notices] == ["MCP server echo: tools changed: +later"]


async def _told(changes: list[McpChange], change: McpChange, ordered: bool) -> None:
    if ordered:
        assert change in changes  # told before the call returned
    with anyio.fail_after(10):
        while change not in changes:
            await anyio.sleep(0.02)


class _NoModel:
    llm = None


def test_what_a_change_notice_says() -> None:
    a, b, c = (RemoteTool(n, "", {"type": "object"}) for n in "abc")
    b2 = RemoteTool("b", "now described", {"type": "object"})
    assert tools_changed("x", [a, b], [b2, c]) == "MCP server x: tools changed: +c -a ~b"
    assert tools_changed("x", [a], [a]) == ""
