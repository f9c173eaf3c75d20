"""The ACP agent: one handler per method, translating ACP into SessionManager calls and engine
events into `session/update`s. The session requests and prompts are `AcpAgent`'s; the modes and
config options `OptionRequests`'; the commands offered `available_commands.CommandsOffer`'s.
Session lifecycle and turns live in `tether.engine.sessions.manager`."""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable
from contextlib import aclosing
from typing import Any

import anyio
import anyio.abc
import msgspec
from msgspec import UNSET

from tether.engine.sessions.deps import EngineDeps
from tether.engine.sessions.manager import SessionManager, UnknownSession
from tether.engine.sessions.settings import InvalidSetting
from tether.engine.sessions.state import Session
from tether.engine.slash import slash_registry
from tether.errors import HeldElsewhere, SessionBusy, TurnFailed
from tether.rpc.acp import options
from tether.rpc.acp.acp_front import AcpFront
from tether.rpc.acp.acp_handshake import Handshake
from tether.rpc.acp.available_commands import CommandsOffer, command_context
from tether.rpc.acp.fast_session import Prepared
from tether.rpc.acp.mcp_entries import server_specs
from tether.rpc.acp.prompt_parts import user_parts
from tether.rpc.acp.replay_frames import replay_updates, update_params
from tether.rpc.peer import Peer, Reply
from tether.rpc.rpc_error import (
    INVALID_REQUEST,
    PROVIDER_FAILED,
    SESSION_BUSY,
    ConnectionClosed,
    RpcError,
)
from tether.schemas import acp

log = logging.getLogger("tether.acp")

PAGE_SIZE = 50


