"""The setup a user of Ollama / llama.cpp / vLLM has: only OPENAI_BASE_URL, no key. The official
Python SDK drives `tether acp` through a two-round turn (a `todo_push` call, then the answer)
against a loopback server speaking OpenAI's chat-completions stream; every frame validates and
the tool list the server received is what a strict provider accepts."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from acp import PROTOCOL_VERSION, spawn_agent_process, text_block
from acp.connection import StreamDirection, StreamEvent
from acp.schema import ClientCapabilities, Implementation
from jsonschema import Draft202012Validator

from tests.support.acp_schema import validate_agent_frame
from tests.support.harness import REPO
from tests.support.providers import wire
from tests.support.providers.mock_llm_server import MockLLMServer, Reply

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


class Client:
    def __init__(self) -> None:
        self.updates: list[Any] = []

    async def session_update(self, session_id: str, update: Any, **kw: Any) -> None:
        self.updates.append(update)

    async def request_permission(self, *args: Any, **kw: Any) -> Any:
        raise AssertionError("todo_push needs no permission")


def _todo_call() -> list[bytes | float]:
    args = json.dumps({"titles": ["Say hello"]})
    call = {
        "index": 0,
        "id": "call_1",
        "type": "function",
        "function": {"name": "todo_push", "arguments": args},
    }
    return [
        wire.chat_chunk({"role": "assistant", "tool_calls": [call]}),
        *wire.chat_end("tool_calls"),
    ]


async def test_a_keyless_local_server_runs_a_two_round_turn(home: Path, project: Path) -> None:
    with MockLLMServer() as server:
        server.script(
            "/v1/chat/completions",
            Reply(chunks=_todo_call()),
            Reply(chunks=wire.chat_text(["Planned ", "and done."])),
        )
        env = {
            **os.environ,
            "TETHER_HOME": str(home),
            "PYTHONPATH": str(REPO),
            "OPENAI_BASE_URL": server.url + "/v1",
        }
        client = Client()
        frames: list[dict[str, Any]] = []

        def observe(event: StreamEvent) -> None:
            if event.direction == StreamDirection.INCOMING:
                validate_agent_frame(event.message)
                frames.append(event.message)

        async with spawn_agent_process(
            client,  # pyright: ignore[reportArgumentType]  # structurally a Client
            sys.executable,
            "-m",
            "tether",
            "acp",
            env=env,
            cwd=REPO,
            transport_kwargs={"stderr": None},
            observers=[observe],
        ) as (conn, _proc):
            await conn.initialize(
                protocol_version=PROTOCOL_VERSION,
                client_capabilities=ClientCapabilities(),
                client_info=Implementation(name="sdk-local", version="0"),
            )
            session = await conn.new_session(cwd=str(project), mcp_servers=[])
            resp = await conn.prompt(session_id=session.session_id, prompt=[text_block("hi")])
            assert resp.stop_reason == "end_turn"
        posts = server.posts
    assert len(posts) == 2 and all("authorization" not in p.headers for p in posts)
    body = posts[0].json()
    tools = {t["function"]["name"]: t["function"]["parameters"] for t in body["tools"]}
    assert "todo_push" in tools
    for schema in tools.values():
        Draft202012Validator.check_schema(schema)
        assert "$ref" not in json.dumps(schema)
    second = posts[1].json()["messages"]
    assert second[-1]["role"] == "tool" and second[-1]["tool_call_id"] == "call_1"
    kinds = [getattr(u, "session_update", None) for u in client.updates]
    assert "plan" in kinds and "agent_message_chunk" in kinds
    assert frames

    # The same session reloaded by the SDK in a new process: replayed, then answered.
    reloaded = Client()
    async with spawn_agent_process(
        reloaded,  # pyright: ignore[reportArgumentType]  # structurally a Client
        sys.executable,
        "-m",
        "tether",
        "acp",
        env=env,
        cwd=REPO,
        transport_kwargs={"stderr": None},
        observers=[observe],
    ) as (conn, _proc):
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        answer = await conn.load_session(cwd=str(project), session_id=session.session_id)
        assert answer.modes is not None
    replayed = [getattr(u, "session_update", None) for u in reloaded.updates]
    assert replayed[0] == "user_message_chunk"
    assert {"tool_call", "plan", "agent_message_chunk"} <= set(replayed)
