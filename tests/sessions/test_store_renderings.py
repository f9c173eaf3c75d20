"""Renderings kept beside the stored events (tether/engine/sessions/renderings.py): a replay reads them
instead of the events, only the current renderer's count, client-dependent and huge ones are not
kept, an older store's events get theirs at their first replay, and a replay reads any part of
the rows with prompts stored by reference resolved. A real SQLite file throughout."""

from __future__ import annotations

from pathlib import Path

import apsw
import pytest

from tether.engine import events as ev
from tether.engine.history import TextPart, UserMessage
from tether.engine.sessions.migrations import migrate
from tether.engine.sessions.renderings import MAX_RENDERING, Renderer, Replay
from tether.engine.sessions.state import Session, SessionState
from tether.engine.sessions.store import Store

pytestmark = pytest.mark.anyio


def _renderer(tag: str) -> Renderer:
    def render(event: ev.Event) -> bytes | None:
        if isinstance(event, ev.Notice):
            return None
        if isinstance(event, ev.ToolStarted):
            return event.title.encode() * (MAX_RENDERING // len(event.title) + 1)
        return type(event).__name__.encode()

    return Renderer(lambda: tag, render)


async def _saved(path: Path, renderer: Renderer | None) -> Session:
    """A session with a prompt (stored by reference), text, a notice and a huge rendering."""
    store = Store(path, renderer)
    s = Session("sess_r", "/p", SessionState(model="demo"))
    parts: list[TextPart] = [TextPart("hello")]
    s.history.append(UserMessage(list(parts)))
    s.record(ev.UserPrompted(list(parts), message=0))
    s.record(ev.TextDelta("m1", "hi"))
    s.pending_events.append(ev.Notice("warning", "slow"))  # live only today; stored here
    s.record(ev.ToolStarted("c1", "write_file", "Write a.txt", "edit", {}))
    s.record(ev.TitleChanged("greeting"))
    await store.save(s)
    await store.close()
    return s


async def _replay(store: Store, start: int = 0, stop: int = 100) -> Replay:
    return await store.replay("sess_r", None, start, stop)


async def test_a_replay_reads_the_renderings_kept_and_the_events_elsewhere(
    tmp_path: Path,
) -> None:
    await _saved(tmp_path / "t.db", _renderer("a"))
    store = Store(tmp_path / "t.db", _renderer("a"))
    shown = await _replay(store)
    await store.close()
    assert shown.items[:2] == [b"UserPrompted", b"TextDelta"]
    assert shown.items[2] == ev.Notice("warning", "slow")  # per client: not kept
    assert isinstance(shown.items[3], ev.ToolStarted)  # over MAX_RENDERING: not kept
    assert shown.items[4] == b"TitleChanged"
    assert shown.missing == [2, 3]


async def test_another_renderers_renderings_are_not_used(tmp_path: Path) -> None:
    await _saved(tmp_path / "t.db", _renderer("a"))
    for renderer in (_renderer("b"), None):
        store = Store(tmp_path / "t.db", renderer)
        shown = await _replay(store)
        await store.close()
        assert not any(isinstance(item, bytes) for item in shown.items)
        assert shown.items[0] == ev.UserPrompted([TextPart("hello")], 0)  # its parts again
        assert shown.missing == [0, 1, 2, 3, 4]


async def test_renderings_made_at_a_replay_are_kept_for_the_next(tmp_path: Path) -> None:
    await _saved(tmp_path / "t.db", None)  # as an older tether stored it
    store = Store(tmp_path / "t.db", _renderer("a"))
    assert (await _replay(store)).missing == [0, 1, 2, 3, 4]
    await store.keep_renderings("sess_r", [(0, b"made 0"), (4, b"made 4")])
    shown = await _replay(store)
    await store.close()
    assert shown.items[0] == b"made 0" and shown.items[4] == b"made 4"
    assert shown.missing == [1, 2, 3]


async def test_a_replay_reads_a_part_of_the_rows(tmp_path: Path) -> None:
    await _saved(tmp_path / "t.db", None)
    store = Store(tmp_path / "t.db", _renderer("a"))
    assert await store.event_end("sess_r") == 5
    assert await store.event_end("nope") == 0
    first, rest = await _replay(store, 0, 1), await _replay(store, 1, 5)
    await store.close()
    assert first.items == [ev.UserPrompted([TextPart("hello")], 0)] and first.missing == [0]
    assert rest.missing == [1, 2, 3, 4] and rest.items[0] == ev.TextDelta("m1", "hi")


async def test_a_store_without_renderings_is_migrated_and_replayed(tmp_path: Path) -> None:
    db = apsw.Connection(str(tmp_path / "t.db"))
    migrate(db, upto=2)
    db.execute(
        "INSERT INTO sessions VALUES('sess_r', '/p', NULL, 't', 't', ?)", (b'{"model":"demo"}',)
    )
    db.execute(
        "INSERT INTO events VALUES('sess_r', 0, ?)",
        (b'{"type":"text_delta","message_id":"m","text":"old"}',),
    )
    db.close()
    store = Store(tmp_path / "t.db", _renderer("a"))
    shown = await _replay(store)
    await store.close()
    assert shown.items == [ev.TextDelta("m", "old")] and shown.missing == [0]