class AcpAgent:
    def __init__(
        self,
        peer: Peer,
        handshake: Handshake,
        deps: EngineDeps,
        background: anyio.abc.TaskGroup,
    ) -> None:
        """`background`: a task group that outlives every session (its MCP connections)."""
        self.peer = peer
        self.handshake = handshake
        self.deps = deps
        self.front = AcpFront(peer, handshake, deps)
        self.manager = self.front.manager = SessionManager(deps, self.front, background)
        self._background = background
        self.commands = CommandsOffer(self.front, self.manager)
        self.options = OptionRequests(self.manager, self.front, deps, self._session)

    @property
    def sessions(self) -> dict[str, Session]:
        return self.manager.sessions

    def register(self) -> None:
        p = self.peer
        p.on_request("initialize", self.initialize, acp.InitializeRequest)
        p.on_request("session/new", self.new_session, acp.NewSessionRequest)
        p.on_request("session/load", self.load_session, acp.LoadSessionRequest)
        p.on_request("session/resume", self.resume_session, acp.ResumeSessionRequest)
        p.on_request(
            "session/prompt",
            self.prompt,
            acp.PromptRequest,
            accept=self.accept_prompt,
            bounded=False,  # a turn waits on the client: its answers must stay readable
        )
        p.on_request("session/list", self.list_sessions, acp.ListSessionsRequest)
        p.on_request("session/close", self.close_session, acp.SessionIdParams)
        p.on_request("session/delete", self.delete_session, acp.SessionIdParams)
        p.on_request("session/set_mode", self.options.set_mode, acp.SetModeRequest)
        p.on_request(
            "session/set_config_option", self.options.set_config_option, acp.SetConfigOptionRequest
        )
        p.on_notification("session/cancel", self.cancel, acp.SessionIdParams)
        p.on_input_end.append(self.manager.end_input)
        p.on_close.append(self.manager.shutdown)

    # --- helpers ---------------------------------------------------------------------------

    def _ready(self) -> None:
        if not self.handshake.done:
            raise RpcError(INVALID_REQUEST, "Invalid request: call initialize first")

    def _session(self, session_id: str) -> Session:
        self._ready()
        with _rpc_errors():
            return self.manager.get(session_id)

    def _after_open(
        self, s: Session, mcp_servers: list[dict[str, Any]]
    ) -> Callable[[], Awaitable[None]]:
        """What follows a session's answer: its MCP servers (the client's and the config
        file's) start connecting, its commands are sent, then the providers' model lists."""

        async def after() -> None:
            if s.id in self.sessions:
                specs = server_specs(mcp_servers)
                self.manager.start_mcp(s, specs, ready_notices=self.handshake.notices)
                self.commands.follow_mcp(s)
            await self.commands.send(s)
            if await self.manager.models.discover(s):
                await self.front.send_options(s)

        return after

    # --- initialize / sessions --------------------------------------------------------------

    async def initialize(self, params: acp.InitializeRequest) -> dict[str, Any]:
        return self.handshake.answer(msgspec.to_builtins(params))

    async def new_session(self, params: acp.NewSessionRequest) -> Reply:
        self._ready()
        cwd = _absolute_dir(params.cwd, "cwd")
        _check_mcp_servers(params.mcp_servers)
        s = await self.manager.new(cwd, params.mcp_servers, _roots(cwd, params))
        await self._fit_to_client(s)
        result = acp.NewSessionResponse(session_id=s.id, **self.options.state(s))
        return Reply(result, self._after_open(s, params.mcp_servers))

    async def adopt(self, prepared: Prepared) -> None:
        """A session answered before the event loop (fast_session.py): created under the id
        it was given, the config file's MCP servers started, its commands queued now (they
        follow the answer, already written), its model lists fetched in the background."""
        s = await self.manager.new(prepared.cwd, [], [prepared.cwd], prepared.session_id)
        self.manager.start_mcp(s, [], ready_notices=self.handshake.notices)
        self.commands.follow_mcp(s)
        await self.commands.send(s)
        if await self._fit_to_client(s):
            await self.front.send_options(s)  # the cached answer said `round`

        async def discover() -> None:
            try:
                if await self.manager.models.discover(s):
                    await self.front.send_options(s)
            except ConnectionClosed:
                pass  # the client left meanwhile

        self._background.start_soon(discover)

    async def _fit_to_client(self, s: Session) -> bool:
        """A client that shows one diff per permission request reviews calls one by one (the
        session's `approvals` option, which the user can still change). True when changed."""
        if self.handshake.one_diff_per_request and s.state.approvals != "call":
            await self.manager.settings.set_approvals(s, "call")
            return True
        return False

    def fresh_session_answer(self) -> dict[str, Any]:
        """What `session/new` answers for a fresh session (for fast_session's cache)."""
        s = self.manager.fresh()
        return msgspec.to_builtins(acp.LoadSessionResponse(**self.options.state(s)))

    async def load_session(self, params: acp.LoadSessionRequest) -> Reply:
        """Replay everything the client was shown, then answer (ACP: the answer comes after
        the replay), then the commands."""
        self._ready()
        _check_mcp_servers(params.mcp_servers)
        s = await self._reopen(params.session_id, params.cwd)
        if s.busy:
            raise RpcError(SESSION_BUSY, f"session {s.id} is running a turn; cancel it first")
        made: list[tuple[int, bytes]] = []
        around = update_params(s.id)
        async with aclosing(self.manager.stored.replay(s)) as parts:
            async for part in parts:
                updates = replay_updates(part, made, notices=self.handshake.notices)
                await self.peer.notify_all("session/update", updates, around)
        self.manager.stored.keep_renderings(s, made)
        return Reply(
            acp.LoadSessionResponse(**self.options.state(s)),
            self._after_open(s, params.mcp_servers),
        )

    async def resume_session(self, params: acp.ResumeSessionRequest) -> Reply:
        self._ready()
        if isinstance(params.mcp_servers, list):
            _check_mcp_servers(params.mcp_servers)
        s = await self._reopen(params.session_id, params.cwd)
        # Without `mcpServers` the session's stored servers are started again.
        servers = params.mcp_servers if isinstance(params.mcp_servers, list) else None
        return Reply(
            acp.ResumeSessionResponse(**self.options.state(s)),
            self._after_open(s, s.state.mcp_servers if servers is None else servers),
        )

    async def _reopen(self, session_id: str, cwd: str) -> Session:
        """The stored session, opened here; when the client opens it from another folder than
        its own, the user chooses: keep its folder, move it, or abort (an error answer)."""
        was_open = session_id in self.manager.sessions
        with _rpc_errors():
            s = await self.manager.resume(session_id)
        other = await anyio.to_thread.run_sync(_other_folder, cwd, s.cwd)
        if other is None:
            return s
        from tether.rpc.acp.folder_choice import aborted, choose_folder

        choice = await choose_folder(self.peer, s.id, s.cwd, other)
        if choice == "move":
            from tether.engine.sessions import reopening

            await reopening.move(self.manager.runtime(s.id), other)
            await self.manager.persist(s)
        elif choice == "abort":
            if not was_open:
                await self.manager.close(s.id)
            raise aborted(s.id, s.cwd, other)
        return s

    async def list_sessions(self, params: acp.ListSessionsRequest) -> acp.ListSessionsResponse:
        self._ready()
        cwd = params.cwd if isinstance(params.cwd, str) else None
        if cwd is not None and not os.path.isabs(cwd):
            raise RpcError.invalid_params("cwd must be an absolute path")
        cursor = params.cursor if isinstance(params.cursor, str) else None
        with _rpc_errors():
            rows, next_cursor = await self.manager.stored.list(cwd, cursor, PAGE_SIZE)
        sessions = [
            acp.SessionInfo(
                session_id=r.id,
                cwd=r.cwd,
                title=r.title if r.title is not None else UNSET,  # `null` crashes clients
                updated_at=r.updated_at,
            )
            for r in rows
        ]
        return acp.ListSessionsResponse(
            sessions=sessions, next_cursor=next_cursor if next_cursor is not None else UNSET
        )

    async def close_session(self, params: acp.SessionIdParams) -> acp.Empty:
        self._ready()
        with _rpc_errors():
            await self.manager.close(params.session_id)
        self.commands.forget(params.session_id)  # a later load is a new view
        return acp.Empty()

    async def delete_session(self, params: acp.SessionIdParams) -> acp.Empty:
        self._ready()
        with _rpc_errors():
            await self.manager.delete(params.session_id)
        self.commands.forget(params.session_id)
        return acp.Empty()

    async def cancel(self, params: acp.SessionIdParams) -> None:
        s = self.sessions.get(params.session_id)
        if s is not None:
            s.cancel_turn(by="client")

    # --- prompt turns -----------------------------------------------------------------------

    def accept_prompt(self, params: acp.PromptRequest) -> None:
        """Claim the session the moment the prompt is read: a second prompt sent right after
        is refused, and a session/cancel sent right after ends this turn."""
        s = self._session(params.session_id)
        try:
            self.manager.claim(s)
        except SessionBusy as exc:
            raise RpcError(SESSION_BUSY, str(exc)) from None

    async def prompt(self, params: acp.PromptRequest) -> acp.PromptResponse:
        s = self.sessions[params.session_id]  # accept_prompt checked it and claimed the turn
        scope = s.turn_scope
        assert scope is not None
        try:
            if not params.prompt:
                raise RpcError.invalid_params("prompt must contain at least one content block")
            if await self.manager.models.settle(s):
                await self.front.send_options(s)
            parts = user_parts(params.prompt, self.manager.model(s).info)
            context = command_context(self.front, self.manager, s, scope)
            try:
                with _rpc_errors():
                    stop = await slash_registry.prompted(context, parts)
            except TurnFailed as exc:
                raise RpcError(PROVIDER_FAILED, f"The model provider failed: {exc}") from None
            except HeldElsewhere as exc:
                raise RpcError(SESSION_BUSY, str(exc), {"sessionId": s.id}) from None
            await self.commands.send(s)  # a turn may have made a skill, a command
            return acp.PromptResponse(stop_reason=stop)
        finally:
            s.release()
            self.manager.first_answer.answered()  # the chores may go


