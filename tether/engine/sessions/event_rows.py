"""The `events` table: what a client was shown in a session, in order, with a front's rendering
kept beside each event (engine/sessions/renderings.py). Synchronous: the store runs these on its
database thread."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from tether.engine.events import Event, UserPrompted
from tether.engine.history import Message, UserMessage, UserPart
from tether.engine.sessions.renderings import Replay
from tether.engine.sessions.state import Session

_encode = msgspec.json.Encoder().encode
_event = msgspec.json.Decoder(Event)
_message = msgspec.json.Decoder(Message)

Shown = Callable[[Event], tuple[bytes | None, int | None]]  # an event's rendering, its renderer


def append(
    db: Any, session_id: str, events: list[Event], where: Callable[[int], int | None], shown: Shown
) -> int:
    """Store events after the session's last; the row after the last one stored. `where`: the
    row number of a history entry (prompts are stored by reference to theirs)."""
    (start,) = db.execute(
        "SELECT COALESCE(MAX(seq) + 1, 0) FROM events WHERE session_id=?", (session_id,)
    ).fetchone()
    db.executemany(
        "INSERT INTO events(session_id, seq, body, shown, shown_by) VALUES(?, ?, ?, ?, ?)",
        [
            (session_id, start + i, _encode(_by_reference(e, where)), *shown(e))
            for i, e in enumerate(events)
        ],
    )
    return int(start) + len(events)


def end(db: Any, session_id: str) -> int:
    """The row number after the session's last event (events are only ever appended after
    it, so the rows before it are a stable snapshot to replay)."""
    (after,) = db.execute(
        "SELECT COALESCE(MAX(seq) + 1, 0) FROM events WHERE session_id=?", (session_id,)
    ).fetchone()
    return int(after)


def read_all(db: Any, session_id: str, loaded: Session | None) -> list[Event]:
    rows = db.execute(
        "SELECT body FROM events WHERE session_id=? ORDER BY seq", (session_id,)
    ).fetchall()
    return _resolved(db, session_id, loaded, [_event.decode(b) for (b,) in rows])


def read_replay(
    db: Any, renderer_id: int | None, session_id: str, loaded: Session | None, start: int, stop: int
) -> Replay:
    """The events at rows `start` to `stop` (excluded) for a replay by this renderer: its
    renderings where it kept them (the events are not even read), the events elsewhere."""
    rows = db.execute(
        "SELECT seq, CASE WHEN shown_by=?1 THEN shown END, "
        "CASE WHEN shown_by=?1 THEN NULL ELSE body END "
        "FROM events WHERE session_id=?2 AND seq >= ?3 AND seq < ?4 ORDER BY seq",
        (renderer_id, session_id, start, stop),
    ).fetchall()
    items: list[bytes | Event] = []
    events: list[Event] = []
    missing: list[int] = []
    at: list[int] = []  # where each event is in `items`
    for seq, shown, body in rows:
        if shown is None:
            at.append(len(items))
            events.append(_event.decode(body))
            items.append(events[-1])
            missing.append(seq)
        else:
            items.append(shown)
    for i, event in zip(at, _resolved(db, session_id, loaded, events), strict=True):
        items[i] = event
    return Replay(items, missing)


def keep_renderings(
    db: Any, renderer_id: int | None, session_id: str, shown: list[tuple[int, bytes]]
) -> None:
    with db:
        db.executemany(
            "UPDATE events SET shown=?, shown_by=? WHERE session_id=? AND seq=?",
            [(body, renderer_id, session_id, seq) for seq, body in shown],
        )


def renderer_id(db: Any, tag: str) -> int:
    with db:
        db.execute("INSERT OR IGNORE INTO renderers(tag) VALUES(?)", (tag,))
    (rid,) = db.execute("SELECT id FROM renderers WHERE tag=?", (tag,)).fetchone()
    return int(rid)


def _resolved(db: Any, session_id: str, loaded: Session | None, events: list[Event]) -> list[Event]:
    """The events with each prompt stored by reference given its parts again."""
    wanted = {
        e.message
        for e in events
        if isinstance(e, UserPrompted) and e.message is not None and not e.parts
    }
    if not wanted:
        return events
    if loaded is not None and loaded.history_loaded and wanted <= set(loaded.message_seqs):
        prompts = _prompts_of(loaded, wanted)
    else:
        prompts = _prompts(db, session_id, wanted)
    return [_resolve(e, prompts) for e in events]


def _prompts(db: Any, session_id: str, wanted: set[int]) -> dict[int, list[UserPart]]:
    """The parts of the user messages at the given rows, in one pass."""
    rows = db.execute(
        "SELECT seq, body FROM messages WHERE session_id=? "
        "AND seq IN (SELECT value FROM json_each(?))",
        (session_id, _encode(sorted(wanted)).decode()),
    ).fetchall()
    found: dict[int, list[UserPart]] = {}
    for seq, body in rows:
        message = _message.decode(body)
        found[seq] = message.parts if isinstance(message, UserMessage) else []
    return found


def _prompts_of(s: Session, wanted: set[int]) -> dict[int, list[UserPart]]:
    found: dict[int, list[UserPart]] = {}
    for seq, message in zip(s.message_seqs, s.history, strict=False):
        if seq in wanted and isinstance(message, UserMessage):
            found[seq] = message.parts
    return found


def _resolve(event: Event, prompts: dict[int, list[UserPart]]) -> Event:
    """A user prompt stored by reference takes its parts from the message it names."""
    if isinstance(event, UserPrompted) and event.message is not None and not event.parts:
        return UserPrompted(prompts.get(event.message, []), event.message)
    return event


def _by_reference(event: Event, where: Callable[[int], int | None]) -> Event:
    """The form an event is stored in: a prompt that is also a history message is stored once,
    in the message (a 100 MB prompt must not make a 200 MB database), named by its row number
    (another process may have appended to the same session in between)."""
    if isinstance(event, UserPrompted) and event.message is not None:
        row = where(event.message)
        return UserPrompted([], row) if row is not None else UserPrompted(event.parts)
    return event
