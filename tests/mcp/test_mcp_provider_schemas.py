"""MCP tools whose schemas the real APIs refuse as they are, through `tether acp` to OpenAI chat
completions, OpenAI Responses and Anthropic: the stand-in server refuses a request as the
vendor does (its published request schema, then `tests/support/providers/tool_schema_rules.py`), so a
turn that ends well is a request the real API takes. Every tool of the server is offered, and
the arguments the model sends reach the server in the server's own shape."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.mcp.test_mcp_servers import NOTICES, new_session, notice, wait_for
from tests.providers.test_acp_with_providers import write_config
from tests.support.harness import REPO, Frame, spawn_agent
from tests.support.mcp_servers.hostile_stdio import PROVIDER_REFUSED
from tests.support.providers.mock_llm_server import MockLLMServer, Reply
from tests.support.providers.wire import (
    ResponsesScript,
    anthropic_block,
    anthropic_end,
    anthropic_start,
    anthropic_text,
    chat_chunk,
    chat_end,
    chat_text,
    responses_text,
)

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
HOSTILE = REPO / "tests" / "support" / "mcp_servers" / "hostile_stdio.py"
TOOLS = [*PROVIDER_REFUSED, "recursive", "tuple", "draft4", "top_not"]
# (tool, the arguments the model sends, what the server receives)
CALLS: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("string_or_list", {"paths": ["a", "b"]}, {"paths": ["a", "b"]}),
    ("odd_keys_in_union", {"filter": {"a_b": "x"}}, {"filter": {"a b": "x"}}),
    ("tuple", {"window": [640, 480]}, {"window": [640, 480]}),
    ("draft4", {"n": 1}, {"n": 1}),
]
Call = tuple[str, str, dict[str, Any]]


def _chat(calls: list[Call]) -> Reply:
    tool_calls = [
        {"index": i, "id": cid, "type": "function",
         "function": {"name": name, "arguments": json.dumps(args)}}
        for i, (cid, name, args) in enumerate(calls)
    ]  # fmt: skip
    first = chat_chunk({"role": "assistant", "content": None, "tool_calls": tool_calls})
    return Reply(chunks=[first, *chat_end("tool_calls")])


def _responses(calls: list[Call]) -> Reply:
    script = ResponsesScript().created()
    for i, (cid, name, args) in enumerate(calls):
        script.call(i, cid, name, [json.dumps(args)])
    return Reply(chunks=script.completed())


def _anthropic(calls: list[Call]) -> Reply:
    chunks: list[bytes | float] = [anthropic_start()]
    for i, (cid, name, args) in enumerate(calls):
        block = {"type": "tool_use", "id": cid, "name": name, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(args)}
        chunks += anthropic_block(i, block, [delta])
    return Reply(chunks=[*chunks, *anthropic_end("tool_use")])


def _chat_results(body: dict[str, Any]) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in body["messages"] if m["role"] == "tool"}


def _responses_results(body: dict[str, Any]) -> dict[str, str]:
    outputs = [i for i in body["input"] if i.get("type") == "function_call_output"]
    return {i["call_id"]: i["output"] for i in outputs}


def _anthropic_results(body: dict[str, Any]) -> dict[str, str]:
    blocks = [b for b in body["messages"][-1]["content"] if b["type"] == "tool_result"]
    return {b["tool_use_id"]: _text(b["content"]) for b in blocks}


def _text(content: Any) -> str:
    return content if isinstance(content, str) else "".join(c["text"] for c in content)


def _chat_names(body: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in body["tools"]]


def _names(body: dict[str, Any]) -> list[str]:
    return [t["name"] for t in body["tools"]]


Api = tuple[
    str,
    str,
    Callable[[list[Call]], Reply],
    Reply,
    Callable[[dict[str, Any]], list[str]],
    Callable[[dict[str, Any]], dict[str, str]],
]
APIS: dict[str, Api] = {
    "chat": ("openai", "/chat/completions", _chat, Reply(chunks=chat_text(["ok"])),
             _chat_names, _chat_results),
    "responses": ("openai-responses", "/responses", _responses,
                  Reply(chunks=responses_text(["ok"])), _names, _responses_results),
    "anthropic": ("anthropic", "/v1/messages", _anthropic, Reply(chunks=anthropic_text(["ok"])),
                  _names, _anthropic_results),
}  # fmt: skip


def hostile() -> Frame:
    args = [str(HOSTILE), "provider-refused"]
    return {"name": "h", "command": sys.executable, "args": args, "env": [], "_meta": VOUCHED}


VOUCHED = {"tether": {"readOnly": True}}  # the calls run without asking: the schemas matter here


@pytest.mark.parametrize("api", list(APIS))
async def test_schemas_the_apis_refuse_as_they_are_are_sent_as_they_take_them(
    home: Path, project: Path, tmp_path: Path, api: str
) -> None:
    kind, route, calls, done, names_of, results_of = APIS[api]
    with MockLLMServer() as server:
        script = [(f"c{i}", f"mcp__h__{tool}", sent) for i, (tool, sent, _) in enumerate(CALLS)]
        server.script(route, calls(script), done)
        write_config(tmp_path / "config.toml", kind, server.url)
        async with spawn_agent(home, env={"TETHER_CONFIG": str(tmp_path / "config.toml")}) as agent:
            await agent.initialize(**NOTICES)
            sid = await new_session(agent, project, [hostile()])
            await wait_for(agent, sid, notice("MCP server h is ready"))
            resp = await agent.prompt(sid, "use them")
        refused = server.schema_errors + server.rule_errors
        bodies = [r.json() for r in server.posts]
    assert refused == []
    assert resp["result"] == {"stopReason": "end_turn"}, resp
    titles = [u["title"] for u in agent.updates(sid) if u["sessionUpdate"] == "notice"]
    assert not [t for t in titles if "left out" in t], titles
    assert [n for n in names_of(bodies[0]) if n.startswith("mcp__h__")] == [
        f"mcp__h__{t}" for t in TOOLS
    ]
    results = results_of(bodies[1])
    for i, (_, _, received) in enumerate(CALLS):
        assert results[f"c{i}"] == json.dumps(received, sort_keys=True), results[f"c{i}"]
