"""A day of real work, through `tether acp` against a loopback OpenAI-compatible server that
decides each answer from the request it gets: hundreds of rounds in a small window, a kill in the
middle of a tool batch and `/retry`, a provider that is down for a while, the round limit."""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support.harness import AgentProcess, spawn_agent
from tests.support.providers import wire
from tests.support.providers.mock_llm_server import MockLLMServer, Recorded, Reply, error_reply

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

# Small: a day's work overflows it many times. Every request carries the system prompt and the
# tool schemas (about 9k tokens once skill writing and the todo stack came: this server counts 4
# bytes of JSON a token), so the conversation has a few hundred tokens beside them and hundreds of
# rounds must be compacted.
WINDOW = 10_000
OUTPUT = 512


def _config(tmp_path: Path, server: MockLLMServer, **agent: Any) -> Path:
    lines = [
        "[providers.loop]",
        'kind = "openai"',
        f'base_url = "{server.url}/v1"',
        "builtin_models = false",
        '[models."loop:tiny"]',
        f"context_window = {WINDOW}",
        f"max_output_tokens = {OUTPUT}",
        "[defaults]",
        'model = "loop:tiny"',
    ]
    if agent:
        lines.append("[agent]")
        lines += [f"{k} = {json.dumps(v)}" for k, v in agent.items()]
    path = tmp_path / "config.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def _env(config: Path) -> dict[str, str]:
    return {"TETHER_CONFIG": str(config)}


def _usage(size: int) -> dict[str, Any]:
    return {"prompt_tokens": size, "completion_tokens": 20, "total_tokens": size + 20}


def _all_text(body: dict[str, Any]) -> str:
    return json.dumps(body["messages"])


class Conversation:
    """The server's side of a long session: four tool rounds per turn, then an answer; a
    summarisation request (no tools) is answered with every marker it carries, so markers only
    reach later requests through the chain of summaries."""

    def __init__(self) -> None:
        self.sizes: list[tuple[int, int]] = []  # (request tokens, output budget) per POST
        self.summary_requests: list[str] = []
        self.calls = 0
        self.rounds = 0

    def __call__(self, request: Recorded) -> Reply:
        if request.method != "POST":
            return error_reply(404, "no model list here")
        body = request.json()
        size = len(request.body) // 4  # this server's tokenizer: 4 bytes of request a token
        limit = body.get("max_completion_tokens") or body.get("max_tokens") or 0
        self.sizes.append((size, limit))
        if not body.get("tools"):
            text = _all_text(body)
            self.summary_requests.append(text)
            markers = " ".join(sorted(set(re.findall(r"MARKER-\d+", text))))
            summary = f"Summary: files were read turn after turn. Markers: {markers or 'none'}."
            return Reply(chunks=wire.chat_prefix([summary]) + wire.chat_end(usage=_usage(size)))
        self.rounds += 1
        if self.rounds % 5:  # each turn: four rounds of a tool call, then the answer
            self.calls += 1
            call = wire.chat_call("read_file", {"path": "big.txt"}, f"call_{self.calls}")
            return Reply(chunks=_with_usage(call, size))
        return Reply(chunks=wire.chat_prefix(["Turn done."]) + wire.chat_end(usage=_usage(size)))


def _with_usage(chunks: list[bytes | float], size: int) -> list[bytes | float]:
    """A streamed answer whose usage chunk reports `size` prompt tokens."""
    out: list[bytes | float] = []
    for c in chunks:
        if isinstance(c, bytes) and b'"usage"' in c:
            c = wire.chat_chunk(None, usage=_usage(size))
        out.append(c)
    return out


async def test_a_300_round_session_in_a_small_window(
    home: Path, project: Path, tmp_path: Path
) -> None:
    (project / "big.txt").write_text("".join(f"line {i:04d} of a big file\n" for i in range(90)))
    conversation = Conversation()
    with MockLLMServer() as server:
        server.responder = conversation
        config = _config(tmp_path, server)
        async with spawn_agent(home, env=_env(config)) as agent:
            await agent.initialize()
            sid = await agent.new_session(project)
            for turn in range(60):  # 5 rounds each: 4 tool rounds and the answer
                marker = f" MARKER-{turn:03d}" if turn < 8 else ""
                answer = await agent.prompt(sid, f"turn {turn}: read big.txt again.{marker}", 60)
                assert answer["result"]["stopReason"] == "end_turn", answer
    posts = [s for s in conversation.sizes]
    assert len(posts) >= 300 and conversation.summary_requests
    too_big = [(size, limit) for size, limit in posts if size + limit > WINDOW]
    assert too_big == []  # every request fits the window, its reply's budget included
    first = next(i for i, text in enumerate(conversation.summary_requests) if "MARKER-000" in text)
    assert all(f"MARKER-{t:03d}" in conversation.summary_requests[-1] for t in range(8))
    assert first >= 0
    last_request = server.posts[-1].json()
    carried = _all_text(last_request)
    assert all(f"MARKER-{t:03d}" in carried for t in range(8))  # through the chain of summaries
    assert not any("Markers: none" in s for s in conversation.summary_requests[1:])


