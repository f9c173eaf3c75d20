"""The ACP agent: one handler per method, sessions, and the wiring of a turn to the client."""

from __future__ import annotations

import base64
import dataclasses
import logging
import os
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import msgspec
from msgspec import UNSET

from tether.engine import events as ev
from tether.engine import undo
from tether.engine.history import ImagePart, TextPart, UserPart
from tether.engine.local import LocalSpill, LocalTerminal
from tether.engine.models import ModelCatalog
from tether.engine.providers.base import LLM, ModelInfo
from tether.engine.reads import ReadLedger
from tether.engine.registry import Registry
from tether.engine.seam import Capabilities, Web
from tether.engine.session import APPROVALS, MODES, Session, SessionBusy, SessionState, now_iso
from tether.engine.store import Store
from tether.engine.system_prompt import PERSONA, project_context, system_prompt
from tether.engine.turn import Turn, TurnConfig, TurnFailed
from tether.engine.workspace import DEFAULT_DENYLIST, Workspace
from tether.rpc.acp import commands, options
from tether.rpc.acp.approval import AcpApproval
from tether.rpc.acp.ask import AcpAsk
from tether.rpc.acp.client_fs import ClientFileSystem
from tether.rpc.acp.handshake import Handshake
from tether.rpc.acp.translate import to_updates
from tether.rpc.errors import INVALID_REQUEST, PROVIDER_FAILED, SESSION_BUSY, RpcError
from tether.rpc.peer import Peer, Reply
from tether.schemas import acp

if TYPE_CHECKING:
    from tether.engine.discovery import Discovery

log = logging.getLogger("tether.acp")

SYSTEM_PROMPT = PERSONA
PAGE_SIZE = 50


@dataclass
class AgentDeps:
    catalog: ModelCatalog
    registry_factory: Callable[[], Registry]
    store: Store
    spill_root: Path
    turn: TurnConfig = field(default_factory=lambda: TurnConfig(system=SYSTEM_PROMPT))
    path_denylist: tuple[str, ...] = DEFAULT_DENYLIST


