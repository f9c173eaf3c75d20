"""The `sessions` and `messages` tables: a session's row (its state, title, folder and lease) and
its history. Synchronous: the store runs these on its database thread."""

from __future__ import annotations

import time
from typing import Any

import msgspec

from tether.engine.events import Event
from tether.engine.history import Message
from tether.engine.sessions import event_rows
from tether.engine.sessions.folders import folder
from tether.engine.sessions.lease import free, held_elsewhere
from tether.engine.sessions.renderings import Replay
from tether.engine.sessions.state import Session, SessionState

_encode = msgspec.json.Encoder().encode
_state = msgspec.json.Decoder(SessionState)
_message = msgspec.json.Decoder(Message)


class SessionRow(msgspec.Struct, frozen=True):
    id: str
    cwd: str
    title: str | None
    updated_at: str


class CatchUp(msgspec.Struct):
    """What other processes stored in a session since this process last looked."""

    messages: list[Message]
    seqs: list[int]  # their row numbers
    state: SessionState | None  # the stored state (None: the row is gone)
    title: str | None
    replay: Replay  # the events this process has not shown
    event_end: int


def save(
    db: Any,
    s: Session,
    new: list[Message],
    events: list[Event],
    changed: set[int],
    shown: event_rows.Shown,
) -> tuple[list[int], int]:
    """Store the row, the changed and new messages and the events; the new messages' row
    numbers, and the row after the last event stored (0: none)."""
    with db:
        db.executemany(
            "UPDATE messages SET body=? WHERE session_id=? AND seq=?",
            [
                (_encode(s.history[i]), s.id, s.message_seqs[i])
                for i in sorted(changed)
                if i < len(s.message_seqs)
            ],
        )
        db.execute(
            "INSERT INTO sessions(id, cwd, title, created_at, updated_at, state) "
            "VALUES(?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET "
            "cwd=excluded.cwd, title=excluded.title, updated_at=excluded.updated_at, "
            "state=excluded.state",
            (s.id, s.cwd, s.title, s.updated_at, s.updated_at, _encode(s.state)),
        )
        seqs = _append_messages(db, s.id, new)

        def where(index: int) -> int | None:  # history index -> row number
            stored = s.message_seqs
            if index < len(stored):
                return stored[index]
            index -= len(stored)
            return seqs[index] if index < len(seqs) else None

        events_end = event_rows.append(db, s.id, events, where, shown) if events else 0
    return seqs, events_end


def _append_messages(db: Any, session_id: str, new: list[Message]) -> list[int]:
    """Messages appended after whatever is stored: another process (a second editor window)
    may have added to this session too, and nothing of it is overwritten."""
    if not new:
        return []
    (first,) = db.execute(
        "SELECT COALESCE(MAX(seq) + 1, 0) FROM messages WHERE session_id=?", (session_id,)
    ).fetchone()
    seqs = [first + i for i in range(len(new))]
    db.executemany(
        "INSERT INTO messages(session_id, seq, body) VALUES(?, ?, ?)",
        [(session_id, seq, _encode(m)) for seq, m in zip(seqs, new, strict=True)],
    )
    return seqs


def load(db: Any, session_id: str, history: bool) -> Session | None:
    row = db.execute(
        "SELECT cwd, title, updated_at, state FROM sessions WHERE id=?", (session_id,)
    ).fetchone()
    if row is None:
        return None
    s = Session(session_id, row[0], _state.decode(row[3]), [], row[1], row[2])
    s.event_end = event_rows.end(db, session_id)
    if history:
        fill_history(db, s)
    else:
        s.history_loaded = False
        s.message_seqs = [
            seq
            for (seq,) in db.execute(
                "SELECT seq FROM messages WHERE session_id=? ORDER BY seq", (session_id,)
            ).fetchall()
        ]
    return s


def fill_history(db: Any, s: Session) -> None:
    rows = db.execute(
        "SELECT seq, body FROM messages WHERE session_id=? ORDER BY seq", (s.id,)
    ).fetchall()
    s.history[:0] = [_message.decode(b) for (_, b) in rows]
    s.message_seqs = [seq for (seq, _) in rows]
    s.history_loaded = True


def take(db: Any, renderer_id: int | None, s: Session, holder: str, seconds: float) -> CatchUp:
    """Take the session's lease for a turn (HeldElsewhere when another live process has it),
    and read, in the same transaction, what other processes stored since this process last
    looked: messages after its last, the state row, the events it has not shown."""
    with db:
        now = time.time()
        row = db.execute(
            "SELECT lease_holder, lease_until, title, state FROM sessions WHERE id=?", (s.id,)
        ).fetchone()
        if row is not None:
            if not free(row[0], row[1], now=now):
                raise held_elsewhere(s.id, row[0], row[1])
            db.execute(
                "UPDATE sessions SET lease_holder=?, lease_until=? WHERE id=?",
                (holder, now + seconds, s.id),
            )
        rows = db.execute(
            "SELECT seq, body FROM messages WHERE session_id=? AND seq > ? ORDER BY seq",
            (s.id, s.message_seqs[-1] if s.message_seqs else -1),  # ascending
        ).fetchall()
        end = event_rows.end(db, s.id)
        start = min(s.event_end, end)
        unseen = (
            event_rows.read_replay(db, renderer_id, s.id, s, start, end)
            if start < end
            else Replay([], [])
        )
        return CatchUp(
            messages=[_message.decode(body) for (_, body) in rows],
            seqs=[seq for (seq, _) in rows],
            state=_state.decode(row[3]) if row is not None else None,
            title=row[2] if row is not None else None,
            replay=unseen,
            event_end=end,
        )


def set_lease(db: Any, session_id: str, holder: str, new: str | None, until: float | None) -> None:
    """Renew or give back a lease this holder has (one taken over meanwhile stays)."""
    with db:
        db.execute(
            "UPDATE sessions SET lease_holder=?, lease_until=? WHERE id=? AND lease_holder=?",
            (new, until, session_id, holder),
        )


def listed(db: Any, cwd: str | None, after: tuple[str, str] | None, limit: int) -> list[SessionRow]:
    """Sessions that were prompted (a session only opened, as editors do at every start, is
    nobody's conversation), newest first; `after` is the (updated_at, id) of the last row
    already seen."""
    sql = (
        "SELECT id, cwd, title, updated_at FROM sessions s WHERE EXISTS "
        "(SELECT 1 FROM messages m WHERE m.session_id = s.id)"
    )
    args: list[Any] = []
    if cwd is not None:
        sql += " AND cwd=?"
        args.append(folder(cwd))
    if after is not None:
        sql += " AND (updated_at < ? OR (updated_at = ? AND id < ?))"
        args += [after[0], after[0], after[1]]
    sql += " ORDER BY updated_at DESC, id DESC LIMIT ?"
    args.append(limit)
    return [SessionRow(*r) for r in db.execute(sql, args).fetchall()]


def delete(db: Any, session_id: str) -> bool:
    """Remove a session with its messages and events; False when there was none."""
    with db:
        db.execute("DELETE FROM messages WHERE session_id=?", (session_id,))
        db.execute("DELETE FROM events WHERE session_id=?", (session_id,))
        db.execute("DELETE FROM sessions WHERE id=?", (session_id,))
        return db.changes() > 0
