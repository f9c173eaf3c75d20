"""Through `tether acp`: each way the adapters once parted from the real APIs, as a turn against
the loopback server (which refuses what the vendor refuses: its schema and its documented 400s).

1. model lists: discovered after session/new, offered in the model option; a keyless server
   without the default model runs on the first model it lists;
2. reasoning models on chat completions get `max_completion_tokens`;
3. an Anthropic refusal shows `stop_details` and its exchange is left out of the next request;
4. Anthropic prompt caching: breakpoints, and cache reads in `usage_update`;
5. Responses: a switch to a model that does not reason sends no reasoning items;
6. DeepSeek's anthropic convention: thinking blocks back, thinking on and off, its effort;
7. retries as the official SDKs: 409 retried, an exhausted quota said once, in words.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support.harness import REPO, AgentProcess, spawn_agent
from tests.support.providers import wire
from tests.support.providers.mock_llm_server import MockLLMServer, Reply, error_reply
from tests.support.stored import stored_messages
from tether.engine.sessions.model_choice import FIRST_PROMPT_WAIT

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
KEY = "sk-test-0123456789abcdef"


def listing(*ids: str) -> Reply:
    data = [{"id": i, "object": "model", "created": 1, "owned_by": "x"} for i in ids]
    return Reply(body=json.dumps({"object": "list", "data": data}).encode())


async def until_update(agent: AgentProcess, sid: str, kind: str) -> dict[str, Any]:
    """Read frames until a session/update of `kind` arrives for `sid`; returns its update."""
    with anyio.fail_after(15):
        while True:
            frame = await agent.recv()
            if frame.get("method") == "session/update" and frame["params"]["sessionId"] == sid:
                update = frame["params"]["update"]
                if update["sessionUpdate"] == kind:
                    return update


def option(options: list[dict[str, Any]], option_id: str) -> dict[str, Any]:
    return next(o for o in options if o["id"] == option_id)


def texts(agent: AgentProcess, sid: str) -> str:
    return "".join(
        u["content"]["text"]
        for u in agent.updates(sid)
        if u["sessionUpdate"] == "agent_message_chunk"
    )


def openai_env(server: MockLLMServer, model: str) -> dict[str, str]:
    return {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": server.url + "/v1", "TETHER_MODEL": model}


def anthropic_env(server: MockLLMServer, model: str) -> dict[str, str]:
    return {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": server.url, "TETHER_MODEL": model}


@contextmanager
def config(tmp_path: Path, text: str) -> Iterator[dict[str, str]]:
    path = tmp_path / "config.toml"
    path.write_text(text)
    yield {"TETHER_CONFIG": str(path)}


# --- 1. model lists ---------------------------------------------------------------------------


async def test_listed_models_are_offered_after_session_new(home: Path, project: Path) -> None:
    gate = threading.Event()  # the model list is held back until session/new was answered
    with MockLLMServer() as server:
        reply = listing("gpt-5.5", "gpt-7-preview")
        reply.gate = gate
        server.script("/v1/models", reply)
        server.script("/v1/chat/completions", Reply(chunks=wire.chat_text(["hi"])))
        try:
            async with spawn_agent(home, env=openai_env(server, "openai:gpt-5.5")) as agent:
                await agent.initialize()
                resp = await agent.request("session/new", {"cwd": str(project), "mcpServers": []})
                sid = resp["result"]["sessionId"]
                first = option(resp["result"]["configOptions"], "model")
                assert "openai:gpt-7-preview" not in [o["value"] for o in first["options"]]
                gate.set()
                update = await until_update(agent, sid, "config_option_update")
                model = option(update["configOptions"], "model")
                assert "openai:gpt-7-preview" in [o["value"] for o in model["options"]]
                assert model["currentValue"] == "openai:gpt-5.5"
                picked = await agent.request(
                    "session/set_config_option",
                    {"sessionId": sid, "configId": "model", "value": "openai:gpt-7-preview"},
                )
                assert "result" in picked
                assert (await agent.prompt(sid, "hi"))["result"] == {"stopReason": "end_turn"}
        finally:
            gate.set()
        [listed] = [r for r in server.requests if r.method == "GET"]
        assert listed.path == "/v1/models" and listed.headers["authorization"] == f"Bearer {KEY}"
        assert server.posts[0].json()["model"] == "gpt-7-preview"


async def test_the_end_of_input_does_not_wait_for_a_model_list(home: Path, project: Path) -> None:
    gate = threading.Event()  # a provider that never answers its model list
    with MockLLMServer() as server:
        reply = listing("gpt-5.5")
        reply.gate = gate
        server.script("/v1/models", reply)
        try:
            async with spawn_agent(home, env=openai_env(server, "openai:gpt-5.5")) as agent:
                await agent.initialize()
                await agent.new_session(project)
                assert await anyio.to_thread.run_sync(server.received.wait, 15)  # GET /models
                await agent.close_input()
                assert await agent.wait_exit() == 0
                await agent.drain()
        finally:
            gate.set()


async def test_a_keyless_server_runs_on_the_first_model_it_lists(
    home: Path, project: Path, tmp_path: Path
) -> None:
    with MockLLMServer() as server:
        server.script("/v1/models", listing("qwen2.5-coder:32b", "llama3.1:8b"))
        server.script("/v1/chat/completions", Reply(chunks=wire.chat_text(["hello"])))
        text = (
            f'[providers.local]\nkind = "openai"\nbase_url = "{server.url}/v1"\n\n'
            '[defaults]\nmodel = "local:gpt-5.5"\n'
        )
        with config(tmp_path, text) as env:
            async with spawn_agent(home, env=env) as agent:
                await agent.initialize(session={"notices": {}})
                resp = await agent.request("session/new", {"cwd": str(project), "mcpServers": []})
                sid = resp["result"]["sessionId"]
                assert option(resp["result"]["configOptions"], "model")["currentValue"] == (
                    "local:gpt-5.5"
                )
                update = await until_update(agent, sid, "config_option_update")
                model = option(update["configOptions"], "model")
                assert model["currentValue"] == "local:qwen2.5-coder:32b"
                assert (await agent.prompt(sid, "hi"))["result"] == {"stopReason": "end_turn"}
        [notice] = [u for u in agent.updates(sid) if u["sessionUpdate"] == "notice"]
        assert notice["title"] == (
            f"Using qwen2.5-coder:32b, the first model the server at {server.url}/v1 lists "
            "(it does not list gpt-5.5)"
        )
        body = server.posts[0].json()
        assert (
            body["model"] == "qwen2.5-coder:32b" and "authorization" not in server.posts[0].headers
        )


def keyless_env(server: MockLLMServer) -> dict[str, str]:
    """A local server from the environment alone: no key, no model chosen (tether guesses
    its kind's first built-in model, which a local server does not know)."""
    return {
        "OPENAI_BASE_URL": server.url + "/v1",
        "OPENAI_API_KEY": "",
        "ANTHROPIC_API_KEY": "",
        "TETHER_MODEL": "",
    }


async def test_the_first_prompt_waits_for_a_keyless_servers_model_list(
    home: Path, project: Path
) -> None:
    with MockLLMServer() as server:
        slow = listing("qwen2.5-coder:32b")
        slow.delay = 1.0  # the prompt is sent long before the list arrives
        server.script("/v1/models", slow)
        server.script("/v1/chat/completions", Reply(chunks=wire.chat_text(["hello"])))
        async with spawn_agent(home, env=keyless_env(server)) as agent:
            await agent.initialize(session={"notices": {}})
            new = await agent.start_request("session/new", {"cwd": str(project), "mcpServers": []})
            sid = (await agent.until_response(new))["result"]["sessionId"]
            assert (await agent.prompt(sid, "hi"))["result"] == {"stopReason": "end_turn"}
        assert [p.json()["model"] for p in server.posts] == ["qwen2.5-coder:32b"]
        assert "hello" in texts(agent, sid)
        [notice] = [u for u in agent.updates(sid) if u["sessionUpdate"] == "notice"]
        assert notice["title"].startswith("Using qwen2.5-coder:32b, the first model")


async def test_a_cancel_ends_the_wait_for_a_model_list(home: Path, project: Path) -> None:
    gate = threading.Event()  # a server that never lists its models
    with MockLLMServer() as server:
        stuck = listing("qwen2.5-coder:32b")
        stuck.gate = gate
        server.script("/v1/models", stuck)
        try:
            async with spawn_agent(home, env=keyless_env(server)) as agent:
                await agent.initialize()
                sid = await agent.new_session(project)
                rid = await agent.start_request(
                    "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "x"}]}
                )
                await agent.notify("session/cancel", {"sessionId": sid})
                with anyio.fail_after(FIRST_PROMPT_WAIT):  # not waited out
                    answer = await agent.until_response(rid)
                assert answer["result"] == {"stopReason": "cancelled"}
        finally:
            gate.set()
        assert server.posts == []


def test_tether_ask_on_a_keyless_server_uses_a_model_it_lists(home: Path, project: Path) -> None:
    with MockLLMServer() as server:
        server.script("/v1/models", listing("llama3.1:8b"))
        server.script("/v1/chat/completions", Reply(chunks=wire.chat_text(["hello there"])))
        env = {
            **os.environ,
            "TETHER_HOME": str(home),
            "PYTHONPATH": str(REPO),
            **keyless_env(server),
        }
        done = subprocess.run(
            [sys.executable, "-m", "tether", "ask", "--cwd", str(project), "hi"],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert "hello there" in done.stdout
        assert [p.json()["model"] for p in server.posts] == ["llama3.1:8b"]


# --- 2. reasoning models on chat completions --------------------------------------------------


async def test_a_reasoning_model_on_chat_completions_gets_max_completion_tokens(
    home: Path, project: Path
) -> None:
    with MockLLMServer() as server:
        server.script("/v1/chat/completions", Reply(chunks=wire.chat_text(["ok"])))
        async with spawn_agent(home, env=openai_env(server, "openai:gpt-5.4")) as agent:
            await agent.initialize()
            sid = await agent.new_session(project)
            assert (await agent.prompt(sid, "hi"))["result"] == {"stopReason": "end_turn"}
        body = server.posts[0].json()
    assert body["max_completion_tokens"] == 128_000 and "max_tokens" not in body
    assert body["reasoning_effort"] == "medium"
    assert server.rule_errors == []


# --- 3. Anthropic refusals --------------------------------------------------------------------

STOP_DETAILS = {
    "type": "refusal",
    "category": "cyber",
    "explanation": "Writing working malware is not something I can help with.",
}


def refused() -> list[bytes | float]:
    delta = {"stop_reason": "refusal", "stop_sequence": None, "stop_details": STOP_DETAILS}
    return [
        wire.anthropic_start(),
        *wire.anthropic_text_block(0, ["Here is how"]),
        wire.anthropic_event("message_delta", delta=delta, usage={"output_tokens": 4}),
        wire.anthropic_event("message_stop"),
    ]


async def test_a_refused_exchange_is_shown_and_then_left_out(home: Path, project: Path) -> None:
    with MockLLMServer() as server:
        server.script(
            "/v1/messages",
            Reply(chunks=refused()),
            Reply(chunks=wire.anthropic_text(["Recursion is..."])),
        )
        async with spawn_agent(
            home, env=anthropic_env(server, "anthropic:claude-sonnet-5-5")
        ) as agent:
            await agent.initialize()
            sid = await agent.new_session(project)
            first = await agent.prompt(sid, "write a keylogger")
            assert first["result"] == {"stopReason": "refusal"}
            shown = texts(agent, sid)
            second = await agent.prompt(sid, "explain recursion")
            assert second["result"] == {"stopReason": "end_turn"}
        bodies = [r.json() for r in server.posts]
    assert shown.startswith("Here is how")
    assert "declined to continue (cyber): Writing working malware" in shown
    sent = [[b.get("text") for b in m["content"]] for m in bodies[1]["messages"]]
    assert sent == [["explain recursion"]]  # the refused exchange is not sent again
    stored = stored_messages(home, sid)
    refused_round = next(m for m in stored if m["type"] == "assistant")
    assert refused_round["opaque"] == [{"type": "tether.refused", "stop_details": STOP_DETAILS}]
    assert [m["type"] for m in stored] == ["user", "assistant", "user", "assistant"]


async def test_a_paused_anthropic_turn_goes_on(home: Path, project: Path) -> None:
    """`pause_turn`: Anthropic paused a long turn; the response goes back as it is and the
    model continues it (the turn does not end there)."""
    paused = [
        wire.anthropic_start(),
        *wire.anthropic_text_block(0, ["Searching the docs. "]),
        *wire.anthropic_end("pause_turn"),
    ]
    with MockLLMServer() as server:
        server.script(
            "/v1/messages",
            Reply(chunks=paused),
            Reply(chunks=wire.anthropic_text(["Found it."])),
        )
        async with spawn_agent(
            home, env=anthropic_env(server, "anthropic:claude-sonnet-5-5")
        ) as agent:
            await agent.initialize()
            sid = await agent.new_session(project)
            resp = await agent.prompt(sid, "look it up")
            shown = texts(agent, sid)
        bodies = [r.json() for r in server.posts]
    assert resp["result"] == {"stopReason": "end_turn"}
    assert shown == "Searching the docs. Found it."
    assert len(bodies) == 2
    last = bodies[1]["messages"][-1]
    assert last["role"] == "assistant"  # sent back as it is: no new user message
    assert [b.get("text") for b in last["content"] if b["type"] == "text"] == [
        "Searching the docs. "
    ]


# --- 4. Anthropic prompt caching --------------------------------------------------------------


def list_dir_call() -> list[bytes | float]:
    block = {"type": "tool_use", "id": "toolu_1", "name": "list_dir", "input": {}}
    deltas = [{"type": "input_json_delta", "partial_json": '{"path": "."}'}]
    return [
        wire.anthropic_start(input_tokens=300, cache_read=0),
        *wire.anthropic_block(0, block, deltas),
        *wire.anthropic_end("tool_use"),
    ]


def cached_answer() -> list[bytes | float]:
    return [
        wire.anthropic_start(input_tokens=40, cache_read=2000),
        *wire.anthropic_text_block(0, ["One file."]),
        *wire.anthropic_end(),
    ]


def breakpoints(body: dict[str, Any]) -> list[str]:
    found = ["system" for b in body["system"] if "cache_control" in b]
    for i, m in enumerate(body["messages"]):
        found += [f"{m['role']}[{i}]:{b['type']}" for b in m["content"] if "cache_control" in b]
    return found


async def test_a_tool_loop_reads_the_prompt_cache(home: Path, project: Path) -> None:
    with MockLLMServer() as server:
        server.script("/v1/messages", Reply(chunks=list_dir_call()), Reply(chunks=cached_answer()))
        async with spawn_agent(
            home, env=anthropic_env(server, "anthropic:claude-opus-5-5")
        ) as agent:
            await agent.initialize()
            sid = await agent.new_session(project)
            assert (await agent.prompt(sid, "what is here?"))["result"] == {
                "stopReason": "end_turn"
            }
        first, second = (r.json() for r in server.posts)
    assert breakpoints(first) == ["system", "user[0]:text"]
    assert breakpoints(second) == ["system", "user[0]:text", "user[2]:tool_result"]
    assert second["system"] == first["system"] and second["tools"] == first["tools"]
    usage = [u for u in agent.updates(sid) if u["sessionUpdate"] == "usage_update"]
    counts = usage[1]["_meta"]["tether"]
    # message_start: 40 fresh + 5 written to the cache + 2000 read from it
    assert counts == {"inputTokens": 2045, "cachedInputTokens": 2000, "outputTokens": 33}
    # Opus 5.5: $4 fresh, $0.20 cached, $20 out per million, both rounds summed.
    round1 = (305 * 4 + 33 * 20) / 1e6
    round2 = (45 * 4 + 2000 * 0.2 + 33 * 20) / 1e6
    assert usage[1]["cost"]["amount"] == pytest.approx(round1 + round2)


# --- 5. a model switch on the Responses API ---------------------------------------------------


async def test_switching_to_a_model_that_does_not_reason(
    home: Path, project: Path, tmp_path: Path
) -> None:
    answer = (
        wire.ResponsesScript()
        .created()
        .reasoning(0, ["Plan"], encrypted="gAAAA-secret")
        .text_deltas(1, ["Hi"])
        .text_done(1, ["Hi"])
        .completed()
    )
    with MockLLMServer() as server:
        server.script(
            "/v1/responses", Reply(chunks=answer), Reply(chunks=wire.responses_text(["ok"]))
        )
        text = (
            f'[providers.p]\nkind = "openai-responses"\nbase_url = "{server.url}/v1"\n'
            f'api_key = "{KEY}"\n\n[models."p:gpt-4.1"]\n\n[defaults]\nmodel = "p:gpt-5.5"\n'
        )
        with config(tmp_path, text) as env:
            async with spawn_agent(home, env=env) as agent:
                await agent.initialize()
                sid = await agent.new_session(project)
                assert (await agent.prompt(sid, "hi"))["result"] == {"stopReason": "end_turn"}
                await agent.request(
                    "session/set_config_option",
                    {"sessionId": sid, "configId": "model", "value": "p:gpt-4.1"},
                )
                second = await agent.prompt(sid, "and now?")
        first_body, second_body = (r.json() for r in server.posts)
    assert second["result"] == {"stopReason": "end_turn"}
    assert first_body["include"] == ["reasoning.encrypted_content"]
    assert [i["type"] for i in second_body["input"]] == ["message", "message", "message"]
    assert "include" not in second_body and "reasoning" not in second_body


# --- 6. DeepSeek's anthropic convention -------------------------------------------------------


def deepseek_call() -> list[bytes | float]:
    thinking = wire.anthropic_block(
        0,
        {"type": "thinking", "thinking": ""},
        [{"type": "thinking_delta", "thinking": "List the project first."}],
    )
    block = {"type": "tool_use", "id": "toolu_1", "name": "list_dir", "input": {}}
    deltas = [{"type": "input_json_delta", "partial_json": '{"path": "."}'}]
    return [
        wire.anthropic_start(),
        *thinking,
        *wire.anthropic_block(1, block, deltas),
        *wire.anthropic_end("tool_use"),
    ]


async def test_deepseek_anthropic_thinking_round_trip(
    home: Path, project: Path, tmp_path: Path
) -> None:
    route = "/anthropic/v1/messages"
    with MockLLMServer(dialect="deepseek") as server:
        server.script(
            route,
            Reply(chunks=deepseek_call()),
            Reply(chunks=wire.anthropic_text(["One file."])),
            Reply(chunks=wire.anthropic_text(["Sure."])),
        )
        text = (
            f'[providers.ds]\nkind = "deepseek-anthropic"\nbase_url = "{server.url}/anthropic"\n'
            f'api_key = "{KEY}"\n\n[defaults]\nmodel = "ds:deepseek-v4-pro"\n'
        )
        with config(tmp_path, text) as env:
            async with spawn_agent(home, env=env) as agent:
                await agent.initialize()
                sid = await agent.new_session(project)
                done = await agent.prompt(sid, "what is here?")
                assert done["result"] == {"stopReason": "end_turn"}
                await agent.request(
                    "session/set_config_option",
                    {"sessionId": sid, "configId": "reasoning", "value": "none"},
                )
                assert (await agent.prompt(sid, "thanks"))["result"] == {"stopReason": "end_turn"}
        bodies = [r.json() for r in server.posts]
    assert server.rule_errors == []
    first, second, third = bodies
    assert first["thinking"]["type"] == "enabled" and first["output_config"] == {"effort": "high"}
    assistant = second["messages"][1]["content"]
    assert assistant[0] == {
        "type": "thinking",
        "thinking": "List the project first.",
        "signature": "",
    }
    assert third["thinking"] == {"type": "disabled"} and "output_config" not in third
    assert all("cache_control" not in json.dumps(b) for b in bodies)


# --- 7. retries -------------------------------------------------------------------------------


async def test_an_exhausted_quota_is_said_once_in_words(home: Path, project: Path) -> None:
    quota = {
        "error": {
            "message": "You exceeded your current quota, please check your plan and billing details.",
            "type": "insufficient_quota",
            "param": None,
            "code": "insufficient_quota",
        }
    }
    with MockLLMServer() as server:
        server.script(
            "/v1/chat/completions",
            Reply(status=429, body=json.dumps(quota).encode(), headers={"retry-after": "0"}),
            Reply(chunks=wire.chat_text(["never"])),
        )
        async with spawn_agent(home, env=openai_env(server, "openai:gpt-5.4")) as agent:
            await agent.initialize(session={"notices": {}})
            sid = await agent.new_session(project)
            resp = await agent.prompt(sid, "hi")
        assert len(server.posts) == 1
    message = resp["error"]["message"]
    assert resp["error"]["code"] == -32010
    assert "no quota left" in message and "add credit or raise the spending limit" in message
    assert [u for u in agent.updates(sid) if u["sessionUpdate"] == "notice"] == []


async def test_a_409_is_retried(home: Path, project: Path) -> None:
    with MockLLMServer() as server:
        server.script(
            "/v1/chat/completions",
            error_reply(409, "conflict", {"retry-after": "0"}),
            Reply(chunks=wire.chat_text(["ok"])),
        )
        async with spawn_agent(home, env=openai_env(server, "openai:gpt-5.4")) as agent:
            await agent.initialize(session={"notices": {}})
            sid = await agent.new_session(project)
            assert (await agent.prompt(sid, "hi"))["result"] == {"stopReason": "end_turn"}
        assert len(server.posts) == 2
    [notice] = [u for u in agent.updates(sid) if u["sessionUpdate"] == "notice"]
    assert "HTTP 409: conflict" in notice["title"]
