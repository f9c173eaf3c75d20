"""Session lifecycle, protocol-agnostic: new, load, resume, close, delete, list; the settings a
session carries; and running one prompt as a turn. A protocol front (ACP today) translates its
requests into these calls and shows the events this module emits through `Front.show`.

Every event goes through `SessionManager.emit`: recorded in the session (for replay), then shown.
"""

from __future__ import annotations

import base64
import dataclasses
import logging
import shutil
import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import anyio
import anyio.abc
import msgspec

from tether.engine import events as ev
from tether.engine.config.catalog import ModelCatalog
from tether.engine.history import TextPart, UserPart
from tether.engine.local.pty_host import PtyHost
from tether.engine.providers.base import LLM
from tether.engine.registry import Registry, ToolDef
from tether.engine.sandbox.detect import detect
from tether.engine.sandbox.session_sandbox import Sandbox
from tether.engine.seam import BUILTIN_COMMAND_DENYLIST, Capabilities, CommandDenylist, Web
from tether.engine.sessions import undo
from tether.engine.sessions.lease import Holder, lease_seconds
from tether.engine.sessions.renderings import Replay
from tether.engine.sessions.state import (
    APPROVALS,
    MODES,
    NETWORK,
    Session,
    SessionState,
    now_iso,
    with_window_choices,
)
from tether.engine.sessions.store import SessionRow, Store, folder
from tether.engine.system_prompt import PERSONA, project_context, system_prompt
from tether.engine.turn import Turn, TurnConfig
from tether.engine.workspace import DEFAULT_DENYLIST
from tether.schemas.config import SandboxConfig

if TYPE_CHECKING:
    from tether.engine.mcp.host import McpHost
    from tether.engine.mcp.spec import ServerSpec
    from tether.engine.providers.discovery import Discovery

log = logging.getLogger("tether.sessions")

Closer = Callable[[], Awaitable[None]]
FIRST_PROMPT_WAIT = 5.0  # seconds a first prompt waits for a local server's model list
REPLAY_PART = 2048  # events read at a time by a replay


class UnknownSession(LookupError):
    def __init__(self, session_id: str) -> None:
        super().__init__(f"no session {session_id!r}")
        self.session_id = session_id


class InvalidSetting(ValueError):
    """A setting's value is not one of its choices; the message lists them."""


class Front(Protocol):
    """What the manager needs of a protocol front."""

    async def show(self, session_id: str, event: ev.Event) -> None:
        """Render an engine event to the client (already recorded for replay)."""
        ...

    def capabilities(self, session: Session, model: LLM) -> Capabilities:
        """The seam implementations for a session's calls (client fs, approvals, ...)."""
        ...

    async def catch_up(self, session_id: str, replay: Replay) -> None:
        """Show what another process added to the session (its turns) before this turn."""
        ...


@dataclass
class EngineDeps:
    catalog: ModelCatalog
    registry_factory: Callable[[], Registry]
    store: Store
    spill_root: Path
    turn: TurnConfig = field(default_factory=lambda: TurnConfig(system=PERSONA))
    path_denylist: tuple[str, ...] = DEFAULT_DENYLIST  # unless the config file sets one
    command_denylist: CommandDenylist = BUILTIN_COMMAND_DENYLIST  # unless the config says more
    web: Web | None = None  # ctx.web for every session; None: built from the environment
    mcp_servers: tuple[ServerSpec, ...] = ()  # the config file's, for every session
    sandbox: SandboxConfig = field(default_factory=SandboxConfig)  # the config's [sandbox]


@dataclass
class _Runtime:
    """What an open session holds beyond its stored state: its model, its tools, its MCP
    servers, and what to close."""

    model: LLM | None = None
    closers: list[Closer] = field(default_factory=list[Closer])
    ptys: PtyHost | None = None
    sandbox: Sandbox | None = None
    registry: Registry | None = None
    mcp: McpHost | None = None

    def mcp_tools(self) -> list[ToolDef]:
        return self.mcp.tools() if self.mcp is not None else []


