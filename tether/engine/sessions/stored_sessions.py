"""The sessions as stored, read apart from the open ones: the list (paged by a cursor) and a
session's replay, read in parts, with the renderings a replay made kept for the next. Loaded with
the first of these calls (none is on the way to a first answer)."""

from __future__ import annotations

import base64
from collections.abc import AsyncGenerator

import anyio.abc
import msgspec

from tether.engine.sessions.renderings import Replay
from tether.engine.sessions.session_rows import SessionRow
from tether.engine.sessions.settings import InvalidSetting
from tether.engine.sessions.state import Session
from tether.engine.sessions.store import Store

REPLAY_PART = 2048  # events read at a time by a replay


class StoredSessions:
    """`background`: a task group that outlives every session (renderings kept after a replay)."""

    def __init__(self, store: Store, background: anyio.abc.TaskGroup) -> None:
        self.store = store
        self._background = background

    async def replay(self, s: Session) -> AsyncGenerator[Replay, None]:
        """Everything the session's client was shown, in order, in parts read one after the
        other (the front writes each while the next is read): the front's renderings where the
        store kept them, else the events."""
        store = self.store
        end = await store.event_end(s.id)
        s.event_end = end  # what this client is shown from here on is new to it
        for start in range(0, end, REPLAY_PART):
            yield await store.replay(s.id, s, start, min(start + REPLAY_PART, end))

    def keep_renderings(self, s: Session, shown: list[tuple[int, bytes]]) -> None:
        """Store, in the background, renderings a front made at a replay (see Store)."""
        if shown:
            self._background.start_soon(self.store.keep_renderings, s.id, shown)

    async def list(
        self, cwd: str | None, cursor: str | None, limit: int
    ) -> tuple[list[SessionRow], str | None]:
        after = decode_cursor(cursor) if cursor is not None else None
        rows = await self.store.list(cwd, after, limit + 1)  # by the folder's real path
        page = rows[:limit]
        more = len(rows) > limit
        return page, encode_cursor(page[-1].updated_at, page[-1].id) if more else None


def encode_cursor(updated_at: str, session_id: str) -> str:
    return base64.urlsafe_b64encode(msgspec.json.encode([updated_at, session_id])).decode()


def decode_cursor(cursor: str) -> tuple[str, str]:
    try:
        updated_at, session_id = msgspec.json.decode(
            base64.urlsafe_b64decode(cursor), type=tuple[str, str]
        )
    except (ValueError, msgspec.DecodeError):
        raise InvalidSetting(f"invalid cursor {cursor!r}") from None
    return updated_at, session_id
