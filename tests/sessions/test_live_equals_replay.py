"""live == replay: for any turns, what the store replays through the translator is what the client
saw live (message chunks merged per message; the user's own prompts replayed in place). Turns
read, write, ask for permission (allowed, rejected, always, cancelled), get cancelled mid-round,
and run slash commands; the session's title is part of it. And `session/load` in a new agent,
which writes the renderings kept beside the events (read in parts of any size), sends exactly
that replay."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.inprocess import agent_in_memory
from tether.engine.sessions import stored_sessions
from tether.engine.sessions.store import Store
from tether.rpc.acp.translate import replay
from tether.tools import catalog

pytestmark = pytest.mark.slow

# Sent with the session's setup or a setting's change, not events of a turn: a reloaded session
# gets its commands and options in the session/load answer instead.
LIVE_ONLY = {"available_commands_update", "config_option_update", "current_mode_update"}
CHOICES = ["allow", "allow_always", "reject", "reject_always", None]

words = st.lists(st.sampled_from(["alpha ", "beta ", "gamma ", "δ ", "\n"]), min_size=1, max_size=4)
calls = st.sampled_from(
    [
        ("list_dir", {"path": "."}),
        ("read_file", {"path": "README.md", "start_line": 1, "with_lineno": True}),
        ("read_file", {"path": "missing.txt"}),
        ("todo_push", {"titles": ["look", "fix"]}),
        ("todo_update", {"number": 1, "status": "in_progress"}),
        ("no_such_tool", {}),
        ("write_file", {"path": "new.txt", "content": "fresh\n"}),
        ("write_file", {"path": "README.md", "content": "# changed\n", "overwrite": True}),
        ("write_file", {"path": "README.md", "content": "# hi\n", "overwrite": True}),
        ("write_file", {"path": "README.md", "content": "no overwrite\n"}),
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
    last: list[dict[str, Any]] = [{"text": piece} for piece in draw(words)]
    if draw(st.booleans()):  # the client cancels while the model is still streaming
        last += [{"text": "STOP"}, {"delay": 30}]
    out.append({"events": last})
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


async def scenario(
    script_rounds: list[dict[str, Any]], choice: str | None, command: str | None, part: int
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        home, project = Path(tmp) / "home", Path(tmp) / "project"
        home.mkdir()
        project.mkdir()
        (project / "README.md").write_text("# hi\n")
        async with agent_in_memory(home, {"rounds": script_rounds}, catalog()) as client:
            client.choice, client.cancel_on = choice, "STOP"
            sid = await client.start(project)
            prompts = ["go", *([command] if command else [])]
            stops = [await client.prompt(sid, p) for p in prompts]
            assert stops[0] in ("end_turn", "cancelled")
            assert stops[1:] in ([], ["end_turn"])
        live = merge_chunks([u for u in client.updates if u["sessionUpdate"] not in LIVE_ONLY])
        store = Store(home / "tether.db")
        replayed = msgspec.to_builtins(replay(await store.events(sid), notices=False))
        await store.close()
        async with agent_in_memory(home, {"rounds": []}, catalog()) as again:
            with _replay_part(part):
                loaded = await again.load(sid, project)
    assert [u for u in loaded if u["sessionUpdate"] not in LIVE_ONLY] == replayed
    users = [u for u in replayed if u["sessionUpdate"] == "user_message_chunk"]
    assert [u["content"]["text"] for u in users] == prompts
    assert replayed[0] == users[0]
    assert [u for u in replayed if u["sessionUpdate"] != "user_message_chunk"] == live
    assert {"sessionUpdate": "session_info_update", "title": "go"} in live


@contextmanager
def _replay_part(events: int) -> Iterator[None]:
    """Replays read `events` at a time (hypothesis runs many examples in one test: no fixture)."""
    saved = stored_sessions.REPLAY_PART
    stored_sessions.REPLAY_PART = events
    try:
        yield
    finally:
        stored_sessions.REPLAY_PART = saved


@settings(max_examples=30, deadline=None)
@given(
    rounds(),
    st.sampled_from(CHOICES),
    st.sampled_from([None, "/mode code", "/help"]),
    st.sampled_from([1, 3, 2048]),
)
def test_live_equals_replay(
    script_rounds: list[dict[str, Any]], choice: str | None, command: str | None, part: int
) -> None:
    anyio.run(scenario, script_rounds, choice, command, part)
