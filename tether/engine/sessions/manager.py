"""Session lifecycle, protocol-agnostic: new, load, resume, close, delete, list; the settings a
session carries; and running one prompt as a turn (`turn_runner.py`). A protocol front (ACP,
LSP) translates its requests into these calls and shows the events this module emits through
`Front.show`.

Every event goes through `SessionManager.emit`: recorded in the session (for replay), then shown.
Each open session is one `SessionRuntime` (its model, tools, MCP servers, PTYs, sandbox).
"""

from __future__ import annotations

import functools
import logging
import shutil
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import anyio.abc

from tether.engine import events as ev
from tether.engine.history import UserPart
from tether.engine.providers.base import LLM
from tether.engine.sandbox.session_sandbox import Sandbox
from tether.engine.sessions import undo
from tether.engine.sessions.deps import EngineDeps, Front
from tether.engine.sessions.first_answer import FirstAnswer
from tether.engine.sessions.folders import folder
from tether.engine.sessions.model_choice import ModelChoice
from tether.engine.sessions.runtime import SessionRuntime
from tether.engine.sessions.settings import SessionSettings, reasoning_for
from tether.engine.sessions.state import ALLOW_ALL_MODE, Session, SessionState, now_iso
from tether.engine.sessions.turn_runner import TurnRunner
from tether.errors import TetherError

if TYPE_CHECKING:
    from tether.engine.mcp.spec import ServerSpec
    from tether.engine.sessions.stored_sessions import StoredSessions

log = logging.getLogger("tether.sessions")


class UnknownSession(TetherError, LookupError):
    def __init__(self, session_id: str) -> None:
        super().__init__("SESSION_UNKNOWN", f"no session {session_id!r}")
        self.session_id = session_id


