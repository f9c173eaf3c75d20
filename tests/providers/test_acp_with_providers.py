"""Through `tether acp` end to end: a two-round turn with a tool call against each adapter,
the provider being a loopback server that speaks the API's real wire format."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.harness import spawn_agent
from tests.support.providers.mock_llm_server import MockLLMServer, Reply, error_reply
from tests.support.providers.wire import (
    ResponsesScript,
    anthropic_block,
    anthropic_end,
    anthropic_event,
    anthropic_start,
    anthropic_text,
    chat_chunk,
    chat_end,
    chat_text,
    responses_text,
    split_json,
)

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
ARGS = {"path": "."}


def chat_call() -> list[bytes | float]:
    pieces = split_json(ARGS, 4)
    first = {
        "index": 0,
        "id": "call_1",
        "type": "function",
        "function": {"name": "list_dir", "arguments": pieces[0]},
    }
    chunks: list[bytes | float] = [
        chat_chunk({"role": "assistant", "content": None, "tool_calls": [first]})
    ]
    chunks += [
        chat_chunk({"tool_calls": [{"index": 0, "function": {"arguments": p}}]}) for p in pieces[1:]
    ]
    return chunks + chat_end("tool_calls")


def responses_call() -> list[bytes | float]:
    return (
        ResponsesScript().created().call(0, "call_1", "list_dir", split_json(ARGS, 4)).completed()
    )


def anthropic_call() -> list[bytes | float]:
    block = {"type": "tool_use", "id": "toolu_1", "name": "list_dir", "input": {}}
    deltas = [{"type": "input_json_delta", "partial_json": p} for p in split_json(ARGS, 4)]
    return [
        anthropic_start(),
        anthropic_event("ping"),
        *anthropic_block(0, block, deltas),
        *anthropic_end("tool_use"),
    ]


def chat_result(body: dict[str, Any]) -> str:
    [tool] = [m for m in body["messages"] if m["role"] == "tool"]
    assert tool["tool_call_id"] == "call_1"
    return tool["content"]


def responses_result(body: dict[str, Any]) -> str:
    kinds = [i.get("type") for i in body["input"]]
    at = kinds.index("function_call")
    assert kinds[at + 1] == "function_call_output"  # a call and its output stay contiguous
    return body["input"][at + 1]["output"]


def anthropic_result(body: dict[str, Any]) -> str:
    last = body["messages"][-1]
    assert last["role"] == "user"
    [block] = [b for b in last["content"] if b["type"] == "tool_result"]
    assert block["tool_use_id"] == "toolu_1"
    content = block["content"]
    return content if isinstance(content, str) else content[0]["text"]


Case = tuple[
    str,
    str,
    Callable[[], list[bytes | float]],
    list[bytes | float],
    Callable[[dict[str, Any]], str],
]
CASES: list[Case] = [
    ("openai", "/chat/completions", chat_call, chat_text(["Two ", "entries."]), chat_result),
    ("deepseek", "/chat/completions", chat_call, chat_text(["Two ", "entries."]), chat_result),
    (
        "openai-responses",
        "/responses",
        responses_call,
        responses_text(["Two ", "entries."]),
        responses_result,
    ),
    (
        "anthropic",
        "/v1/messages",
        anthropic_call,
        anthropic_text(["Two ", "entries."]),
        anthropic_result,
    ),
    (
        "deepseek-responses",
        "/responses",
        responses_call,
        responses_text(["Two ", "entries."]),
        responses_result,
    ),
    (
        "deepseek-anthropic",
        "/v1/messages",
        anthropic_call,
        anthropic_text(["Two ", "entries."]),
        anthropic_result,
    ),
]


def write_config(path: Path, kind: str, url: str) -> None:
    path.write_text(
        f'[providers.p]\nkind = "{kind}"\nbase_url = "{url}"\napi_key = "sk-test-0123456789abcdef"\n'
        'builtin_models = false\n\n[models."p:m"]\ncontext_window = 64000\n\n'
        '[defaults]\nmodel = "p:m"\n'
    )


@pytest.mark.parametrize(
    ("kind", "route", "first", "second", "result_of"), CASES, ids=[c[0] for c in CASES]
)
async def test_two_round_turn(
    home: Path,
    project: Path,
    tmp_path: Path,
    kind: str,
    route: str,
    first: Callable[[], list[bytes | float]],
    second: list[bytes | float],
    result_of: Callable[[dict[str, Any]], str],
) -> None:
    with MockLLMServer(dialect="deepseek" if kind.startswith("deepseek") else "openai") as server:
        server.script(route, Reply(chunks=first()), Reply(chunks=second))
        write_config(tmp_path / "config.toml", kind, server.url)
        async with spawn_agent(home, env={"TETHER_CONFIG": str(tmp_path / "config.toml")}) as agent:
            await agent.initialize()
            resp = await agent.request("session/new", {"cwd": str(project), "mcpServers": []})
            sid = resp["result"]["sessionId"]
            model = next(o for o in resp["result"]["configOptions"] if o["id"] == "model")
            assert model["currentValue"] == "p:m"
            resp = await agent.prompt(sid, "what is here?")
            assert resp["result"] == {"stopReason": "end_turn"}
        bodies = [r.json() for r in server.posts]
    updates = agent.updates(sid)
    [call] = [u for u in updates if u["sessionUpdate"] == "tool_call"]
    assert call["title"] == "List ." and call["rawInput"] == ARGS
    assert any(
        u.get("status") == "completed" and u["toolCallId"] == call["toolCallId"] for u in updates
    )
    text = "".join(
        u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk"
    )
    assert text == "Two entries."
    assert len([u for u in updates if u["sessionUpdate"] == "usage_update"]) == 2
    assert len(bodies) == 2
    assert result_of(bodies[1]).startswith(".: 1 entries\nREADME.md")
    assert json.dumps(bodies[0]).count("list_dir") >= 1  # the tools were offered


async def test_rate_limit_is_retried_and_shown(home: Path, project: Path, tmp_path: Path) -> None:
    with MockLLMServer() as server:
        server.script(
            "/chat/completions",
            error_reply(429, "slow down", {"retry-after": "0"}),
            Reply(chunks=chat_text(["ok"])),
        )
        write_config(tmp_path / "config.toml", "openai", server.url)
        async with spawn_agent(home, env={"TETHER_CONFIG": str(tmp_path / "config.toml")}) as agent:
            await agent.initialize(session={"notices": {}})
            sid = await agent.new_session(project)
            resp = await agent.prompt(sid, "hi")
            assert resp["result"] == {"stopReason": "end_turn"}
    [notice] = [u for u in agent.updates(sid) if u["sessionUpdate"] == "notice"]
    assert notice["severity"] == "warning" and "429" in notice["title"]


async def test_a_client_error_ends_the_turn_with_its_message(
    home: Path, project: Path, tmp_path: Path
) -> None:
    with MockLLMServer() as server:
        server.script("/chat/completions", error_reply(400, "model p:m does not exist"))
        write_config(tmp_path / "config.toml", "openai", server.url)
        async with spawn_agent(home, env={"TETHER_CONFIG": str(tmp_path / "config.toml")}) as agent:
            await agent.initialize()
            sid = await agent.new_session(project)
            resp = await agent.prompt(sid, "hi")
        assert len(server.posts) == 1  # a 400 is never retried
    assert resp["error"]["code"] == -32010
    assert (
        "HTTP 400" in resp["error"]["message"]
        and "model p:m does not exist" in resp["error"]["message"]
    )


async def test_cancel_closes_the_provider_stream(home: Path, project: Path, tmp_path: Path) -> None:
    with MockLLMServer() as server:
        server.script(
            "/chat/completions",
            Reply(chunks=[chat_chunk({"role": "assistant", "content": "thinking"})], end="hold"),
        )
        write_config(tmp_path / "config.toml", "openai", server.url)
        async with spawn_agent(home, env={"TETHER_CONFIG": str(tmp_path / "config.toml")}) as agent:
            await agent.initialize()
            sid = await agent.new_session(project)
            rid = await agent.start_turn(sid)
            await agent.notify("session/cancel", {"sessionId": sid})
            resp = await agent.until_response(rid)
            assert resp["result"] == {"stopReason": "cancelled"}
            assert server.disconnected.wait(5)  # the HTTP stream was closed at once


async def test_config_problems_are_shown_once(home: Path, project: Path, tmp_path: Path) -> None:
    """A bad key is logged and told once, as a notice; the rest of the file still applies."""
    config = tmp_path / "config.toml"
    with MockLLMServer() as server:
        server.script(
            "/chat/completions", Reply(chunks=chat_text(["one"])), Reply(chunks=chat_text(["two"]))
        )
        write_config(config, "openai", server.url)
        config.write_text(
            config.read_text().replace("builtin_models", 'colour = "blue"\nbuiltin_models')
        )
        async with spawn_agent(home, env={"TETHER_CONFIG": str(config)}) as agent:
            await agent.initialize(session={"notices": {}})
            sid = await agent.new_session(project)
            await agent.prompt(sid, "hi")
            await agent.prompt(sid, "again")
        assert len(server.posts) == 2  # the file's provider served both turns
    [notice] = [u for u in agent.updates(sid) if u["sessionUpdate"] == "notice"]
    assert notice["title"] == "tether's configuration has problems"
    assert f"{config}:5: providers.p.colour: unknown key" in notice["description"]
    assert "(ignored)" in notice["description"]
    log = (home / "logs" / "tether.log").read_text()
    assert f"{config}:5: providers.p.colour: unknown key" in log
