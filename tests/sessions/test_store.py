"""The session store: a real SQLite file, reopened as a later process would."""

from __future__ import annotations

from pathlib import Path

import apsw
import pytest

from tether.engine.grants import Grant
from tether.engine.history import (
    AssistantMessage,
    TextPart,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from tether.engine.sessions.migrations import SCHEMA_VERSION
from tether.engine.sessions.state import Session, SessionState
from tether.engine.sessions.store import Store

pytestmark = pytest.mark.anyio


async def test_sessions_round_trip_and_history_appends(tmp_path: Path) -> None:
    store = Store(tmp_path / "t.db")
    state = SessionState(mode="code", model="demo", roots=["/p"])
    state.grants.add(Grant("write_file", "/p/src/", "allow"))
    s = Session("sess_1", "/p", state, [UserMessage([TextPart("hi")])], title="hi")
    await store.save(s)
    s.history += [
        AssistantMessage("ok", tool_calls=[ToolCall("c1", "list_dir", "{}")]),
        ToolResultMessage("c1", "list_dir", ".: 0 entries"),
    ]
    await store.save(s)
    assert s.saved_messages == 3
    await store.close()

    again = await Store(tmp_path / "t.db").load("sess_1")
    assert again is not None
    assert again.history == s.history and again.state == s.state and again.title == "hi"
    assert again.state.grants.match("write_file", "/p/src/a.py") == Grant(
        "write_file", "/p/src/", "allow"
    )
    assert await Store(tmp_path / "t.db").load("nope") is None


async def test_a_store_from_a_newer_tether_is_refused(tmp_path: Path) -> None:
    db = apsw.Connection(str(tmp_path / "t.db"))
    db.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    db.close()
    with pytest.raises(RuntimeError, match="newer tether"):
        await Store(tmp_path / "t.db").list(None, None, 10)


def test_superseded_output_updates_are_not_stored() -> None:
    from tether.engine import events as ev

    running: list[ev.Event] = [
        ev.ToolUpdated("c1", content=[ev.TextOut(f"line {i}")]) for i in range(50)
    ]
    finished = ev.ToolFinished("c1", "completed", [ev.TextOut("all")])
    kept = ev.coalesce([ev.ToolUpdated("c1", status="in_progress"), *running, finished])
    assert kept == [ev.ToolUpdated("c1", status="in_progress"), finished]
    still_running = ev.coalesce(running)
    assert still_running == [running[-1]]  # the latest output of a call still running stays