class SessionManager:
    def __init__(self, deps: EngineDeps, front: Front, background: anyio.abc.TaskGroup) -> None:
        """`background`: a task group that outlives every session (its MCP connections)."""
        self.deps = deps
        self.front = front
        self._background = background
        self.sessions: dict[str, Session] = {}
        self._runtime: dict[str, _Runtime] = {}
        self._input_ended = False  # prompts accepted after the end still answer `cancelled`
        self._discovery: Discovery | None = None
        self._discovering: set[anyio.CancelScope] = set()  # waits on the model lists
        self._told_damage = False

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
        self._open(s)
        await self.deps.store.save(s)
        return s

    def fresh(self, cwd: str = "/", session_id: str | None = None) -> Session:
        """A session as `new` makes it, not opened: its settings are the catalog's defaults."""
        catalog = self.deps.catalog
        state = SessionState(
            model=catalog.default,
            roots=[cwd],
            reasoning=reasoning_for(catalog.default, None, catalog),
        )
        return Session(session_id or f"sess_{uuid.uuid4().hex}", cwd, state)

    async def replay(self, s: Session) -> AsyncGenerator[Replay, None]:
        """Everything the session's client was shown, in order, in parts read one after the
        other (the front writes each while the next is read): the front's renderings where the
        store kept them, else the events."""
        store = self.deps.store
        end = await store.event_end(s.id)
        s.event_end = end  # what this client is shown from here on is new to it
        for start in range(0, end, REPLAY_PART):
            yield await store.replay(s.id, s, start, min(start + REPLAY_PART, end))

    def keep_renderings(self, s: Session, shown: list[tuple[int, bytes]]) -> None:
        """Store, in the background, renderings a front made at a replay (see Store)."""
        if shown:
            self._background.start_soon(self.deps.store.keep_renderings, s.id, shown)

    async def resume(self, session_id: str) -> Session:
        s = self.sessions.get(session_id)
        if s is not None:
            return s
        stored = await self.deps.store.load(session_id, history=False)
        if stored is None:
            raise UnknownSession(session_id)
        if stored.state.model not in self.deps.catalog:
            log.info(
                "session %s: model %s is gone; using the default", stored.id, stored.state.model
            )
            stored.state.model = self.deps.catalog.default
        self._open(stored)
        return stored

    def _open(self, s: Session) -> None:
        self.sessions[s.id] = s
        self._runtime[s.id] = _Runtime()

    def get(self, session_id: str) -> Session:
        s = self.sessions.get(session_id)
        if s is None:
            raise UnknownSession(session_id)
        return s

    def start_mcp(self, s: Session, servers: list[ServerSpec], *, ready_notices: bool) -> None:
        """Connect the session's MCP servers, the client's `servers` and the config file's,
        in the background (once while it is open: a load or resume of an open session keeps
        the servers it has). `ready_notices`: say when each is ready (clients that show
        notices apart from the conversation)."""
        runtime = self._runtime.get(s.id)
        if runtime is None or runtime.mcp is not None:
            return
        from tether.engine.mcp.spec import merged

        configured = self.deps.mcp_servers
        for name in {c.name for c in servers} & {c.name for c in configured}:
            log.info("session %s: the client's MCP server %s replaces the config's", s.id, name)
        servers = merged(servers, configured)
        if not servers:
            return
        from tether.engine.mcp.host import McpHost

        runtime.mcp = McpHost(
            servers,
            cwd=Path(s.cwd),
            notify=lambda notice: self.emit(s, notice),
            ready_notices=ready_notices,
        )
        runtime.closers.append(runtime.mcp.aclose)
        runtime.mcp.start(self._background)

    def registry(self, s: Session) -> Registry:
        """The session's tools: the built-in ones, and its MCP servers' while they are up."""
        runtime = self._runtime[s.id]
        if runtime.registry is None:
            runtime.registry = self.deps.registry_factory()
            runtime.registry.include(runtime.mcp_tools)
        return runtime.registry

    def pty_host(self, s: Session) -> PtyHost:
        """The session's interactive programs; killed when it closes (and at exit)."""
        runtime = self._runtime[s.id]
        if runtime.ptys is None:
            runtime.ptys = PtyHost()
            runtime.closers.append(runtime.ptys.close_all)
        return runtime.ptys

    def sandbox(self, s: Session) -> Sandbox:
        """What confines the session's commands; its private temp directory goes with it."""
        runtime = self._runtime[s.id]
        if runtime.sandbox is None:
            sandbox = Sandbox(detect(self.deps.sandbox.mechanism), hidden=tether_places())
            runtime.sandbox = sandbox

            async def close() -> None:
                await anyio.to_thread.run_sync(sandbox.close)

            runtime.closers.append(close)
        runtime.sandbox.network = self.network(s)
        return runtime.sandbox

    def network(self, s: Session) -> bool:
        """Whether the session's confined commands may use the network."""
        chosen = s.state.network
        return self.deps.sandbox.network if chosen is None else chosen

    async def set_network(self, s: Session, value: str) -> None:
        _one_of(value, NETWORK, "network value")
        s.state.network = value == "on"
        await self.persist(s)

    async def prepare_sandbox(self) -> None:
        """Find the machine's sandbox off the event loop (it starts a probe process, once)."""
        await anyio.to_thread.run_sync(detect, self.deps.sandbox.mechanism)

    def on_close(self, s: Session, closer: Closer) -> None:
        """Run `closer` when the session closes (its processes, PTYs, servers)."""
        self._runtime[s.id].closers.append(closer)

    async def close(self, session_id: str) -> None:
        """Stop the session's turn and everything it runs; its record stays."""
        s = self.get(session_id)
        s.cancel_turn()
        self.sessions.pop(s.id, None)
        runtime = self._runtime.pop(s.id, _Runtime())
        with anyio.CancelScope(shield=True):
            for closer in reversed(runtime.closers):
                try:
                    await closer()
                except Exception:
                    log.exception("closing session %s", s.id)

    async def delete(self, session_id: str) -> None:
        """Close the session if open, and remove its record and its spill files."""
        if session_id in self.sessions:
            await self.close(session_id)
        if not await self.deps.store.delete(session_id):
            raise UnknownSession(session_id)
        await anyio.to_thread.run_sync(
            lambda: shutil.rmtree(self.deps.spill_root / session_id, ignore_errors=True)
        )

    async def list(
        self, cwd: str | None, cursor: str | None, limit: int
    ) -> tuple[list[SessionRow], str | None]:
        after = decode_cursor(cursor) if cursor is not None else None
        rows = await self.deps.store.list(cwd, after, limit + 1)  # by the folder's real path
        page = rows[:limit]
        more = len(rows) > limit
        return page, encode_cursor(page[-1].updated_at, page[-1].id) if more else None

    async def end_input(self) -> None:
        """The client is gone: running turns stop and answer `cancelled`; nobody will see the
        model lists, so the exit does not wait for them."""
        self._input_ended = True
        for s in self.sessions.values():
            s.cancel_turn(by="input end")
        for scope in self._discovering:
            scope.cancel()

    async def settle_model(self, s: Session) -> bool:
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
        catalog = self.deps.catalog
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
        """Offer the models the providers list (fetched once per process, after a session was
        answered); a session still on a default that discovery replaced moves with it (not
        once its turn runs, unless `during_turn`: its first request waits for this). True
        when the session's options changed."""
        catalog = self.deps.catalog
        if not catalog.providers:
            return False
        from tether.engine.providers.discovery import Discovery
        from tether.paths import data_dir

        offered = list(catalog.infos)
        if self._discovery is None:
            self._discovery = Discovery(catalog, data_dir() / "models")
        with anyio.CancelScope() as scope:
            self._discovering.add(scope)
            try:
                await self._discovery.refresh()
            except Exception:  # discovery is a convenience: it never breaks a session
                log.exception("model discovery failed")
                return False
            finally:
                self._discovering.discard(scope)
        if scope.cancelled_caught or s.id not in self.sessions:
            return False
        moved = self._discovery.replacement(s.state.model)
        fresh = s.saved_messages == 0 and not s.history and (during_turn or not s.busy)
        if moved is not None and fresh:
            await self.set_model(s, moved)
            await self.emit(s, ev.Notice("info", self._discovery.notice or f"Using {moved}"))
        return moved is not None or list(catalog.infos) != offered

    async def shutdown(self) -> None:
        for session_id in list(self.sessions):
            await self.close(session_id)
        await self.deps.store.close()

    # --- settings -------------------------------------------------------------------------

    async def set_mode(self, s: Session, mode: str) -> None:
        _one_of(mode, MODES, "mode")
        s.state.mode = mode
        await self.persist(s)

    async def set_approvals(self, s: Session, value: str) -> None:
        _one_of(value, APPROVALS, "approvals value")
        s.state.approvals = value
        await self.persist(s)

    async def set_model(self, s: Session, model: str) -> None:
        catalog = self.deps.catalog
        _one_of(model, catalog.infos, "model")
        s.state.model = model
        s.state.reasoning = reasoning_for(model, s.state.reasoning, catalog)
        self._runtime[s.id].model = None
        await self.persist(s)

    async def set_reasoning(self, s: Session, level: str) -> None:
        levels = self.deps.catalog.infos[s.state.model].reasoning_levels
        _one_of(level, {k: k for k in levels}, "reasoning level")
        s.state.reasoning = level
        await self.persist(s)

    async def set_title(self, s: Session, title: str) -> None:
        s.title = " ".join(title.split())[:120] or None
        await self.emit(s, ev.TitleChanged(s.title or ""))
        await self.persist(s)

    async def persist(self, s: Session) -> None:
        s.updated_at = now_iso()
        await self.deps.store.save(s)

    # --- turns ----------------------------------------------------------------------------

    def claim(self, s: Session) -> anyio.CancelScope:
        """Own the session for one turn, synchronously (SessionBusy when it is taken)."""
        scope = s.claim()
        if self._input_ended:
            s.cancel_turn(by="input end")
        return scope

    def model(self, s: Session) -> LLM:
        runtime = self._runtime[s.id]
        if runtime.model is None:
            runtime.model = self.deps.catalog.open(s.state.model)
        return runtime.model

    def capabilities(self, s: Session) -> Capabilities:
        return self.front.capabilities(s, self.model(s))

    async def run_turn(
        self, s: Session, parts: list[UserPart], scope: anyio.CancelScope
    ) -> ev.StopReason:
        """One prompt as a turn; TurnFailed when the provider cannot serve it, HeldElsewhere
        when another process runs a turn of this session."""
        await self.deps.store.load_history(s)
        holder = str(Holder.me())
        await self._catch_up(s, holder)
        renewing = anyio.CancelScope()
        self._background.start_soon(self._renew_lease, s.id, holder, renewing)
        try:
            return await self._run_turn(s, parts, scope)
        finally:
            renewing.cancel()
            with anyio.CancelScope(shield=True):
                await self.deps.store.release(s.id, holder)

    async def _catch_up(self, s: Session, holder: str) -> None:
        """Take the session's lease, and take in what other processes stored meanwhile: their
        messages join the history, their events are shown to this client first."""
        caught = await self.deps.store.take(s, holder, lease_seconds())
        s.history.extend(caught.messages)
        s.message_seqs.extend(caught.seqs)
        if caught.state is not None:
            s.state = with_window_choices(caught.state, s.state)
            s.title = s.title or caught.title
        s.event_end = caught.event_end
        if caught.replay.items:
            note = "Earlier in this session, from another window:"
            await self.front.show(s.id, ev.Notice("info", note))
            await self.front.catch_up(s.id, caught.replay)

    async def _renew_lease(self, session_id: str, holder: str, scope: anyio.CancelScope) -> None:
        seconds = lease_seconds()
        with scope:
            while True:
                await anyio.sleep(seconds / 3)
                try:
                    await self.deps.store.renew(session_id, holder, seconds)
                except Exception:  # the turn goes on; the lease may lapse
                    log.exception("renewing the lease of session %s", session_id)

    async def _run_turn(
        self, s: Session, parts: list[UserPart], scope: anyio.CancelScope
    ) -> ev.StopReason:
        s.record(ev.UserPrompted(parts, message=len(s.history)))  # the client showed it
        text = prompt_text(parts)
        if s.title is None and text:
            s.title = text.splitlines()[0][:80]
            await self.emit(s, ev.TitleChanged(s.title))
        model = self.model(s)
        await self.prepare_sandbox()
        turn = Turn(
            s,
            model=model,
            registry=self.registry(s),
            ctx=self.front.capabilities(s, model),
            emit=lambda e: self.emit(s, e),
            persist=self.persist,
            config=await self._turn_config(s),
        )
        await self._tell_config_problems(s)
        stop = await turn.run(parts, scope)
        if stop not in ("end_turn", "refusal"):  # (a refusal says so itself)
            with anyio.CancelScope(shield=True):
                await self.emit(s, ev.TurnEnded(stop))  # kept: a reload shows how it ended
        await self.persist(s)
        return stop

    async def undo(self, s: Session) -> str:
        return await undo.undo_last(s.state.undo, self.capabilities(s), lambda e: self.emit(s, e))

    async def _turn_config(self, s: Session) -> TurnConfig:
        if s.state.context is None:
            s.state.context = await project_context(Path(s.cwd))
        base = self.deps.turn
        mode = s.state.mode
        host = self._runtime[s.id].mcp
        mcp = host.instructions() if host is not None else ""
        system = system_prompt(
            base.system, s.state.context, mode, MODES[mode][1], base.sections, mcp
        )
        return dataclasses.replace(base, system=system)

    async def _tell_config_problems(self, s: Session) -> None:
        """Configuration problems found at startup, and a damaged session database, shown
        once, in the first turn."""
        warnings = self.deps.catalog.warnings
        if warnings:
            text = "\n".join(warnings)
            await self.emit(s, ev.Notice("warning", "tether's configuration has problems", text))
            warnings.clear()
        store = self.deps.store
        if store.damaged is not None and not self._told_damage:
            self._told_damage = True
            text = (
                f"{store.damaged}. This run keeps its sessions in memory only (earlier ones "
                "cannot be loaded). `tether doctor --move-damaged-store` moves the file aside, "
                "keeping it, so the next start makes a new one."
            )
            await self.emit(s, ev.Notice("error", "tether's session database is damaged", text))


def tether_places() -> list[Path]:
    """tether's own files (sessions of every project, the config with its keys, the logs):
    no command tether runs may read them."""
    import platformdirs

    from tether.logs import log_dir
    from tether.paths import config_path, data_dir

    config_dir = Path(platformdirs.user_config_dir("tether", appauthor=False))
    return [data_dir(), config_path(), config_dir, log_dir()]


def prompt_text(parts: list[UserPart]) -> str:
    return "\n".join(p.text for p in parts if isinstance(p, TextPart)).strip()


def reasoning_for(model: str, wanted: str | None, catalog: ModelCatalog) -> str | None:
    """The effort level a session keeps after picking `model`: its choice when the model has
    that level, else the model's default (None for a model without levels)."""
    info = catalog.infos.get(model)
    if info is None or not info.reasoning_levels:
        return None
    if wanted in info.reasoning_levels:
        return wanted
    return info.default_reasoning or info.reasoning_levels[0]


def _one_of(value: str, choices: object, what: str) -> None:
    if value not in choices:  # type: ignore[operator]  # any container of names
        known = ", ".join(choices)  # type: ignore[arg-type]
        raise InvalidSetting(f"unknown {what} {value!r}; choose one of {known}")


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