class AcpAgent:
    def __init__(self, peer: Peer, handshake: Handshake, deps: AgentDeps) -> None:
        self.peer = peer
        self.handshake = handshake
        self.deps = deps
        self.sessions: dict[str, Session] = {}
        self._models: dict[str, LLM] = {}
        self._input_ended = False  # prompts received before the end still answer: `cancelled`
        self._web: Web | None = None
        self._discovery: Discovery | None = None
        self._discovering: set[anyio.CancelScope] = set()  # waits on the model lists

    def register(self) -> None:
        p = self.peer
        p.on_request("initialize", self.initialize, acp.InitializeRequest)
        p.on_request("session/new", self.new_session, acp.NewSessionRequest)
        p.on_request(
            "session/prompt",
            self.prompt,
            acp.PromptRequest,
            accept=self.accept_prompt,
            bounded=False,  # a turn waits on the client: its answers must stay readable
        )
        p.on_request("session/list", self.list_sessions, acp.ListSessionsRequest)
        p.on_request("session/close", self.close_session, acp.SessionIdParams)
        p.on_request("session/set_mode", self.set_mode, acp.SetModeRequest)
        p.on_request(
            "session/set_config_option", self.set_config_option, acp.SetConfigOptionRequest
        )
        p.on_notification("session/cancel", self.cancel, acp.SessionIdParams)
        p.on_input_end.append(self.end_turns)
        p.on_input_end.append(self._stop_discovery)
        p.on_close.append(self.shutdown)

    # --- helpers ---------------------------------------------------------------------------

    def _ready(self) -> None:
        if not self.handshake.done:
            raise RpcError(INVALID_REQUEST, "Invalid request: call initialize first")

    def _session(self, session_id: str) -> Session:
        self._ready()
        s = self.sessions.get(session_id)
        if s is None:
            raise RpcError.not_found(f"no session {session_id!r}", {"sessionId": session_id})
        return s

    async def _send(self, session_id: str, update: acp.SessionUpdate) -> None:
        await self.peer.notify(
            "session/update", acp.SessionNotification(session_id=session_id, update=update)
        )

    async def _emit(self, s: Session, event: ev.Event) -> None:
        """The one path of every engine event to the client: kept for replay, then sent."""
        s.record(event)
        for update in to_updates(event, notices=self.handshake.notices):
            await self._send(s.id, update)

    # --- initialize / sessions --------------------------------------------------------------

    async def initialize(self, params: acp.InitializeRequest) -> dict[str, Any]:
        return self.handshake.answer(msgspec.to_builtins(params))

    async def new_session(self, params: acp.NewSessionRequest) -> Reply:
        self._ready()
        cwd = _absolute_dir(params.cwd, "cwd")
        extra = (
            params.additional_directories if isinstance(params.additional_directories, list) else []
        )
        roots = [
            cwd,
            *(_absolute_dir(d, f"additionalDirectories[{i}]") for i, d in enumerate(extra)),
        ]
        _check_mcp_servers(params.mcp_servers)
        catalog = self.deps.catalog
        offered = list(catalog.infos)
        state = SessionState(
            model=catalog.default,
            mcp_servers=params.mcp_servers,
            roots=roots,
            reasoning=options.reasoning_for(catalog.default, None, catalog),
        )
        s = Session(f"sess_{uuid.uuid4().hex}", cwd, state)
        self.sessions[s.id] = s
        await self.deps.store.save(s)
        result = acp.NewSessionResponse(
            session_id=s.id,
            modes=options.mode_state(s),
            config_options=options.config_options(s, self.deps.catalog),
        )

        async def announce() -> None:
            await self._send(
                s.id, acp.AvailableCommandsUpdate(available_commands=commands.COMMANDS)
            )
            await self._discover(s, offered)

        return Reply(result, announce)

    async def _discover(self, s: Session, offered: list[str]) -> None:
        """Offer the models the providers list (fetched once, after the first session/new
        was answered); a session still on a default that discovery replaced moves with it."""
        catalog = self.deps.catalog
        if not catalog.providers:
            return
        from tether.engine.discovery import Discovery
        from tether.engine.store import data_dir

        if self._discovery is None:
            self._discovery = Discovery(catalog, data_dir() / "models")
        with anyio.CancelScope() as scope:
            self._discovering.add(scope)
            try:
                await self._discovery.refresh()
            except Exception:  # discovery is a convenience: it never breaks a session
                log.exception("model discovery failed")
                return
            finally:
                self._discovering.discard(scope)
        if scope.cancelled_caught or s.id not in self.sessions:
            return
        moved = self._discovery.replacement(s.state.model)
        if moved is not None and not s.history and not s.busy:
            await self._change_model(s, moved)
            notice = self._discovery.notice or f"Using {moved}"
            await self._emit(s, ev.Notice("info", notice))
        if moved is not None or list(catalog.infos) != offered:
            await self._send_options(s)

    async def _stop_discovery(self) -> None:
        """The input ended: nobody will see the lists, so the exit does not wait for them."""
        for scope in self._discovering:
            scope.cancel()

    async def list_sessions(self, params: acp.ListSessionsRequest) -> acp.ListSessionsResponse:
        self._ready()
        cwd = params.cwd if isinstance(params.cwd, str) else None
        if cwd is not None and not os.path.isabs(cwd):
            raise RpcError.invalid_params("cwd must be an absolute path")
        after = _decode_cursor(params.cursor) if isinstance(params.cursor, str) else None
        rows = await self.deps.store.list(cwd, after, PAGE_SIZE + 1)
        page = rows[:PAGE_SIZE]
        sessions = [
            acp.SessionInfo(session_id=r.id, cwd=r.cwd, title=r.title, updated_at=r.updated_at)
            for r in page
        ]
        more = len(rows) > PAGE_SIZE
        cursor = _encode_cursor(page[-1].updated_at, page[-1].id) if more else UNSET
        return acp.ListSessionsResponse(sessions=sessions, next_cursor=cursor)

    async def close_session(self, params: acp.SessionIdParams) -> acp.Empty:
        s = self._session(params.session_id)
        s.cancel_turn()
        self.sessions.pop(s.id, None)
        self._models.pop(s.id, None)
        return acp.Empty()

    async def cancel(self, params: acp.SessionIdParams) -> None:
        s = self.sessions.get(params.session_id)
        if s is not None:
            s.cancel_turn(by="client")

    async def end_turns(self) -> None:
        """The client's input ended: running turns stop and answer `cancelled`."""
        self._input_ended = True
        for s in self.sessions.values():
            s.cancel_turn(by="input end")

    async def shutdown(self) -> None:
        for s in self.sessions.values():
            s.cancel_turn()
        await self.deps.store.close()

    # --- modes and config options -----------------------------------------------------------

    async def set_mode(self, params: acp.SetModeRequest) -> Reply:
        s = self._session(params.session_id)
        await self._change_mode(s, params.mode_id)

        async def sync() -> None:
            opts = options.config_options(s, self.deps.catalog)
            await self._send(s.id, acp.ConfigOptionUpdate(config_options=opts))

        return Reply(acp.Empty(), sync)

    async def set_config_option(self, params: acp.SetConfigOptionRequest) -> Reply:
        s = self._session(params.session_id)
        if not isinstance(params.value, str):
            raise RpcError.invalid_params(f"option {params.config_id!r} takes a string value")
        if params.config_id == "mode":
            await self._change_mode(s, params.value)
            after = acp.CurrentModeUpdate(current_mode_id=s.state.mode)
        elif params.config_id == "model":
            await self._change_model(s, params.value)
            after = None
        elif params.config_id == "reasoning" and options.has_reasoning(s, self.deps.catalog):
            await self._change_reasoning(s, params.value)
            after = None
        elif params.config_id == "approvals":
            await self._change_approvals(s, params.value)
            after = None
        else:
            raise RpcError.invalid_params(f"unknown config option {params.config_id!r}")
        result = acp.SetConfigOptionResponse(
            config_options=options.config_options(s, self.deps.catalog)
        )

        async def sync() -> None:
            if after is not None:
                await self._send(s.id, after)

        return Reply(result, sync)

    async def _change_mode(self, s: Session, mode: str) -> None:
        if mode not in MODES:
            raise RpcError.invalid_params(
                f"unknown mode {mode!r}; choose one of {', '.join(MODES)}"
            )
        s.state.mode = mode
        await self.deps.store.save(s)

    async def _change_approvals(self, s: Session, value: str) -> None:
        if value not in APPROVALS:
            raise RpcError.invalid_params(
                f"unknown approvals value {value!r}; choose one of {', '.join(APPROVALS)}"
            )
        s.state.approvals = value
        await self.deps.store.save(s)

    async def _change_model(self, s: Session, model: str) -> None:
        if model not in self.deps.catalog:
            known = ", ".join(self.deps.catalog.infos)
            raise RpcError.invalid_params(f"unknown model {model!r}; choose one of {known}")
        s.state.model = model
        s.state.reasoning = options.reasoning_for(model, s.state.reasoning, self.deps.catalog)
        self._models.pop(s.id, None)
        await self.deps.store.save(s)

    async def _change_reasoning(self, s: Session, level: str) -> None:
        levels = self.deps.catalog.infos[s.state.model].reasoning_levels
        if level not in levels:
            known = ", ".join(levels)
            raise RpcError.invalid_params(
                f"unknown reasoning level {level!r}; choose one of {known}"
            )
        s.state.reasoning = level
        await self.deps.store.save(s)

    # --- prompt turns -----------------------------------------------------------------------

    def accept_prompt(self, params: acp.PromptRequest) -> None:
        """Claim the session the moment the prompt is read: a second prompt sent right after
        is refused, and a session/cancel sent right after ends this turn."""
        s = self._session(params.session_id)
        try:
            s.claim()
        except SessionBusy as exc:
            raise RpcError(SESSION_BUSY, str(exc)) from None
        if self._input_ended:
            s.cancel_turn(by="input end")

    async def prompt(self, params: acp.PromptRequest) -> acp.PromptResponse:
        s = self.sessions[params.session_id]  # accept_prompt checked it and claimed the turn
        scope = s.turn_scope
        assert scope is not None
        try:
            return await self._run_prompt(s, params.prompt, scope)
        finally:
            s.release()

    async def _run_prompt(
        self, s: Session, blocks: list[acp.ContentBlock], scope: anyio.CancelScope
    ) -> acp.PromptResponse:
        if not blocks:
            raise RpcError.invalid_params("prompt must contain at least one content block")
        model = self._model(s)
        parts = _user_parts(blocks, model.info)
        text = "\n".join(p.text for p in parts if isinstance(p, TextPart)).strip()
        command = commands.parse(text)
        if command is not None:
            s.record(ev.UserPrompted(parts))  # the client shows its own prompt: kept for replay
            return await self._command(s, *command)
        s.record(ev.UserPrompted(parts, message=len(s.history)))  # the turn appends it there
        if s.title is None and text:
            s.title = text.splitlines()[0][:80]
            await self._emit(s, ev.TitleChanged(s.title))
        turn = Turn(
            s,
            model=model,
            registry=self.deps.registry_factory(),
            ctx=self._capabilities(s, model),
            emit=lambda e: self._emit(s, e),
            persist=self._persist,
            config=await self._turn_config(s),
        )
        await self._tell_config_problems(s)
        try:
            stop = await turn.run(parts, scope)
        except TurnFailed as exc:
            raise RpcError(PROVIDER_FAILED, f"The model provider failed: {exc}") from None
        s.updated_at = now_iso()
        await self.deps.store.save(s)
        return acp.PromptResponse(stop_reason=stop)

    async def _turn_config(self, s: Session) -> TurnConfig:
        """The turn's settings, with the system prompt for this session and mode."""
        if s.state.context is None:
            s.state.context = await project_context(Path(s.cwd))
        base = self.deps.turn
        mode = s.state.mode
        system = system_prompt(base.system, s.state.context, mode, MODES[mode][1])
        return dataclasses.replace(base, system=system)

    async def _tell_config_problems(self, s: Session) -> None:
        """Configuration problems found at startup, shown once, in the first turn."""
        warnings = self.deps.catalog.warnings
        if warnings:
            text = "\n".join(warnings)
            await self._emit(s, ev.Notice("warning", "tether's configuration has problems", text))
            warnings.clear()

    async def _persist(self, s: Session) -> None:
        s.updated_at = now_iso()
        await self.deps.store.save(s)

    def _model(self, s: Session) -> LLM:
        model = self._models.get(s.id)
        if model is None:
            model = self._models[s.id] = self.deps.catalog.open(s.state.model)
        return model

    def _capabilities(self, s: Session, model: LLM) -> Capabilities:
        caps = self.handshake.client or acp.ClientCapabilities()
        roots = [Path(r) for r in s.state.roots] or [Path(s.cwd)]
        return Capabilities(
            session_id=s.id,
            cwd=Path(s.cwd),
            roots=roots,
            fs=ClientFileSystem(self.peer, s.id, caps.fs),
            terminal=LocalTerminal(),
            approval=AcpApproval(
                self.peer,
                s.id,
                forms=self.handshake.form_elicitation,
                withdraw=lambda: s.cancelled_by != "client",
            ),
            ask=AcpAsk(
                self.peer,
                s.id,
                forms=self.handshake.form_elicitation,
                withdraw=lambda: s.cancelled_by != "client",
            ),
            spill=LocalSpill(self.deps.spill_root / s.id),
            web=self._web_capability(),
            llm=model,
            workspace=Workspace(roots, denylist=self._denylist()),
            reads=ReadLedger(),  # a new ledger each turn: edit_lineno needs this turn's reads
        )

    def _denylist(self) -> tuple[str, ...]:
        configured = self.deps.catalog.path_denylist
        return configured if configured is not None else self.deps.path_denylist

    def _web_capability(self) -> Web:
        if self._web is None:  # one per process, from the environment (the [web] table: later)
            from tether.engine.web.build import build_web

            self._web = build_web()
        return self._web

    async def _command(self, s: Session, name: str, arg: str) -> acp.PromptResponse:
        if name == "mode":
            reply = await self._mode_command(s, arg)
        elif name == "model":
            reply = await self._model_command(s, arg)
        elif name == "undo":
            ctx = self._capabilities(s, self._model(s))
            reply = await undo.undo_last(s.state.undo, ctx, lambda e: self._emit(s, e))
        else:
            reply = _help(self.deps)
        await self._emit(s, ev.TextDelta(uuid.uuid4().hex, reply))
        await self._persist(s)
        return acp.PromptResponse(stop_reason="end_turn")

    async def _mode_command(self, s: Session, arg: str) -> str:
        if not arg:
            choices = "\n".join(f"- `{k}`: {d}" for k, (_, d) in MODES.items())
            return f"Mode is **{s.state.mode}**. Choose one with `/mode NAME`:\n{choices}"
        await self._change_mode(s, arg)
        await self._send(s.id, acp.CurrentModeUpdate(current_mode_id=s.state.mode))
        await self._send_options(s)
        return f"Mode is now **{s.state.mode}**: {MODES[s.state.mode][1]}."

    async def _model_command(self, s: Session, arg: str) -> str:
        if not arg:
            infos = self.deps.catalog.infos.values()
            choices = "\n".join(f"- `{i.id}`: {i.name}" for i in infos)
            return f"Model is **{s.state.model}**. Choose one with `/model ID`:\n{choices}"
        await self._change_model(s, arg)
        await self._send_options(s)
        return f"Model is now **{s.state.model}**."

    async def _send_options(self, s: Session) -> None:
        opts = options.config_options(s, self.deps.catalog)
        await self._send(s.id, acp.ConfigOptionUpdate(config_options=opts))


