"""What an MCP call gives the model, through `tether acp` with a loopback provider that checks
each request against its vendor's schema: a picture goes to a model that takes images (after
the tool messages for chat completions, inside the `tool_result` for Anthropic), a model
without images reads a placeholder (tests/mcp/test_mcp_servers.py), and a call over the server's
`timeout` fails naming the server and the timeout, the server told to stop."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from tests.mcp.test_mcp_config import stdio_table, write_config
from tests.mcp.test_mcp_servers import (
    NOTICES,
    calls,
    new_session,
    notice,
    stdio_server,
    text,
    tool_results,
    until,
    wait_for,
)
from tests.support.harness import spawn_agent
from tests.support.mcp_servers.tools import PNG
from tests.support.providers.mock_llm_server import MockLLMServer, Reply
from tests.support.providers.wire import (
    anthropic_block,
    anthropic_end,
    anthropic_start,
    anthropic_text,
)

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
DATA = base64.b64encode(PNG).decode()
SHOWN = f"[image: image/png, {len(PNG)} bytes — shown after this text]"


def provider(kind: str, url: str) -> str:
    base = f"{url}/v1" if kind == "openai" else url
    return (
        f'[providers.p]\nkind = "{kind}"\nbase_url = "{base}"\napi_key = "sk-test-0123456789"\n'
        'builtin_models = false\n\n[models."p:m"]\ncontext_window = 64000\nimages = true\n\n'
        '[defaults]\nmodel = "p:m"\n\n'
    )


def anthropic_call(call_id: str, name: str) -> Reply:
    block = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
    deltas = [{"type": "input_json_delta", "partial_json": "{}"}]
    return Reply(
        chunks=[anthropic_start(), *anthropic_block(0, block, deltas), *anthropic_end("tool_use")]
    )


async def picture_turn(home: Path, project: Path, env: dict[str, str]) -> None:
    async with spawn_agent(home, env=env) as agent:
        await agent.initialize(**NOTICES)
        # The user vouches for the server (its picture tool's readOnlyHint alone would ask).
        sid = await new_session(agent, project, [stdio_server(vouched=True)])
        await wait_for(agent, sid, notice("MCP server echo is ready"))
        assert (await agent.prompt(sid, "show me"))["result"] == {"stopReason": "end_turn"}


async def test_a_picture_goes_to_a_chat_model_that_takes_images(
    home: Path, project: Path, tmp_path: Path
) -> None:
    with MockLLMServer() as llm:
        llm.script("/v1/chat/completions", calls(("c1", "mcp__echo__picture", {})), text("A dot."))
        await picture_turn(home, project, write_config(tmp_path, base=provider("openai", llm.url)))
        body = llm.posts[1].json()
    assert tool_results(body)["c1"] == SHOWN
    assert body["messages"][-1] == {
        "role": "user",
        "content": [
            {"type": "text", "text": "The image returned by mcp__echo__picture (call c1):"},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{DATA}"}},
        ],
    }


async def test_a_picture_goes_inside_the_tool_result_for_anthropic(
    home: Path, project: Path, tmp_path: Path
) -> None:
    with MockLLMServer() as llm:
        llm.script(
            "/v1/messages",
            anthropic_call("toolu_1", "mcp__echo__picture"),
            Reply(chunks=anthropic_text(["A dot."])),
        )
        await picture_turn(
            home, project, write_config(tmp_path, base=provider("anthropic", llm.url))
        )
        body = llm.posts[1].json()
    [result] = [b for b in body["messages"][-1]["content"] if b["type"] == "tool_result"]
    assert result["content"] == [
        {"type": "text", "text": SHOWN},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": DATA}},
    ]


async def test_a_call_over_the_servers_timeout_fails_naming_both(
    home: Path, project: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "marker"
    with MockLLMServer() as llm:
        llm.script(
            "/v1/chat/completions",
            calls(("c1", "mcp__slow__hang", {"marker": str(marker)})),
            text("Too slow."),
        )
        env = write_config(
            tmp_path, stdio_table("slow", timeout=1), base=provider("openai", llm.url)
        )
        async with spawn_agent(home, env=env) as agent:
            await agent.initialize(**NOTICES)
            sid = await new_session(agent, project, [])
            await wait_for(agent, sid, notice("MCP server slow is ready"))
            done = await agent.prompt(sid, "wait for it")
            await until(lambda: marker.exists() and marker.read_text() == "cancelled")
        body: dict[str, Any] = llm.posts[1].json()
    assert done["result"] == {"stopReason": "end_turn"}
    assert tool_results(body)["c1"] == (
        "error [TOOL_TIMEOUT]: the MCP server slow did not answer the call of hang within 1 s "
        "(its timeout: `timeout` in [mcp_servers.slow] of the config file)"
    )