class OptionRequests:
    """`session/set_mode` and `session/set_config_option`, and the modes and config options a
    session's answer carries. `session`: an open session by id (refused before `initialize`)."""

    def __init__(
        self,
        manager: SessionManager,
        front: AcpFront,
        deps: EngineDeps,
        session: Callable[[str], Session],
    ) -> None:
        self._manager = manager
        self._front = front
        self._deps = deps
        self._session = session

    def state(self, s: Session) -> dict[str, Any]:
        return {
            "modes": options.mode_state(s),
            "config_options": options.config_options(
                s, self._deps.catalog, self._manager.settings.network(s)
            ),
        }

    async def set_mode(self, params: acp.SetModeRequest) -> Reply:
        s = self._session(params.session_id)
        with _rpc_errors():
            await self._manager.settings.set_mode(s, params.mode_id)
        return Reply(acp.Empty(), lambda: self._front.send_options(s))

    async def set_config_option(self, params: acp.SetConfigOptionRequest) -> Reply:
        s = self._session(params.session_id)
        if not isinstance(params.value, str):
            raise RpcError.invalid_params(f"option {params.config_id!r} takes a string value")
        setter = {
            "mode": self._manager.settings.set_mode,
            "model": self._manager.settings.set_model,
            "approvals": self._manager.settings.set_approvals,
            "always": self._manager.settings.set_always,
            "network": self._manager.settings.set_network,
        }.get(params.config_id)
        if params.config_id == "reasoning" and options.has_reasoning(s, self._deps.catalog):
            setter = self._manager.settings.set_reasoning
        if setter is None:
            raise RpcError.invalid_params(f"unknown config option {params.config_id!r}")
        with _rpc_errors():
            await setter(s, params.value)
        result = acp.SetConfigOptionResponse(
            config_options=options.config_options(
                s, self._deps.catalog, self._manager.settings.network(s)
            )
        )

        async def sync() -> None:
            if params.config_id == "mode":
                await self._front.send(s.id, acp.CurrentModeUpdate(current_mode_id=s.state.mode))

        return Reply(result, sync)