def _help(deps: AgentDeps) -> str:
    lines = [
        "Commands:",
        *[f"- /{c.name}: {c.description}" for c in commands.COMMANDS],
        "",
        "Modes:",
    ]
    lines += [f"- {k}: {d}" for k, (_, d) in MODES.items()]
    lines += [
        "",
        "Tools:",
        *[f"- {t.name}: {t.description.split('.')[0]}" for t in deps.registry_factory()],
    ]
    return "\n".join(lines)


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


def _absolute_dir(path: str, name: str) -> str:
    if not os.path.isabs(path):
        raise RpcError.invalid_params(f"{name} must be an absolute path, got {path!r}")
    if not os.path.isdir(path):
        raise RpcError.invalid_params(f"{name} {path!r} is not a directory")
    return os.path.normpath(path)


def _user_parts(blocks: list[acp.ContentBlock], model: ModelInfo) -> list[UserPart]:
    parts: list[UserPart] = []
    for i, b in enumerate(blocks):
        if isinstance(b, acp.TextContent):
            parts.append(TextPart(b.text))
        elif isinstance(b, acp.ResourceLink):
            parts.append(TextPart(f"[{b.name}]({b.uri})"))
        elif isinstance(b, acp.EmbeddedResource):
            parts.append(TextPart(_resource_text(b.resource)))
        elif isinstance(b, acp.ImageContent):
            if not model.images:
                raise RpcError.invalid_params(
                    f"prompt[{i}]: the model {model.id} does not accept images; "
                    "pick an image-capable model (`images = true` in its config)"
                )
            parts.append(ImagePart(b.data, b.mime_type))
        else:
            raise RpcError.invalid_params(f"prompt[{i}]: this agent does not accept audio content")
    return parts


def _resource_text(r: acp.ResourceContents) -> str:
    if isinstance(r.text, str):
        return f"Context from {r.uri}:\n```\n{r.text}\n```"
    if isinstance(r.blob, str):
        return f"Context from {r.uri}: binary content ({len(r.blob) * 3 // 4} bytes) not shown"
    raise RpcError.invalid_params(f"resource {r.uri} has neither text nor blob")


def _encode_cursor(updated_at: str, session_id: str) -> str:
    return base64.urlsafe_b64encode(msgspec.json.encode([updated_at, session_id])).decode()


def _decode_cursor(cursor: str) -> tuple[str, str]:
    try:
        updated_at, session_id = msgspec.json.decode(
            base64.urlsafe_b64decode(cursor), type=tuple[str, str]
        )
    except (ValueError, msgspec.DecodeError):
        raise RpcError.invalid_params(f"invalid cursor {cursor!r}") from None
    return updated_at, session_id
