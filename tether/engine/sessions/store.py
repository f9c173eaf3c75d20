"""The session store: one SQLite file (apsw, WAL) in the user data dir.

All database work runs on one dedicated thread (a capacity limiter of 1), so the event loop never
blocks on disk. A turn commits the user message at once and each finished tool batch as it lands.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import msgspec

from tether.engine.events import Event, UserPrompted, coalesce
from tether.engine.history import Message, UserMessage, UserPart
from tether.engine.local.private_files import private_dir, private_file
from tether.engine.sessions.lease import HeldElsewhere, free
from tether.engine.sessions.renderings import Renderer, Replay
from tether.engine.sessions.state import Session, SessionState

log = logging.getLogger("tether.store")

Migration = str | Callable[[Any], None]  # SQL, or a step that needs Python (the file system)
_MIGRATIONS: list[Migration] = [
    """
    CREATE TABLE sessions(
        id TEXT PRIMARY KEY,
        cwd TEXT NOT NULL,
        title TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        state BLOB NOT NULL
    );
    CREATE INDEX sessions_by_cwd ON sessions(cwd, updated_at);
    CREATE INDEX sessions_by_time ON sessions(updated_at);
    CREATE TABLE messages(
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        body BLOB NOT NULL,
        PRIMARY KEY(session_id, seq)
    );
    """,
    """
    CREATE TABLE events(
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        body BLOB NOT NULL,
        PRIMARY KEY(session_id, seq)
    );
    """,
    # An event's rendering by a front (engine/sessions/renderings.py), and its renderer.
    """
    CREATE TABLE renderers(id INTEGER PRIMARY KEY, tag TEXT NOT NULL UNIQUE);
    ALTER TABLE events ADD COLUMN shown BLOB;
    ALTER TABLE events ADD COLUMN shown_by INTEGER;
    """,
    # Who writes the session's turns now, until when (tether/engine/sessions/lease.py).
    """
    ALTER TABLE sessions ADD COLUMN lease_holder TEXT;
    ALTER TABLE sessions ADD COLUMN lease_until REAL;
    """,
    # A folder is known by its real path: rows stored under a symlink or an unnormalised
    # spelling move to it.
    lambda db: _real_cwds(db),
]
UNPROMPTED_DAYS = 1  # a session never prompted is deleted after this (editors open one per start)

SCHEMA_VERSION = len(_MIGRATIONS)
_encode = msgspec.json.Encoder().encode
_state = msgspec.json.Decoder(SessionState)
_message = msgspec.json.Decoder(Message)
_event = msgspec.json.Decoder(Event)


class SessionRow(msgspec.Struct, frozen=True):
    id: str
    cwd: str
    title: str | None
    updated_at: str


@dataclass
class CatchUp:
    """What other processes stored in a session since this process last looked."""

    messages: list[Message]
    seqs: list[int]  # their row numbers
    state: SessionState | None  # the stored state (None: the row is gone)
    title: str | None
    replay: Replay  # the events this process has not shown
    event_end: int


class Store:
    """`renderer`: the front whose renderings are kept beside the events it stores."""

    def __init__(self, path: Path, renderer: Renderer | None = None) -> None:
        self.path = path
        self.renderer = renderer
        self._renderer_id: int | None = None
        self._limiter = anyio.CapacityLimiter(1)
        self._db: Any = None
        # Why the file could not be used (it is damaged, or no database): this run then keeps
        # its sessions in memory, and says so once (see SessionManager).
        self.damaged: str | None = None

    async def _run(self, fn: Any, *args: Any) -> Any:
        try:
            return await anyio.to_thread.run_sync(fn, *args, limiter=self._limiter)
        except Exception as exc:
            if self.damaged is not None or not is_damage(exc):
                raise
            await anyio.to_thread.run_sync(self._fall_back, exc, limiter=self._limiter)
            return await anyio.to_thread.run_sync(fn, *args, limiter=self._limiter)

    def _conn(self) -> Any:
        if self._db is None:
            try:
                self._db = self._open()
            except Exception as exc:
                if not is_damage(exc):
                    raise
                self._fall_back(exc)
        return self._db

    def _open(self) -> Any:
        import apsw

        private_dir(self.path.parent)
        private_file(self.path)  # prompts and file contents live here: owner only
        db = apsw.Connection(str(self.path))
        try:
            db.setbusytimeout(5000)
            db.execute("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON")
            migrate(db)
        except BaseException:
            db.close()
            raise
        for suffix in ("-wal", "-shm"):  # SQLite made them; an old one may be looser
            side = self.path.with_name(self.path.name + suffix)
            if side.exists():
                os.chmod(side, 0o600)
        if self.renderer is not None:
            self._renderer_id = _renderer_id(db, self.renderer.tag)
        _forget_unprompted(db)
        return db

    def _fall_back(self, exc: BaseException) -> None:
        """The file is unusable: the rest of this run keeps sessions in memory (new ones work;
        earlier ones cannot be loaded) and the user is told what to do."""
        import apsw

        self.damaged = f"{self.path}: {exc}"
        log.error("the session database is unusable (%s); keeping sessions in memory", exc)
        if self._db is not None:
            try:
                self._db.close()
            except Exception:
                pass
        db = apsw.Connection(":memory:")
        db.execute("PRAGMA foreign_keys=ON")
        migrate(db)
        if self.renderer is not None:
            self._renderer_id = _renderer_id(db, self.renderer.tag)
        self._db = db

    async def save(self, session: Session) -> None:
        """Write the session row and any history entries not yet stored."""
        new = session.history[session.saved_messages :]
        events, session.pending_events = session.pending_events, []
        changed, session.rewritten = session.rewritten, set()
        try:
            seqs, event_end = await self._run(self._save, session, new, coalesce(events), changed)
        except BaseException:
            session.pending_events[:0] = events  # not stored: keep them for the next save
            session.rewritten |= changed
            raise
        session.message_seqs += seqs
        session.event_end = max(session.event_end, event_end)

    def _save(
        self, s: Session, new: list[Message], events: list[Event], changed: set[int]
    ) -> tuple[list[int], int]:
        """Store the row, the changed and new messages and the events; the new messages' row
        numbers, and the row after the last event stored (0: none)."""
        db = self._conn()
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
                "title=excluded.title, updated_at=excluded.updated_at, state=excluded.state",
                (s.id, s.cwd, s.title, s.updated_at, s.updated_at, _encode(s.state)),
            )
            seqs: list[int] = []
            if new:
                # Appended after whatever is stored: another process (a second editor window)
                # may have added to this session too, and nothing of it is overwritten.
                (first,) = db.execute(
                    "SELECT COALESCE(MAX(seq) + 1, 0) FROM messages WHERE session_id=?", (s.id,)
                ).fetchone()
                seqs = [first + i for i in range(len(new))]
                db.executemany(
                    "INSERT INTO messages(session_id, seq, body) VALUES(?, ?, ?)",
                    [(s.id, seq, _encode(m)) for seq, m in zip(seqs, new, strict=True)],
                )
            where = [*s.message_seqs, *seqs]  # history index -> row number
            event_end = 0
            if events:
                row = db.execute(
                    "SELECT COALESCE(MAX(seq) + 1, 0) FROM events WHERE session_id=?", (s.id,)
                ).fetchone()
                db.executemany(
                    "INSERT INTO events(session_id, seq, body, shown, shown_by) "
                    "VALUES(?, ?, ?, ?, ?)",
                    [
                        (s.id, row[0] + i, _encode(_by_reference(e, where)), *self._shown(e))
                        for i, e in enumerate(events)
                    ],
                )
                event_end = row[0] + len(events)
        return seqs, event_end

    def _shown(self, event: Event) -> tuple[bytes | None, int | None]:
        """The rendering kept beside an event, and its renderer."""
        if self.renderer is None:
            return None, None
        shown = self.renderer.keep(event)
        return (shown, self._renderer_id) if shown is not None else (None, None)

    async def load(self, session_id: str, *, history: bool = True) -> Session | None:
        """The stored session; `history=False` leaves its messages on disk until
        `load_history` (a replayed session may never be prompted again)."""
        return await self._run(self._load, session_id, history)

    def _load(self, session_id: str, history: bool = True) -> Session | None:
        db = self._conn()
        row = db.execute(
            "SELECT cwd, title, updated_at, state FROM sessions WHERE id=?", (session_id,)
        ).fetchone()
        if row is None:
            return None
        s = Session(session_id, row[0], _state.decode(row[3]), [], row[1], row[2])
        s.event_end = self._event_end(session_id)
        if history:
            self._fill_history(db, s)
        else:
            s.history_loaded = False
            s.message_seqs = [
                seq
                for (seq,) in db.execute(
                    "SELECT seq FROM messages WHERE session_id=? ORDER BY seq", (session_id,)
                ).fetchall()
            ]
        return s

    async def load_history(self, session: Session) -> None:
        """Read the messages of a session loaded without them (see `load`)."""
        if not session.history_loaded:
            await self._run(lambda: self._fill_history(self._conn(), session))

    @staticmethod
    def _fill_history(db: Any, s: Session) -> None:
        rows = db.execute(
            "SELECT seq, body FROM messages WHERE session_id=? ORDER BY seq", (s.id,)
        ).fetchall()
        s.history[:0] = [_message.decode(b) for (_, b) in rows]
        s.message_seqs = [seq for (seq, _) in rows]
        s.history_loaded = True

    async def events(self, session_id: str, loaded: Session | None = None) -> list[Event]:
        """Everything a client was shown in this session, in order, for replay. `loaded`: the
        session as loaded, whose history gives the prompts stored by reference."""
        return await self._run(self._events, session_id, loaded)

    def _events(self, session_id: str, loaded: Session | None = None) -> list[Event]:
        db = self._conn()
        rows = db.execute(
            "SELECT body FROM events WHERE session_id=? ORDER BY seq", (session_id,)
        ).fetchall()
        return self._resolved(db, session_id, loaded, [_event.decode(b) for (b,) in rows])

    async def event_end(self, session_id: str) -> int:
        """The row number after the session's last event (events are only ever appended
        after it, so the rows before it are a stable snapshot to replay)."""
        return await self._run(self._event_end, session_id)

    def _event_end(self, session_id: str) -> int:
        (end,) = (
            self._conn()
            .execute(
                "SELECT COALESCE(MAX(seq) + 1, 0) FROM events WHERE session_id=?", (session_id,)
            )
            .fetchone()
        )
        return int(end)

    async def replay(
        self, session_id: str, loaded: Session | None, start: int, stop: int
    ) -> Replay:
        """The events at rows `start` to `stop` (excluded) for a replay by this store's
        renderer: its renderings where it kept them (the events are not even read), the events
        elsewhere."""
        return await self._run(self._replay, session_id, loaded, start, stop)

    def _replay(self, session_id: str, loaded: Session | None, start: int, stop: int) -> Replay:
        db = self._conn()
        rows = db.execute(
            "SELECT seq, CASE WHEN shown_by=?1 THEN shown END, "
            "CASE WHEN shown_by=?1 THEN NULL ELSE body END "
            "FROM events WHERE session_id=?2 AND seq >= ?3 AND seq < ?4 ORDER BY seq",
            (self._renderer_id, session_id, start, stop),
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
        for i, event in zip(at, self._resolved(db, session_id, loaded, events), strict=True):
            items[i] = event
        return Replay(items, missing)

    async def keep_renderings(self, session_id: str, shown: list[tuple[int, bytes]]) -> None:
        """Keep renderings made at a replay for events stored without one (an older tether,
        another front), so the next replay of the session need not translate them."""
        if self.renderer is not None and shown:
            await self._run(self._keep_renderings, session_id, shown)

    def _keep_renderings(self, session_id: str, shown: list[tuple[int, bytes]]) -> None:
        db = self._conn()
        with db:
            db.executemany(
                "UPDATE events SET shown=?, shown_by=? WHERE session_id=? AND seq=?",
                [(body, self._renderer_id, session_id, seq) for seq, body in shown],
            )

    def _resolved(
        self, db: Any, session_id: str, loaded: Session | None, events: list[Event]
    ) -> list[Event]:
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
            prompts = self._prompts(db, session_id, wanted)
        return [_resolve(e, prompts) for e in events]

    @staticmethod
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

    # --- one writer at a time (engine/sessions/lease.py) ----------------------------------

    async def take(self, s: Session, holder: str, seconds: float) -> CatchUp:
        """Take the session's lease for a turn (HeldElsewhere when another live process has
        it), and read, in the same transaction, what other processes stored since this
        process last looked: messages after its last, the state row, events it has not shown."""
        return await self._run(self._take, s, holder, seconds)

    def _take(self, s: Session, holder: str, seconds: float) -> CatchUp:
        db = self._conn()
        with db:
            now = time.time()
            row = db.execute(
                "SELECT lease_holder, lease_until, title, state FROM sessions WHERE id=?", (s.id,)
            ).fetchone()
            if row is not None:
                if not free(row[0], row[1], now=now):
                    raise HeldElsewhere(s.id, row[0], row[1])
                db.execute(
                    "UPDATE sessions SET lease_holder=?, lease_until=? WHERE id=?",
                    (holder, now + seconds, s.id),
                )
            last = max(s.message_seqs, default=-1)
            rows = db.execute(
                "SELECT seq, body FROM messages WHERE session_id=? AND seq > ? ORDER BY seq",
                (s.id, last),
            ).fetchall()
            end = self._event_end(s.id)
            start = min(s.event_end, end)
            return CatchUp(
                messages=[_message.decode(body) for (_, body) in rows],
                seqs=[seq for (seq, _) in rows],
                state=_state.decode(row[3]) if row is not None else None,
                title=row[2] if row is not None else None,
                replay=self._replay(s.id, s, start, end) if start < end else Replay([], []),
                event_end=end,
            )

    async def renew(self, session_id: str, holder: str, seconds: float) -> None:
        await self._run(self._set_lease, session_id, holder, holder, time.time() + seconds)

    async def release(self, session_id: str, holder: str) -> None:
        await self._run(self._set_lease, session_id, holder, None, None)

    def _set_lease(
        self, session_id: str, holder: str, new: str | None, until: float | None
    ) -> None:
        """Renew or give back a lease this holder has (one taken over meanwhile stays)."""
        db = self._conn()
        with db:
            db.execute(
                "UPDATE sessions SET lease_holder=?, lease_until=? WHERE id=? AND lease_holder=?",
                (new, until, session_id, holder),
            )

    async def list(
        self, cwd: str | None, after: tuple[str, str] | None, limit: int
    ) -> list[SessionRow]:
        """Sessions that were prompted (a session only opened, as editors do at every start, is
        nobody's conversation), newest first; `after` is the (updated_at, id) of the last row
        already seen."""
        return await self._run(self._list, cwd, after, limit)

    def _list(self, cwd: str | None, after: tuple[str, str] | None, limit: int) -> list[SessionRow]:
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
        return [SessionRow(*r) for r in self._conn().execute(sql, args).fetchall()]

    async def delete(self, session_id: str) -> bool:
        """Remove a session with its messages and events; False when there was none."""
        return await self._run(self._delete, session_id)

    def _delete(self, session_id: str) -> bool:
        db = self._conn()
        with db:
            db.execute("DELETE FROM messages WHERE session_id=?", (session_id,))
            db.execute("DELETE FROM events WHERE session_id=?", (session_id,))
            db.execute("DELETE FROM sessions WHERE id=?", (session_id,))
            return db.changes() > 0

    async def close(self) -> None:
        if self._db is not None:
            await self._run(self._db.close)
            self._db = None


def is_damage(exc: BaseException) -> bool:
    """Whether SQLite says the file is damaged or is no database at all."""
    import apsw

    return isinstance(exc, apsw.CorruptError | apsw.NotADBError)


def _renderer_id(db: Any, tag: str) -> int:
    with db:
        db.execute("INSERT OR IGNORE INTO renderers(tag) VALUES(?)", (tag,))
    (rid,) = db.execute("SELECT id FROM renderers WHERE tag=?", (tag,)).fetchone()
    return int(rid)


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


def _by_reference(event: Event, where: list[int]) -> Event:
    """The form an event is stored in: a prompt that is also a history message is stored once,
    in the message (a 100 MB prompt must not make a 200 MB database), named by its row number
    (another process may have appended to the same session in between)."""
    if isinstance(event, UserPrompted) and event.message is not None:
        if event.message < len(where):
            return UserPrompted([], where[event.message])
        return UserPrompted(event.parts)
    return event


def folder(path: str) -> str:
    """A folder's one identity: its real path (symlinks, `.`, `..`, doubled and trailing
    slashes resolved), so a project is the same whichever spelling an editor opened."""
    return os.path.realpath(path)


def _real_cwds(db: Any) -> None:
    rows = db.execute("SELECT id, cwd FROM sessions").fetchall()
    db.executemany(
        "UPDATE sessions SET cwd=? WHERE id=?",
        [(folder(cwd), sid) for sid, cwd in rows if folder(cwd) != cwd],
    )


def _forget_unprompted(db: Any) -> None:
    """Delete sessions never prompted (an editor opens one at every start) once a day old:
    nobody's conversation, listed nowhere."""
    cutoff = time.strftime(
        "%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(time.time() - UNPROMPTED_DAYS * 86_400)
    )
    with db:
        db.execute(
            "DELETE FROM sessions WHERE updated_at < ? AND NOT EXISTS "
            "(SELECT 1 FROM messages m WHERE m.session_id = sessions.id)",
            (cutoff,),
        )


def migrate(db: Any, upto: int = SCHEMA_VERSION) -> None:
    """Bring a database to schema version `upto` (this tether's), step by step from its
    `user_version`."""
    version = db.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise RuntimeError(f"the session store is from a newer tether (schema {version})")
    for v in range(version, upto):
        step = _MIGRATIONS[v]
        with db:
            if isinstance(step, str):
                db.execute(step)
            else:
                step(db)
            db.execute(f"PRAGMA user_version={v + 1}")