class _rpc_errors:
    """Engine errors as ACP answers: unknown session -32002, bad setting -32602."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, exc: BaseException | None, tb: object) -> None:
        if isinstance(exc, UnknownSession):
            raise RpcError.not_found(str(exc), {"sessionId": exc.session_id}) from None
        if isinstance(exc, InvalidSetting):
            raise RpcError.invalid_params(str(exc)) from None


def _roots(cwd: str, params: acp.NewSessionRequest) -> list[str]:
    extra = params.additional_directories if isinstance(params.additional_directories, list) else []
    return [
        cwd,
        *(_absolute_dir(d, f"additionalDirectories[{i}]") for i, d in enumerate(extra)),
    ]


def _check_mcp_servers(servers: list[dict[str, Any]]) -> None:
    """Each entry as the schema defines it (stdio: name, command, args, env; http/sse: type,
    name, url, headers); -32602 names the first bad field."""
    for i, server in enumerate(servers):
        kind = acp.McpServerHttp if "type" in server else acp.McpServerStdio
        try:
            msgspec.convert(server, kind)
        except msgspec.ValidationError as exc:
            where = str(exc).replace("`$", f"`$.mcpServers[{i}]")
            raise RpcError.invalid_params(where) from None


def _other_folder(cwd: str, own: str) -> str | None:
    """The real path of the folder a client opens a session from, when it is a directory other
    than the session's own (a path that is no directory leaves the session where it is)."""
    from tether.engine.sessions.folders import folder

    if not os.path.isabs(cwd) or not os.path.isdir(cwd):
        return None
    real = folder(cwd)
    return None if real == own else real


def _absolute_dir(path: str, name: str) -> str:
    if not os.path.isabs(path):
        raise RpcError.invalid_params(f"{name} must be an absolute path, got {path!r}")
    if not os.path.isdir(path):
        raise RpcError.invalid_params(f"{name} {path!r} is not a directory")
    return os.path.normpath(path)
