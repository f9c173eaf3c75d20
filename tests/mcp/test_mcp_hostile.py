"""MCP servers nobody here wrote, misbehaving: a spec-invalid tool among good ones, schemas the
providers refuse as they are, a schema that explodes when its references are inlined, 20,000
tools, 50 MB of instructions. The valid tools stay, every request a real API would refuse is
reshaped or left out with a notice, the event loop keeps serving, nothing is silent."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.mcp.test_mcp_servers import calls, config, new_session, text, tool_names, wait_for
from tests.support.harness import REPO, Frame, spawn_agent
from tests.support.providers.mock_llm_server import MockLLMServer

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
HOSTILE = REPO / "tests" / "support" / "mcp_servers" / "hostile_stdio.py"


def hostile(scenario: str) -> Frame:
    return {"name": "h", "command": sys.executable, "args": [str(HOSTILE), scenario], "env": []}


def left_out(u: Frame) -> bool:
    return u["sessionUpdate"] == "notice" and u["title"].endswith(" left out")


def ready(u: Frame) -> bool:
    return u["sessionUpdate"] == "notice" and u["title"] == "MCP server h is ready"


NOTICES = {"session": {"notices": {}}}


async def test_one_invalid_tool_leaves_the_others(
    home: Path, project: Path, tmp_path: Path
) -> None:
    with MockLLMServer() as server:
        server.script("/v1/chat/completions", text("ok"))
        async with spawn_agent(home, env=config(tmp_path, server.url)) as agent:
            await agent.initialize(**NOTICES)
            sid = await new_session(agent, project, [hostile("invalid-one")])
            notice = await wait_for(agent, sid, left_out)
            await wait_for(agent, sid, ready)
            await agent.prompt(sid, "hi")
        body = server.posts[-1].json()
    assert "broken: not a valid MCP tool (inputSchema" in notice["description"]
    assert [n for n in tool_names(body) if n.startswith("mcp__")] == [
        "mcp__h__first",
        "mcp__h__second",
    ]


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
async def test_schemas_a_provider_refuses_are_reshaped_and_keys_mapped_back(
    home: Path, project: Path, tmp_path: Path, kind: str
) -> None:
    """The stand-in vendors refuse what the real APIs refuse (tests/support/providers/vendor_rules.py):
    an array without items (OpenAI), a top-level anyOf and odd property keys (Anthropic)."""
    args = {"rule_name__": ["a"], "Account_Number": "42", "nested": {"a_b": "x"}}
    with MockLLMServer() as server:
        if kind == "openai":
            path, env = "/v1/chat/completions", config(tmp_path, server.url)
            server.script(path, calls(("c1", "mcp__h__form", args)), text("done"))
        else:
            path = "/v1/messages"
            env = _anthropic_config(tmp_path, server.url)
            server.script(
                path, _anthropic_call("c1", "mcp__h__form", args), _anthropic_text("done")
            )
        async with spawn_agent(home, env=env) as agent:
            agent.permission_choice = "allow_once"
            await agent.initialize(**NOTICES)
            sid = await new_session(agent, project, [hostile("rejected-schemas")])
            await wait_for(agent, sid, ready)
            resp = await agent.prompt(sid, "fill the form")
            assert resp["result"] == {"stopReason": "end_turn"}, resp
        bodies = [r.json() for r in server.posts]
    assert len(bodies) == 2  # neither refused: the stand-in refuses what the vendor refuses
    sent = json.dumps(bodies[1])
    # Every tool went out (reshaped), and the server got its own key names back.
    for name in ("mcp__h__tags", "mcp__h__either", "mcp__h__form"):
        assert f'"{name}"' in sent
    echoed = {"Account Number": "42", "nested": {"a b": "x"}, "rule_name[]": ["a"]}
    assert json.dumps(json.dumps(echoed, sort_keys=True))[1:-1] in sent


def _anthropic_config(tmp_path: Path, url: str) -> dict[str, str]:
    path = tmp_path / "config.toml"
    path.write_text(
        f'[providers.p]\nkind = "anthropic"\nbase_url = "{url}"\napi_key = "k"\n'
        'builtin_models = false\n\n[models."p:claude-test"]\ncontext_window = 64000\n\n'
        '[defaults]\nmodel = "p:claude-test"\n'
    )
    return {"TETHER_CONFIG": str(path)}


def _anthropic_call(cid: str, name: str, args: dict[str, Any]) -> Any:
    from tests.support.providers import wire
    from tests.support.providers.mock_llm_server import Reply

    block = {"type": "tool_use", "id": cid, "name": name, "input": {}}
    deltas = [{"type": "input_json_delta", "partial_json": json.dumps(args)}]
    return Reply(
        chunks=[
            wire.anthropic_start(),
            *wire.anthropic_block(0, block, deltas),
            *wire.anthropic_end("tool_use"),
        ]
    )


def _anthropic_text(answer: str) -> Any:
    from tests.support.providers import wire
    from tests.support.providers.mock_llm_server import Reply

    return Reply(chunks=wire.anthropic_text([answer]))


async def test_an_exploding_schema_is_bounded_and_the_agent_keeps_serving(
    home: Path, project: Path, tmp_path: Path
) -> None:
    async with spawn_agent(home) as agent:
        await agent.initialize(**NOTICES)
        sid = await new_session(agent, project, [hostile("exploding-refs")])
        start = time.monotonic()
        listed = await agent.request("session/list", {})  # answered while the server loads
        assert "result" in listed
        notice = await wait_for(agent, sid, left_out, timeout=30)
        elapsed = time.monotonic() - start
    assert "bomb: its references, inlined, make over 20,000 schema nodes" in notice["description"]
    assert elapsed < 30  # bounded: the issue saw 23 s of event loop at depth 20, a hang at 22


async def test_too_many_tools_and_huge_instructions_are_capped_with_notices(
    home: Path, project: Path, tmp_path: Path
) -> None:
    async with spawn_agent(home) as agent:
        await agent.initialize(**NOTICES)
        sid = await new_session(agent, project, [hostile("many-tools")])
        notice = await wait_for(agent, sid, left_out, timeout=60)
        assert "19,744 more tools: tether offers at most 256" in notice["description"]
        other = await new_session(agent, project, [hostile("huge-instructions")])
        said = await wait_for(
            agent, other, lambda u: u["sessionUpdate"] == "notice" and "h" in u["title"], timeout=60
        )
    assert said["title"] == "MCP server h could not start", said
    assert "it sent a message of over 8 MB" in said["description"]


@pytest.mark.parametrize("setup", ["ask", "read-only mode", "user vouches"])
async def test_a_servers_read_only_hint_decides_nothing(
    home: Path, project: Path, tmp_path: Path, setup: str
) -> None:
    """A tool that says `readOnlyHint: true` and writes a file: it asks like any other (and is
    refused in read-only mode); only the user's `readOnly` for the server lets it run unasked.
    The hint shapes the card's words. Judged by the file."""
    marker = tmp_path / "written.txt"
    server = hostile("lying-read-only")
    if setup == "user vouches":
        server["_meta"] = {"tether": {"readOnly": True}}
    with MockLLMServer() as llm:
        llm.script(
            "/v1/chat/completions",
            calls(("c1", "mcp__h__peek", {"path": str(marker)})),
            text("done"),
        )
        async with spawn_agent(home, env=config(tmp_path, llm.url)) as agent:
            agent.permission_choice = "reject_once"
            await agent.initialize(**NOTICES)
            sid = await new_session(agent, project, [server])
            await wait_for(agent, sid, ready)
            if setup == "read-only mode":
                params = {"sessionId": sid, "modeId": "read-only"}
                await agent.request("session/set_mode", params)
            await agent.prompt(sid, "peek")
            asked = [f for f in agent.frames if f.get("method") == "session/request_permission"]
            [card] = [u for u in agent.updates(sid) if u["sessionUpdate"] == "tool_call"]
        result = tool_result(llm.posts[-1].json())
    if setup == "user vouches":
        assert marker.exists() and asked == []
        assert card["title"] == "MCP h: peek"
        return
    assert not marker.exists()
    assert card["title"] == "MCP h: peek (read-only, says the server)"
    if setup == "ask":
        assert len(asked) == 1 and result.startswith("error [REJECTED]: user declined")
    else:
        assert asked == [] and result.startswith("error [READ_ONLY_MODE]")


def tool_result(body: dict[str, Any]) -> str:
    [content] = [m["content"] for m in body["messages"] if m["role"] == "tool"]
    return content
