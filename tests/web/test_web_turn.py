"""One turn through `tether acp` and the OpenAI-compatible adapter: the model searches (a SearXNG
JSON endpoint on loopback), fetches the loopback page it found once the user allows that
host:port, and answers citing it. Every frame validates against the ACP schema."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.providers.test_acp_with_providers import write_config
from tests.support.harness import spawn_agent
from tests.support.providers.mock_llm_server import MockLLMServer, Reply
from tests.support.providers.wire import chat_chunk, chat_end, chat_text
from tests.support.web_servers import Page, PageServer

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

PAGE = (
    b"<html><head><title>tether manual</title></head><body><nav>menu</nav>"
    b"<article><h1>tether manual</h1><p>tether speaks <strong>ACP</strong> on stdio.</p>"
    b"</article></body></html>"
)


def call(call_id: str, name: str, args: dict[str, Any]) -> list[bytes | float]:
    first = {
        "index": 0,
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args)},
    }
    start = chat_chunk({"role": "assistant", "content": None, "tool_calls": [first]})
    return [start, *chat_end("tool_calls")]


def tool_message(body: dict[str, Any], call_id: str) -> str:
    [msg] = [m for m in body["messages"] if m.get("tool_call_id") == call_id]
    return msg["content"]


async def test_search_fetch_and_cite(home: Path, project: Path, tmp_path: Path) -> None:
    with PageServer() as site, MockLLMServer() as llm:
        page_url = site.url("/manual")
        site.route("/manual", Page(PAGE, type="text/html; charset=utf-8"))
        searx = {"results": [{"url": page_url, "title": "tether manual", "content": "ACP agent"}]}
        site.route("/search", Page(json.dumps(searx).encode(), type="application/json"))
        answer = f"tether speaks ACP on stdio ([tether manual]({page_url}))."
        llm.script(
            "/chat/completions",
            Reply(chunks=call("s1", "web_search", {"query": "tether manual"})),
            Reply(chunks=call("f1", "web_fetch", {"url": page_url})),
            Reply(chunks=chat_text([answer])),
        )
        write_config(tmp_path / "config.toml", "openai", llm.url)
        env = {"TETHER_CONFIG": str(tmp_path / "config.toml"), "TETHER_SEARXNG_URL": site.url("/")}
        async with spawn_agent(home, env=env) as agent:
            await agent.initialize()
            sid = await agent.new_session(project)
            resp = await agent.prompt(sid, "What does tether speak? Cite the docs.")
            assert resp["result"] == {"stopReason": "end_turn"}
        bodies = [r.json() for r in llm.posts]
        assert [r.path for r in site.requests] == ["/search", "/manual"]
        assert site.requests[0].query["q"] == ["tether manual"]

    offered = {t["function"]["name"] for t in bodies[0]["tools"]}
    assert {"web_search", "web_fetch", "fetch_local"} <= offered
    assert tool_message(bodies[1], "s1") == (
        f"Sources:\n- [tether manual]({page_url}) — ACP agent\n\n"
        "Cite the relevant URLs above as markdown links in your answer."
    )
    assert tool_message(bodies[2], "f1") == (
        f"[approval] user (once)\nFetched {page_url} (HTTP 200)\n\n"
        "# tether manual\n\ntether speaks **ACP** on stdio."
    )
    [permission] = [f for f in agent.frames if f.get("method") == "session/request_permission"]
    [card] = [
        u
        for u in agent.updates(sid)
        if u["sessionUpdate"] == "tool_call" and u["toolCallId"] == "f1"
    ]
    assert card["title"] == f"Fetch {page_url} (loopback host {site.host_port})"
    assert permission["params"]["toolCall"]["toolCallId"] == "f1"
    always = [o["name"] for o in permission["params"]["options"] if o["kind"] == "allow_always"]
    assert always == [f"Always allow web_fetch in {site.host_port}"]
    text = "".join(
        u["content"]["text"]
        for u in agent.updates(sid)
        if u["sessionUpdate"] == "agent_message_chunk"
    )
    assert text == answer