async def test_a_kill_in_the_middle_of_a_batch_then_retry_runs_nothing_twice(
    home: Path, project: Path, tmp_path: Path
) -> None:
    """Two commands in one round: the quick one appends a line to a file and finishes, the
    slow one is still running when tether is killed. After a restart, /retry goes on: the
    quick one is not run again (the file has one line), the slow one is answered as
    interrupted, and the turn completes."""
    append = [sys.executable, "-c", "open('log.txt', 'a').write('ran\\n')"]
    calls = [
        {"index": 0, "id": "c_append", "type": "function",
         "function": {"name": "run_argv", "arguments": json.dumps({"argv": append})}},
        {"index": 1, "id": "c_sleep", "type": "function",
         "function": {"name": "run_argv", "arguments": json.dumps({"argv": ["sleep", "60"]})}},
    ]  # fmt: skip
    batch = [
        wire.chat_chunk({"role": "assistant", "tool_calls": calls}),
        *wire.chat_end("tool_calls"),
    ]
    with MockLLMServer() as server:
        server.script("/v1/chat/completions", Reply(chunks=batch))
        config = _config(tmp_path, server)
        async with spawn_agent(home, env=_env(config)) as first:
            await first.initialize()
            sid = await first.new_session(project)
            await first.request(
                "session/set_mode", {"sessionId": sid, "modeId": "code"}
            )  # commands run in the sandbox without asking
            await first.start_request(
                "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]}
            )
            await _until_completed(first, "c_append")
            first.proc.kill()  # SIGKILL while `sleep 60` runs
            await first.wait_exit()
        assert (project / "log.txt").read_text() == "ran\n"
        server.script("/v1/chat/completions", Reply(chunks=wire.chat_text(["All done."])))
        async with spawn_agent(home, env=_env(config)) as second:
            await second.initialize()
            await second.request(
                "session/load", {"sessionId": sid, "cwd": str(project), "mcpServers": []}
            )
            answer = await second.prompt(sid, "/retry")
        assert answer["result"]["stopReason"] == "end_turn"
        messages = server.posts[-1].json()["messages"]
    assert (project / "log.txt").read_text() == "ran\n"  # the committed call did not run again
    results = {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}
    assert "exit code 0" in results["c_append"]
    assert "tether stopped while this call ran" in results["c_sleep"]
    assert [m["role"] for m in messages][-3:] == ["assistant", "tool", "tool"]


async def _until_completed(agent: AgentProcess, call_id: str) -> None:
    while True:
        frame = await agent.recv(30)
        update = frame.get("params", {}).get("update", {})
        if update.get("toolCallId") == call_id and update.get("status") == "completed":
            return


async def test_a_provider_down_for_a_while_is_waited_out_with_a_countdown(
    home: Path, project: Path, tmp_path: Path
) -> None:
    with MockLLMServer() as server:
        down = [error_reply(503, "the service is overloaded") for _ in range(6)]
        server.script("/v1/chat/completions", *down, Reply(chunks=wire.chat_text(["Back."])))
        config = _config(tmp_path, server, retry_delays=[0.1, 0.2, 0.3], retry_step=0.1)
        async with spawn_agent(home, env=_env(config)) as agent:
            await agent.initialize(session={"notices": {}})
            sid = await agent.new_session(project)
            answer = await agent.prompt(sid, "hello", 30)
    assert answer["result"]["stopReason"] == "end_turn"
    waits = [
        u["title"] for u in agent.updates(sid)
        if u["sessionUpdate"] == "notice" and "retrying in" in u["title"]
    ]  # fmt: skip
    assert len(waits) == 6 and all("503" in w for w in waits)
    assert [u for u in agent.updates(sid) if u["sessionUpdate"] == "agent_message_chunk"]


async def test_a_cancel_during_a_wait_ends_the_turn_at_once(
    home: Path, project: Path, tmp_path: Path
) -> None:
    with MockLLMServer() as server:
        server.script("/v1/chat/completions", error_reply(503, "down", {"retry-after": "60"}))
        config = _config(tmp_path, server)
        async with spawn_agent(home, env=_env(config)) as agent:
            await agent.initialize(session={"notices": {}})
            sid = await agent.new_session(project)
            params = {"sessionId": sid, "prompt": [{"type": "text", "text": "hello"}]}
            rid = await agent.start_request("session/prompt", params)
            while not any(u["sessionUpdate"] == "notice" for u in agent.updates(sid)):
                await agent.recv()
            started = time.perf_counter()
            await agent.notify("session/cancel", {"sessionId": sid})
            answer = await agent.until_response(rid)
            took = time.perf_counter() - started
    assert answer["result"]["stopReason"] == "cancelled"
    print(f"cancel during a 60 s wait answered in {took * 1000:.0f} ms")
    assert took < 60 / 100  # a hundredth of the wait: the wait itself was cut