class SessionManager:
    def __init__(self, deps: EngineDeps, front: Front, background: anyio.abc.TaskGroup) -> None:
        """`background`: a task group that outlives every session (its MCP connections)."""
        self.deps = deps
        self.front = front
        self._background = background
        self._open: dict[str, SessionRuntime] = {}
        self._input_ended = False  # prompts accepted after the end still answer `cancelled`
        self.settings = SessionSettings(
            deps.catalog, deps.sandbox, persist=self.persist, emit=self.emit, runtime=self.runtime
        )
        # What sessions start in the background waits for a first prompt's answer.
        self.first_answer = first = FirstAnswer()
        self.models = ModelChoice(
            deps.catalog,
            set_model=self.settings.set_model,
            emit=self.emit,
            is_open=lambda s: s.id in self._open,
            first_answer=first,
        )
        self.turns = TurnRunner(
            deps, front, background, emit=self.emit, persist=self.persist, first_answer=first
        )

    @functools.cached_property
    def stored(self) -> StoredSessions:
        """The stored sessions: the list, replays (loaded when first asked for)."""
        from tether.engine.sessions.stored_sessions import StoredSessions

        return StoredSessions(self.deps.store, self._background)

    @property
    def sessions(self) -> dict[str, Session]:
        """The open sessions by id."""
        return {sid: runtime.session for sid, runtime in self._open.items()}

    # --- events -------------------------------------------------------------------------

    async def emit(self, s: Session, event: ev.Event) -> None:
        """The one path of every engine event: recorded for replay, then shown."""
        s.record(event)
        await self.front.show(s.id, event)

    # --- lifecycle ------------------------------------------------------------------------

    async def new(
        self,
        cwd: str,
        mcp_servers: list[dict[str, object]],
        roots: list[str],
        session_id: str | None = None,
    ) -> Session:
        """`session_id`: the id the client was already given (a session answered before the
        engine was up); a new one otherwise. The folders are kept by their real paths."""
        cwd = folder(cwd)
        s = self.fresh(cwd, session_id)
        s.state.mcp_servers = [dict(m) for m in mcp_servers]
        s.state.roots = [folder(r) for r in roots] or [cwd]
        self._start(s)
        await self.deps.store.save(s)
        return s

    def fresh(self, cwd: str = "/", session_id: str | None = None) -> Session:
        """A session as `new` makes it, not opened: its settings are the catalog's defaults."""
        catalog = self.deps.catalog
        agent = self.deps.agent
        state = SessionState(
            mode=agent.default_mode,
            approvals=agent.default_approvals,
            always=agent.always_scope,
            model=catalog.default,
            roots=[cwd],
            reasoning=reasoning_for(catalog.default, None, catalog),
        )
        return Session(session_id or f"sess_{uuid.uuid4().hex}", cwd, state)

    async def resume(self, session_id: str) -> Session:
        runtime = self._open.get(session_id)
        if runtime is not None:
            return runtime.session
        stored = await self.deps.store.load(session_id, history=False)
        if stored is None:
            raise UnknownSession(session_id)
        if stored.state.model not in self.deps.catalog:
            log.info(
                "session %s: model %s is gone; using the default", stored.id, stored.state.model
            )
            stored.state.model = self.deps.catalog.default
        if stored.state.mode == ALLOW_ALL_MODE:  # chosen for one sitting, never inherited
            stored.state.mode = self.deps.agent.default_mode
        self._start(stored)
        self._open[stored.id].reopened = True  # by this process: its first turn says so
        return stored

    def _start(self, s: Session) -> None:
        runtime = self._open[s.id] = SessionRuntime(s, self.deps.registry_factory)
        self._background.start_soon(self.turns.warm, runtime)

    def get(self, session_id: str) -> Session:
        return self.runtime(session_id).session

    def runtime(self, session_id: str) -> SessionRuntime:
        """The open session's runtime (UnknownSession when it is not open here)."""
        runtime = self._open.get(session_id)
        if runtime is None:
            raise UnknownSession(session_id)
        return runtime

    def start_mcp(self, s: Session, servers: list[ServerSpec], *, ready_notices: bool) -> None:
        """Connect the session's MCP servers, the client's `servers` and the config file's,
        in the background (once while it is open: a load or resume of an open session keeps
        the servers it has). `ready_notices`: say when each is ready (clients that show
        notices apart from the conversation)."""
        runtime = self._open.get(s.id)
        if runtime is None:
            return
        from tether.engine.mcp.spec import merged

        configured = self.deps.mcp_servers
        for name in {c.name for c in servers} & {c.name for c in configured}:
            log.info("session %s: the client's MCP server %s replaces the config's", s.id, name)
        runtime.start_mcp(
            merged(servers, configured),
            self._background,
            lambda notice: self.emit(s, notice),
            ready_notices=ready_notices,
        )

    def sandbox(self, s: Session) -> Sandbox:
        """What confines the session's commands (see SessionRuntime.sandbox)."""
        hidden = tether_places()
        network = self.settings.network(s)
        return self.runtime(s.id).sandbox(self.deps.sandbox.mechanism, hidden, network)

    async def close(self, session_id: str) -> None:
        """Stop the session's turn and everything it runs; its record stays."""
        runtime = self.runtime(session_id)
        del self._open[session_id]
        await runtime.aclose()

    async def delete(self, session_id: str) -> None:
        """Close the session if open, and remove its record and its spill files."""
        if session_id in self._open:
            await self.close(session_id)
        if not await self.deps.store.delete(session_id):
            raise UnknownSession(session_id)
        await anyio.to_thread.run_sync(
            lambda: shutil.rmtree(self.deps.spill_root / session_id, ignore_errors=True)
        )

    async def end_input(self) -> None:
        """The client is gone: running turns stop and answer `cancelled`; nobody will see the
        model lists, so the exit does not wait for them."""
        self._input_ended = True
        for runtime in self._open.values():
            runtime.session.cancel_turn(by="input end")
        self.models.stop_waiting()

    async def shutdown(self) -> None:
        for session_id in list(self._open):
            await self.close(session_id)
        await self.deps.store.close()

    async def persist(self, s: Session) -> None:
        s.updated_at = now_iso()
        await self.deps.store.save(s)

    # --- turns ----------------------------------------------------------------------------

    def claim(self, s: Session) -> anyio.CancelScope:
        """Own the session for one turn, synchronously (SessionBusy when it is taken); the front
        tells `first_answer` when the prompt is answered, as it releases the session."""
        scope = s.claim()
        self.first_answer.prompted()
        if self._input_ended:
            s.cancel_turn(by="input end")
        return scope

    def model(self, s: Session) -> LLM:
        return self.runtime(s.id).model(self.deps.catalog)

    async def run_turn(
        self,
        s: Session,
        parts: list[UserPart],
        scope: anyio.CancelScope,
        *,
        sent: list[UserPart] | None = None,
    ) -> ev.StopReason:
        """One prompt as a turn (see TurnRunner.run); `sent`, when given, is what the model
        gets for the prompt the user typed (a command's expansion)."""
        return await self.turns.run(self.runtime(s.id), parts, scope, sent=sent)

    async def retry_turn(self, s: Session, scope: anyio.CancelScope) -> ev.StopReason | None:
        """Go on with the session's unfinished last turn (see Turn.resume); None when it
        finished."""
        return await self.turns.resume(self.runtime(s.id), scope)

    async def compact(self, s: Session, focus: str | None) -> int | None:
        """Summarise the whole conversation for the model (/compact): how many messages the
        summary now stands for, 0 when no summary came, None when there was nothing to do."""
        return await self.turns.compact(self.runtime(s.id), focus)

    async def undo(self, s: Session) -> str:
        ctx = self.front.capabilities(s, self.model(s))
        return await undo.undo_last(s.state.undo, ctx, lambda e: self.emit(s, e))


def tether_places() -> list[Path]:
    """tether's own files (sessions of every project, the config with its keys, the logs):
    no command tether runs may read them."""
    import platformdirs

    from tether.logs import log_dir
    from tether.paths import config_path, data_dir

    config_dir = Path(platformdirs.user_config_dir("tether", appauthor=False))
    return [data_dir(), config_path(), config_dir, log_dir()]
