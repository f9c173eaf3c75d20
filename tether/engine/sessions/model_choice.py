"""Which model a fresh session runs on, once the providers' own model lists are known.

The lists (`GET /models`) are fetched once per process, after a session was answered (and after
the first prompt's answer started, when one came with it: first_answer.py). A keyless
local server may not know tether's default model: a session still on that default moves to the
first model the server lists, and a fresh session's first prompt waits (bounded, cancellable)
for the list before its first request.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import anyio

from tether.engine import events as ev
from tether.engine.config.catalog import ModelCatalog
from tether.engine.sessions.first_answer import FirstAnswer
from tether.engine.sessions.state import Session

if TYPE_CHECKING:
    from tether.engine.providers.discovery import Discovery

log = logging.getLogger("tether.sessions")

FIRST_PROMPT_WAIT = 5.0  # seconds a first prompt waits for a local server's model list

SetModel = Callable[[Session, str], Awaitable[None]]
Emit = Callable[[Session, ev.Event], Awaitable[None]]


class ModelChoice:
    def __init__(
        self,
        catalog: ModelCatalog,
        *,
        set_model: SetModel,
        emit: Emit,
        is_open: Callable[[Session], bool],
        first_answer: FirstAnswer | None = None,
    ) -> None:
        self.catalog = catalog
        self._first_answer = first_answer or FirstAnswer()
        self._set_model = set_model
        self._emit = emit
        self._is_open = is_open
        self._discovery: Discovery | None = None
        self._waiting: set[anyio.CancelScope] = set()  # waits on the model lists

    async def settle(self, s: Session) -> bool:
        """Before a fresh session's first request on a keyless server's default model, wait
        (at most FIRST_PROMPT_WAIT, or until the turn is cancelled) for that server's own
        list: the default may be a name it does not know. True when the options changed."""
        if not self._may_move(s):
            return False
        changed = False
        async with anyio.create_task_group() as tg:

            async def settle() -> None:
                nonlocal changed
                with anyio.move_on_after(FIRST_PROMPT_WAIT):
                    changed = await self.discover(s, during_turn=True)
                tg.cancel_scope.cancel()

            tg.start_soon(settle)
            if s.turn_cancelled is not None:
                await s.turn_cancelled.wait()
                tg.cancel_scope.cancel()
        return changed

    def _may_move(self, s: Session) -> bool:
        """Whether discovery may still replace the session's model (see `discover`)."""
        catalog = self.catalog
        handle = catalog.providers.get(s.state.model.partition(":")[0])
        replaced = self._discovery.replaced if self._discovery is not None else None
        return (
            handle is not None
            and handle.keyless
            and s.state.model in (catalog.default, replaced)
            and s.saved_messages == 0
            and not s.history
        )

    async def discover(self, s: Session, *, during_turn: bool = False) -> bool:
        """Offer the models the providers list; a session still on a default that discovery
        replaced moves with it (not once its turn runs, unless `during_turn`: its first
        request waits for this). True when the session's options changed."""
        catalog = self.catalog
        if not catalog.providers:
            return False
        offered = list(catalog.infos)
        with anyio.CancelScope() as scope:
            self._waiting.add(scope)
            try:
                if not during_turn:  # a first prompt's answer goes first (first_answer.py)
                    await self._first_answer.wait()
                    offered = list(catalog.infos)  # as it was before these lists
                await self._lists().refresh()
            except Exception:  # discovery is a convenience: it never breaks a session
                log.exception("model discovery failed")
                return False
            finally:
                self._waiting.discard(scope)
        if scope.cancelled_caught or not self._is_open(s):
            return False
        moved = self._lists().replacement(s.state.model)
        fresh = s.saved_messages == 0 and not s.history and (during_turn or not s.busy)
        if moved is not None and fresh:
            await self._set_model(s, moved)
            await self._emit(s, ev.Notice("info", self._lists().notice or f"Using {moved}"))
        return moved is not None or list(catalog.infos) != offered

    def _lists(self) -> Discovery:
        if self._discovery is None:
            from tether.engine.providers.discovery import Discovery
            from tether.paths import data_dir

            self._discovery = Discovery(self.catalog, data_dir() / "models")
        return self._discovery

    def stop_waiting(self) -> None:
        """Nobody will see the lists (the client is gone): the exit does not wait for them."""
        for scope in self._waiting:
            scope.cancel()