async def test_tether_ask_follows_yes_and_no_at_the_round_limit(
    home: Path, project: Path, tmp_path: Path
) -> None:
    from tests.support.harness import REPO, script

    rounds: list[list[dict[str, Any]]] = [
        [{"tool_call": {"id": f"l{i}", "name": "list_dir", "arguments": {}}}] for i in range(4)
    ]
    rounds.append([{"text": "finished"}])
    path = script(tmp_path / "s.json", rounds)
    config = tmp_path / "limits.toml"
    config.write_text("[agent]\nmax_rounds = 3\n")
    env = {"TETHER_HOME": str(home), "TETHER_CONFIG": str(config), "PYTHONPATH": str(REPO)}
    outcomes = {}
    for answer in ("--yes", "--no"):
        done = await anyio.run_process(
            [sys.executable, "-m", "tether", "ask", answer, "--script", str(path),
             "--cwd", str(project), "go"],
            env={**__import__("os").environ, **env},
            check=False,
        )  # fmt: skip
        outcomes[answer] = done.stdout.decode() + done.stderr.decode()  # answer + cards
    assert "[stop: end_turn]" in outcomes["--yes"] and "finished" in outcomes["--yes"]
    assert "[stop: max_turn_requests]" in outcomes["--no"]


async def test_retry_after_a_provider_error_goes_on_with_the_same_turn(
    home: Path, project: Path, tmp_path: Path
) -> None:
    with MockLLMServer() as server:
        refused = error_reply(400, "the request was refused for a reason this test made up")
        server.script("/v1/chat/completions", refused, Reply(chunks=wire.chat_text(["Done."])))
        config = _config(tmp_path, server)
        async with spawn_agent(home, env=_env(config)) as agent:
            await agent.initialize()
            sid = await agent.new_session(project)
            failed = await agent.prompt(sid, "do the thing")
            retried = await agent.prompt(sid, "/retry")
            again = await agent.prompt(sid, "/retry")
            shown = [
                u["content"]["text"] for u in agent.updates(sid)
                if u["sessionUpdate"] == "agent_message_chunk"
            ]  # fmt: skip
        messages = server.posts[-1].json()["messages"]
    assert failed["error"]["code"] == -32010
    assert retried["result"]["stopReason"] == "end_turn"
    assert again["result"]["stopReason"] == "end_turn"
    assert [m["role"] for m in messages] == ["system", "user"]  # the same turn, not a new one
    assert messages[1]["content"] == "do the thing"
    assert any("Nothing to retry: the last turn finished." in t for t in shown)


async def test_compact_by_hand_summarises_and_a_reload_shows_where(
    home: Path, project: Path, tmp_path: Path
) -> None:
    conversation = Conversation()
    conversation.rounds = 4  # every request is answered with text: a turn is one round

    with MockLLMServer() as server:
        server.responder = conversation
        config = _config(tmp_path, server)
        async with spawn_agent(home, env=_env(config)) as agent:
            await agent.initialize()
            sid = await agent.new_session(project)
            for n in range(3):
                conversation.rounds = 4
                await agent.prompt(sid, f"question {n} MARKER-{n:03d}")
            compacted = await agent.prompt(sid, "/compact keep the markers")
            conversation.rounds = 4
            await agent.prompt(sid, "after the compaction")
        after = server.posts[-1].json()["messages"]
        async with spawn_agent(home, env=_env(config)) as reloaded:
            await reloaded.initialize()
            params = {"sessionId": sid, "cwd": str(project), "mcpServers": []}
            await reloaded.request("session/load", params)
            replayed = json.dumps(reloaded.updates(sid))
    assert compacted["result"]["stopReason"] == "end_turn"
    [summary_request] = conversation.summary_requests
    assert "Focus on: keep the markers" in summary_request
    assert all(f"question {n} MARKER-{n:03d}" in summary_request for n in range(3))
    assert [m["role"] for m in after] == ["system", "user", "user"]
    assert "MARKER-002" in after[1]["content"] and after[2]["content"] == "after the compaction"
    assert "Context compacted here: the 6 messages before this point" in replayed
    assert "question 0 MARKER-000" in replayed  # the reload still shows everything
