"""A server's tool list read tool by tool, through `tether acp` as a raw ACP client sees it: the
MCP SDK validates a `tools/list` result as a whole against the negotiated protocol version's
types, so one tool whose `inputSchema` is not `type: "object"` would cost every tool of the
server ("could not start: ValidationError"). Here the valid tools stay, and the others are
named, with why, in a notice and in `/mcp`, when the server starts and when its list changes;
for servers of both protocol eras (the handshake one and 2026-07-28), over stdio and over
streamable HTTP (hand-written servers: the SDK's own would not send such tools)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.mcp.test_mcp_commands import reply
from tests.mcp.test_mcp_servers import NOTICES, calls, config, new_session, notice, text, wait_for
from tests.mcp.test_mcp_servers import tool_names as sent_tools
from tests.support.harness import REPO, Frame, spawn_agent
from tests.support.mcp_servers.hostile_http import serving_hostile
from tests.support.providers.mock_llm_server import MockLLMServer

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
HOSTILE = REPO / "tests" / "support" / "mcp_servers" / "hostile_stdio.py"
ERAS = ["handshake", "modern"]


def hostile(scenario: str, era: str) -> Frame:
    args = [str(HOSTILE), scenario, *(["modern"] if era == "modern" else [])]
    return {"name": "h", "command": sys.executable, "args": args, "env": []}


def left_out(u: Frame) -> bool:
    return u["sessionUpdate"] == "notice" and u["title"].endswith(" left out")


def served(body: dict[str, Any]) -> list[str]:
    return [n for n in sent_tools(body) if n.startswith("mcp__h__")]


UNTYPED = {
    "no_type": "inputSchema.type: Field required",
    "empty_schema": "inputSchema.type: Field required",
    "nullable_root": "inputSchema.type: Input should be 'object'",
}


@contextlib.contextmanager
def untyped_three(transport: str, era: str) -> Iterator[Frame]:
    if transport == "stdio":
        yield hostile("untyped-three", era)
        return
    with serving_hostile("untyped-three", modern=era == "modern") as url:
        yield {"type": "http", "name": "h", "url": url, "headers": []}


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("era", ERAS)
async def test_tools_that_are_not_valid_mcp_tools_are_left_out_one_by_one(
    home: Path, project: Path, tmp_path: Path, era: str, transport: str
) -> None:
    with MockLLMServer() as llm, untyped_three(transport, era) as server:
        llm.script("/v1/chat/completions", text("ok"))
        async with spawn_agent(home, env=config(tmp_path, llm.url)) as agent:
            await agent.initialize(**NOTICES)
            sid = await new_session(agent, project, [server])
            told = await wait_for(agent, sid, left_out)
            await wait_for(agent, sid, notice("MCP server h is ready"))
            assert (await agent.prompt(sid, "hi"))["result"] == {"stopReason": "end_turn"}
            shown = await reply(agent, sid, "/mcp")
            failed = [u for u in agent.updates(sid) if "could not start" in u.get("title", "")]
        body = llm.posts[0].json()
    assert failed == []
    assert served(body) == [f"mcp__h__tool{i:02}" for i in range(1, 15)]
    assert told["severity"] == "warning"
    assert told["title"] == "MCP server h: 3 tools left out"
    assert told["description"].splitlines() == [
        f"- {name}: not a valid MCP tool ({why})" for name, why in UNTYPED.items()
    ]
    lines = shown.splitlines()
    at = lines.index("  - left out (3):")
    assert lines[at + 1 : at + 4] == [
        f"    - `{name}`: not a valid MCP tool ({why})" for name, why in UNTYPED.items()
    ]


@pytest.mark.parametrize("era", ERAS)
async def test_a_changed_list_keeps_its_valid_tools_and_names_the_others(
    home: Path, project: Path, tmp_path: Path, era: str
) -> None:
    """`grow` adds `extra` and `untyped` (no `type`), and says the list changed: `extra` is in
    the same turn's next request, `untyped` in a notice and in `/mcp`."""
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
            server = hostile("list-changed-invalid", era)
            sid = await new_session(agent, project, [server])
            await wait_for(agent, sid, notice("MCP server h is ready"))
            await agent.prompt(sid, "grow")
            changed = await wait_for(agent, sid, notice("MCP server h: tools changed: +extra"))
            told = await wait_for(agent, sid, left_out)
            await agent.prompt(sid, "use it")
            shown = await reply(agent, sid, "/mcp")
        bodies = [r.json() for r in llm.posts]
    assert changed["severity"] == "info"
    assert told["title"] == "MCP server h: 1 tool left out"
    assert (
        told["description"] == "- untyped: not a valid MCP tool (inputSchema.type: Field required)"
    )
    assert served(bodies[0]) == ["mcp__h__grow"]
    assert served(bodies[1]) == served(bodies[2]) == ["mcp__h__grow", "mcp__h__extra"]
    assert "  - tools (2): `mcp__h__grow`, `mcp__h__extra`" in shown.splitlines()
    assert "    - `untyped`: not a valid MCP tool (inputSchema.type: Field required)" in shown
