"""live == replay: for any turn, what the store replays through the translator is what the client
saw live (message chunks merged per message; the user's own prompt replayed first)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import anyio
import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.inprocess import agent_in_memory
from tether.engine.store import Store
from tether.rpc.acp.translate import replay
from tether.tools import catalog

LIVE_ONLY = {"available_commands_update", "session_info_update"}  # session-level, not turn events

words = st.lists(st.sampled_from(["alpha ", "beta ", "gamma ", "δ ", "\n"]), min_size=1, max_size=4)
calls = st.sampled_from(
    [
        ("list_dir", {"path": "."}),
        ("read_file", {"path": "README.md", "with_lineno": True}),
        ("read_file", {"path": "missing.txt"}),
        ("todo_write", {"todos": [{"content": "look", "status": "in_progress"}]}),
        ("no_such_tool", {}),
    ]
)


@st.composite
def rounds(draw: st.DrawFn) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for n in range(draw(st.integers(0, 3))):
        events: list[dict[str, Any]] = []
        for piece in draw(words) if draw(st.booleans()) else []:
            events.append({"thought": piece})
        for piece in draw(words):
            events.append({"text": piece})
        for i, (name, args) in enumerate(draw(st.lists(calls, min_size=1, max_size=3))):
            events.append({"tool_call": {"id": f"r{n}c{i}", "name": name, "arguments": args}})
        if draw(st.booleans()):
            events.append({"usage": {"input": draw(st.integers(1, 5000)), "output": 7}})
        out.append({"events": events})
    out.append({"events": [{"text": piece} for piece in draw(words)]})
    return out


def merge_chunks(updates: list[dict[str, Any]]) -> list[dict[str, Any]]:
    merged: list[dict[str, Any]] = []
    for u in updates:
        last = merged[-1] if merged else None
        chunk = u["sessionUpdate"] in ("agent_message_chunk", "agent_thought_chunk")
        if (
            chunk
            and last
            and last["sessionUpdate"] == u["sessionUpdate"]
            and last.get("messageId") == u.get("messageId")
        ):
            merged[-1] = {
                **last,
                "content": {
                    **last["content"],
                    "text": last["content"]["text"] + u["content"]["text"],
                },
            }
        else:
            merged.append(u)
    return merged


async def scenario(script_rounds: list[dict[str, Any]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        home, project = Path(tmp) / "home", Path(tmp) / "project"
        home.mkdir()
        project.mkdir()
        (project / "README.md").write_text("# hi\n")
        async with agent_in_memory(home, {"rounds": script_rounds}, catalog()) as client:
            sid = await client.start(project)
            assert await client.prompt(sid, "go") == "end_turn"
        live = merge_chunks([u for u in client.updates if u["sessionUpdate"] not in LIVE_ONLY])
        store = Store(home / "tether.db")
        replayed = msgspec.to_builtins(replay(await store.events(sid), notices=False))
        await store.close()
    assert replayed[0] == {
        "sessionUpdate": "user_message_chunk",
        "content": {"type": "text", "text": "go"},
    }
    assert replayed[1:] == live


@settings(max_examples=25, deadline=None)
@given(rounds())
def test_live_equals_replay(script_rounds: list[dict[str, Any]]) -> None:
    anyio.run(scenario, script_rounds)
