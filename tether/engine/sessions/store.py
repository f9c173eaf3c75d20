"""The session store: one SQLite file (apsw, WAL) in the user data dir.

All database work runs on one dedicated thread (a capacity limiter of 1), so the event loop never
blocks on disk. A turn commits the user message at once and each finished tool batch as it lands.
The tables' SQL lives in `session_rows.py` and `event_rows.py`, the schema in `migrations.py`.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio

from tether.engine.events import Event, coalesce
from tether.engine.grants import Grant
from tether.engine.local.private_files import private_dir, private_file
from tether.engine.sessions import event_rows, grant_rows, session_rows
from tether.engine.sessions.migrations import forget_unprompted, migrate
from tether.engine.sessions.renderings import Renderer, Replay
from tether.engine.sessions.session_rows import CatchUp, SessionRow
from tether.engine.sessions.state import Session

log = logging.getLogger("tether.store")
T = TypeVar("T")


class Store:
    """`renderer`: the front whose renderings are kept beside the events it stores."""

    def __init__(self, path: Path, renderer: Renderer | None = None) -> None:
        self.path = path
        self.renderer = renderer
        self._renderer_id: int | None = None
        self._limiter = anyio.CapacityLimiter(1)
        self._saving = anyio.Lock()  # one save at a time: each takes what the last left
        self._db: Any = None
        # Why the file could not be used (it is damaged, or no database): this run then keeps
        # its sessions in memory, and says so once (see SessionManager).
        self.damaged: str | None = None
        self.leases = Leases(self)
        self.grants = ProjectGrants(self)

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        """`fn(db, *args)` on the database thread; a damaged file is replaced by memory once.
        (The renderer's id is known once the file is open: read it inside `fn`.)"""
        try:
            return await anyio.to_thread.run_sync(self._call, fn, args, limiter=self._limiter)
        except Exception as exc:
            if self.damaged is not None or not is_damage(exc):
                raise
            await anyio.to_thread.run_sync(self._fall_back, exc, limiter=self._limiter)
            return await anyio.to_thread.run_sync(self._call, fn, args, limiter=self._limiter)

    def _call(self, fn: Callable[..., T], args: tuple[Any, ...]) -> T:
        return fn(self._conn(), *args)

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
            self._renderer_id = event_rows.renderer_id(db, self.renderer.tag)
        forget_unprompted(db)
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
            self._renderer_id = event_rows.renderer_id(db, self.renderer.tag)
        self._db = db

    async def save(self, session: Session) -> None:
        """Write the session row and any history entries not yet stored."""
        async with self._saving:
            await self._save(session)

    async def _save(self, session: Session) -> None:
        new = session.history[session.saved_messages :]
        events, session.pending_events = session.pending_events, []
        changed, session.rewritten = session.rewritten, set()
        try:
            seqs, event_end = await self._run(
                session_rows.save, session, new, coalesce(events), changed, self._shown
            )
        except BaseException:
            session.pending_events[:0] = events  # not stored: keep them for the next save
            session.rewritten |= changed
            raise
        session.message_seqs += seqs
        session.event_end = max(session.event_end, event_end)

    def _shown(self, event: Event) -> tuple[bytes | None, int | None]:
        """The rendering kept beside an event, and its renderer."""
        if self.renderer is None:
            return None, None
        shown = self.renderer.keep(event)
        return (shown, self._renderer_id) if shown is not None else (None, None)

    async def load(self, session_id: str, *, history: bool = True) -> Session | None:
        """The stored session; `history=False` leaves its messages on disk until
        `load_history` (a replayed session may never be prompted again)."""
        return await self._run(session_rows.load, session_id, history)

    async def load_history(self, session: Session) -> None:
        """Read the messages of a session loaded without them (see `load`)."""
        if not session.history_loaded:
            await self._run(session_rows.fill_history, session)

    async def events(self, session_id: str, loaded: Session | None = None) -> list[Event]:
        """Everything a client was shown in this session, in order, for replay. `loaded`: the
        session as loaded, whose history gives the prompts stored by reference."""
        return await self._run(event_rows.read_all, session_id, loaded)

    async def event_end(self, session_id: str) -> int:
        """The row number after the session's last event (see event_rows.end)."""
        return await self._run(event_rows.end, session_id)

    async def replay(
        self, session_id: str, loaded: Session | None, start: int, stop: int
    ) -> Replay:
        """The events at rows `start` to `stop` (excluded) for a replay by this store's
        renderer (see event_rows.read_replay)."""
        return await self._run(
            lambda db: event_rows.read_replay(
                db, self._renderer_id, session_id, loaded, start, stop
            )
        )

    async def keep_renderings(self, session_id: str, shown: list[tuple[int, bytes]]) -> None:
        """Keep renderings made at a replay for events stored without one (an older tether,
        another front), so the next replay of the session need not translate them."""
        if self.renderer is not None and shown:
            await self._run(
                lambda db: event_rows.keep_renderings(db, self._renderer_id, session_id, shown)
            )

    async def list(
        self, cwd: str | None, after: tuple[str, str] | None, limit: int
    ) -> list[SessionRow]:
        """Sessions that were prompted, newest first (see session_rows.listed)."""
        return await self._run(session_rows.listed, cwd, after, limit)

    async def delete(self, session_id: str) -> bool:
        """Remove a session with its messages and events; False when there was none."""
        return await self._run(session_rows.delete, session_id)

    async def close(self) -> None:
        if self._db is not None:
            db, self._db = self._db, None
            await anyio.to_thread.run_sync(db.close, limiter=self._limiter)


class Leases:
    """One writer at a time (engine/sessions/lease.py): a session's lease, in the store."""

    def __init__(self, store: Store) -> None:
        self._store = store

    async def take(self, s: Session, holder: str, seconds: float) -> CatchUp:
        """Take the session's lease for a turn, with what other processes stored meanwhile
        (see session_rows.take)."""
        store = self._store
        return await store._run(
            lambda db: session_rows.take(db, store._renderer_id, s, holder, seconds)
        )

    async def renew(self, session_id: str, holder: str, seconds: float) -> None:
        until = time.time() + seconds
        await self._store._run(session_rows.set_lease, session_id, holder, holder, until)

    async def release(self, session_id: str, holder: str) -> None:
        await self._store._run(session_rows.set_lease, session_id, holder, None, None)


class ProjectGrants:
    """A project's "always" answers, kept across sessions (grant_rows.py)."""

    def __init__(self, store: Store) -> None:
        self._store = store

    async def listed(self, project: str) -> list[Grant]:
        return await self._store._run(grant_rows.listed, project)

    async def keep(self, project: str, grant: Grant) -> None:
        await self._store._run(grant_rows.put, project, grant)

    async def revoke(self, project: str, grants: list[Grant]) -> int:
        return await self._store._run(grant_rows.remove, project, grants)


def is_damage(exc: BaseException) -> bool:
    """Whether SQLite says the file is damaged or is no database at all."""
    import apsw

    return isinstance(exc, apsw.CorruptError | apsw.NotADBError)
