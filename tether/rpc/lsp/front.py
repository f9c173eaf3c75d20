"""The LSP front: one session per connection, turns started by `tether.prompt`, engine events
shown as progress, notices as messages, the answer as the command's result and a transcript.

The session (a normal stored tether session: `tether sessions list` shows it) is created when the
first prompt arrives, in the workspace root the client named in `initialize`. A prompt claims the
connection the moment its frame is read (`accept`), so a second prompt sent right after is
refused and a cancel sent right after still counts. `$/cancelRequest` on the prompt, cancelling
its progress, or `tether.cancel` end the turn, and the prompt answers `cancelled`.

A prompt is answered in one of two ways (`answer_mode`): with the turn's answer as the command's
result when the turn ends ("result", the default), or at once with `{"started": true}`, the turn
running on and its answer sent as `window/showMessage` ("message": for clients that give up on a
request after a few seconds, as eglot does on `workspace/executeCommand` after 10 s). The
`initializationOptions` key `answer` chooses; without it a client named "Eglot" in `clientInfo`
gets "message". A prompt's own `wait` argument overrides the connection's way.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from tether import __version__
from tether.engine import events as ev
from tether.engine.history import TextPart, UserPart
from tether.engine.local.processes import LocalTerminal
from tether.engine.local.spill import LocalSpill
from tether.engine.providers.base import LLM
from tether.engine.read_ledger import ReadLedger
from tether.engine.seam import Capabilities, Web
from tether.engine.sessions.deps import EngineDeps
from tether.engine.sessions.manager import SessionManager
from tether.engine.sessions.renderings import Replay
from tether.engine.sessions.settings import InvalidSetting
from tether.engine.sessions.state import AccessGrant, Session
from tether.engine.slash import slash_registry
from tether.engine.slash.slash_command import CommandContext, no_options_changed
from tether.engine.workspace import DirGrant, Workspace
from tether.errors import HeldElsewhere, TetherError, TurnFailed
from tether.rpc.lsp import prompt as prompts
from tether.rpc.lsp.actions import code_actions
from tether.rpc.lsp.buffer_fs import LspFileSystem
from tether.rpc.lsp.documents import Documents
from tether.rpc.lsp.features import ClientFeatures
from tether.rpc.lsp.lsp_messages import (
    ENDINGS,
    MESSAGE,
    RESULT,
    answer_message,
    answer_mode,
    say,
    show_document,
    show_notice,
)
from tether.rpc.lsp.message_approval import LspApproval
from tether.rpc.lsp.progress import MessageProgress, TurnProgress
from tether.rpc.lsp.questions import LspAsk
from tether.rpc.lsp.review_document import ReviewDocuments
from tether.rpc.lsp.transcript_document import write_transcript
from tether.rpc.lsp.view import TurnView
from tether.rpc.lsp.wire import Connection, RequestId
from tether.rpc.rpc_error import INTERNAL_ERROR

log = logging.getLogger("tether.lsp")

REQUEST_FAILED = -32803  # LSP's RequestFailed: a valid request that could not be served


@dataclass
class Ticket:
    """One `tether.prompt` request, from the moment its frame is read."""

    request_id: RequestId
    token: int | str | None = None  # the client's workDoneToken, if it gave one
    busy: bool = False  # another prompt held the connection when this one arrived
    cancelled: bool = False
    session: Session | None = None

    def cancel(self) -> None:
        self.cancelled = True
        if self.session is not None:
            self.session.cancel_turn(by="client")


class LspFront:
    def __init__(
        self,
        conn: Connection,
        server: LanguageServer,
        deps: EngineDeps,
        background: anyio.abc.TaskGroup,
    ) -> None:
        self.conn = conn
        self.server = server
        self.deps = deps
        self.manager = SessionManager(deps, self, background)
        self.documents = Documents(server)
        self._background = background
        self._session: Session | None = None
        self._tickets: dict[RequestId, Ticket] = {}
        self._active: Ticket | None = None
        self._released = anyio.Event()
        self._ended = False
        self._view: TurnView | None = None
        self._progress: TurnProgress | None = None
        self._turns = 0
        self._features: ClientFeatures | None = None
        self._approval: LspApproval | None = None
        self._web: Web | None = None

    @property
    def features(self) -> ClientFeatures:
        if self._features is None:
            self._features = ClientFeatures.of(self.server.client_capabilities)
        return self._features

    # --- what the connection tells us as frames are read ----------------------------------

    def accept(self, request_id: RequestId, params: types.ExecuteCommandParams) -> None:
        ticket = Ticket(request_id, params.work_done_token)
        if self._active is not None:
            ticket.busy = True
        else:
            self._active = ticket
            if self._ended:
                ticket.cancel()
        self._tickets[request_id] = ticket

    def cancel_request(self, request_id: RequestId) -> bool:
        ticket = self._tickets.get(request_id)
        if ticket is None:
            return False
        ticket.cancel()
        return True

    async def input_ended(self) -> None:
        self._ended = True
        for ticket in self._tickets.values():
            ticket.cancel()
        await self.manager.end_input()

    # --- the Front the engine talks to ----------------------------------------------------

    async def show(self, session_id: str, event: ev.Event) -> None:
        if isinstance(event, ev.Notice):
            show_notice(self.conn, event)
        if self._view is not None:
            self._view.take(event)

    async def catch_up(self, session_id: str, replay: Replay) -> None:
        """tether lsp opens only sessions of its own: nothing of another process to show."""

    def capabilities(self, session: Session, model: LLM) -> Capabilities:
        features = self.features
        if self._approval is None:
            self._approval = LspApproval(
                self.conn,
                status=self._report,
                reviews=ReviewDocuments(self.deps.spill_root / session.id),
                shows_documents=features.show_document,
            )
        if self._web is None:  # one per process
            self._web = self.deps.web or _built_web()
        roots = [Path(r) for r in session.state.roots] or [Path(session.cwd)]
        configured = self.deps.catalog.path_denylist
        denylist = configured if configured is not None else self.deps.path_denylist
        workspace = Workspace(
            roots,
            denylist=denylist,
            grants=[DirGrant(Path(g.path), g.access) for g in session.state.dir_grants],
            on_grant=lambda g: _keep_grant(session, g),
        )
        return Capabilities(
            session_id=session.id,
            cwd=Path(session.cwd),
            roots=roots,
            fs=LspFileSystem(self.conn, self.documents, features),
            terminal=LocalTerminal(),
            approval=self._approval,
            ask=LspAsk(self.conn, self._approval),
            spill=LocalSpill(self.deps.spill_root / session.id),
            web=self._web,
            llm=model,
            workspace=workspace,
            reads=ReadLedger(),
            pty=self.manager.runtime(session.id).pty_host(),
            command_denylist=self.deps.command_denylist,
            sandbox=self.manager.sandbox(session),
            repositories=self.manager.runtime(session.id).repositories,
        )

    def _report(self, message: str) -> None:
        if self._progress is not None:
            self._progress.report(message)

    # --- commands -------------------------------------------------------------------------

    async def prompt(self, *arguments: Any, slash: str | None = None) -> dict[str, Any]:
        """`tether.prompt`, or with `slash` the command `tether.SLASH` (its arguments: none
        or the command's argument string)."""
        ticket = self._ticket()
        handed_on = False  # the turn runs on after this answer (MESSAGE)
        try:
            if ticket.busy:
                raise JsonRpcException(
                    "tether is already running a prompt; cancel it first (tether.cancel)",
                    REQUEST_FAILED,
                )
            if slash is not None:
                arguments = (prompts.slash_prompt(slash, arguments),)
            args = prompts.parse(arguments, self.conn.converter)
            waits = (
                args.wait
                if args.wait is not None
                else answer_mode(self.conn.handshake.params or {}) == RESULT
            )
            if waits:
                return await self._prompt(ticket, args)
            s = await self._ensure_session()
            self._background.start_soon(self._prompt_on, ticket, args)
            handed_on = True
            return {"started": True, "sessionId": s.id}
        except JsonRpcException as exc:
            log.info("tether.prompt answered %s: %s", exc.code, exc.message)
            raise
        except Exception as exc:  # answered without a traceback (pygls would send one)
            log.exception("tether.prompt failed")
            raise JsonRpcException(f"Internal error: {exc}", INTERNAL_ERROR) from None
        finally:
            if not handed_on:
                self._release(ticket)

    async def _prompt_on(self, ticket: Ticket, args: prompts.PromptArgs) -> None:
        """A prompt already answered `started`: its turn, whose answer is a message."""
        try:
            result = await self._prompt(ticket, args, answer_as_message=True)
        except JsonRpcException as exc:
            log.info("tether.prompt's turn failed: %s", exc.message)
            say(self.conn, types.MessageType.Error, f"tether: {exc.message}")
        except Exception as exc:
            log.exception("tether.prompt's turn failed")
            say(self.conn, types.MessageType.Error, f"tether: internal error: {exc}")
        else:
            say(
                self.conn,
                types.MessageType.Info,
                answer_message(result, self.features.show_document),
            )
        finally:
            self._release(ticket)

    async def cancel(self, *arguments: Any) -> dict[str, Any]:
        ticket = self._active
        if ticket is not None:
            ticket.cancel()
        return {"cancelled": ticket is not None}

    def _ticket(self) -> Ticket:
        """The ticket `accept` made for the request being handled."""
        rid = self.server.protocol.msg_id
        if rid is None or rid not in self._tickets:  # not read through our connection
            rid = rid if rid is not None else ""
            self.accept(rid, types.ExecuteCommandParams(command=""))
        return self._tickets[rid]

    def _release(self, ticket: Ticket) -> None:
        self._tickets.pop(ticket.request_id, None)
        if self._active is ticket:
            self._active = None
            self._released.set()
            self._released = anyio.Event()

    async def _prompt(
        self, ticket: Ticket, args: prompts.PromptArgs, answer_as_message: bool = False
    ) -> dict[str, Any]:
        s = await self._ensure_session()
        scope = self.manager.claim(s)
        ticket.session = s
        if ticket.cancelled:
            s.cancel_turn(by="client")
        try:
            fs = LspFileSystem(self.conn, self.documents, self.features)
            encoding = self.conn.handshake.encoding
            text = await prompts.prompt_text(args, fs, Path(s.cwd), encoding)
            return await self._turn(ticket, s, text, scope, answer_as_message)
        finally:
            s.release()
            self.manager.first_answer.answered()  # the chores may go

    async def _turn(
        self,
        ticket: Ticket,
        s: Session,
        text: str,
        scope: anyio.CancelScope,
        answer_as_message: bool,
    ) -> dict[str, Any]:
        self._progress = progress = await self._start_progress(ticket, text)
        notes: MessageProgress | None = None
        if progress is not None:
            self._background.start_soon(progress.run)
        else:  # a client without work-done progress is told the start, each tool, the end
            notes = MessageProgress(self.conn)
            notes.start(text)
        self._view = view = TurnView(self._report, notes.tool if notes is not None else None)
        ending = "Stopped"  # what the progress ends with when the turn ends otherwise
        try:
            await self.manager.models.settle(s)  # a local server's own model names
            stop = await self._prompted(s, [TextPart(text)], scope)
            ending = ENDINGS.get(stop, stop)
        except TurnFailed as exc:
            ending = "Failed: the model provider failed"
            raise JsonRpcException(f"The model provider failed: {exc}", REQUEST_FAILED) from None
        except HeldElsewhere as exc:
            ending = "Refused: the session runs in another window"
            raise JsonRpcException(str(exc), REQUEST_FAILED) from None
        except TetherError as exc:  # a command's refusal (a bad /mode, /model): its words
            ending = "Refused"
            raise JsonRpcException(exc.message, REQUEST_FAILED) from None
        finally:
            self._view = self._progress = None
            if progress is not None:
                progress.end(ending)
            if notes is not None and not answer_as_message:  # else the answer ends it
                notes.end(ending)
        result: dict[str, Any] = {"stopReason": stop, "text": view.answer, "sessionId": s.id}
        try:
            transcript = await write_transcript(self.deps.store, self.deps.spill_root, s)
        except OSError as exc:
            log.warning("could not write the transcript of %s: %s", s.id, exc)
            return result
        result["transcript"] = transcript.as_uri()
        if self.features.show_document and not self._ended:
            self._background.start_soon(show_document, self.conn, transcript.as_uri())
        return result

    async def _prompted(
        self, s: Session, parts: list[UserPart], scope: anyio.CancelScope
    ) -> ev.StopReason:
        """A slash command (`/compact`, `/retry`, ...) or a turn."""
        context = CommandContext(self.manager, s, no_options_changed, scope)
        return await slash_registry.prompted(context, parts)

    async def _start_progress(self, ticket: Ticket, text: str) -> TurnProgress | None:
        if ticket.token is None and not self.features.progress:
            return None
        create = ticket.token is None
        self._turns += 1
        token = ticket.token if ticket.token is not None else f"tether/turn/{self._turns}"
        progress = await TurnProgress.start(
            self.conn, token, create=create, title="tether", message=text.splitlines()[0]
        )
        if progress is not None and ticket.token is None:
            ticket.token = token  # so cancelling the progress finds this turn
        return progress

    async def _ensure_session(self) -> Session:
        if self._session is None:
            params = self.conn.handshake.params or {}
            cwd, roots = workspace_dirs(params)
            self._session = s = await self.manager.new(cwd, [], roots)
            self.manager.start_mcp(s, [], ready_notices=True)  # the config file's servers
            await self._apply_options(s, params.get("initializationOptions"))
        return self._session

    async def _apply_options(self, s: Session, options: object) -> None:
        """`initializationOptions` `{"mode", "model", "approvals", "always", "network"}`: the
        session's settings (clients that cannot send slash commands or show menus set them in
        their config)."""
        if not isinstance(options, dict):
            return
        setters = {
            "mode": self.manager.settings.set_mode,
            "model": self.manager.settings.set_model,
            "approvals": self.manager.settings.set_approvals,
            "always": self.manager.settings.set_always,
            "network": self.manager.settings.set_network,
        }
        answer = options.get("answer")
        if answer is not None and answer not in (RESULT, MESSAGE):
            message = (
                f"tether: initializationOptions.answer: must be {RESULT!r} or {MESSAGE!r}, "
                f"got {answer!r}"
            )
            say(self.conn, types.MessageType.Warning, message)
        for key, setter in setters.items():
            value = options.get(key)
            if value is None:
                continue
            try:
                if not isinstance(value, str):
                    raise InvalidSetting(f"{key} must be a string, got {value!r}")
                await setter(s, value)
            except InvalidSetting as exc:
                message = f"tether: initializationOptions.{key}: {exc}"
                params = types.ShowMessageParams(type=types.MessageType.Warning, message=message)
                self.conn.notify(types.WINDOW_SHOW_MESSAGE, params)

    # --- other requests and notifications -------------------------------------------------

    def initialized(self) -> None:
        """LSP `initialized` (with or without params): say where tether serves (the client's
        log: Neovim's `:LspLog`, eglot's events buffer)."""
        cwd, _ = workspace_dirs(self.conn.handshake.params or {})
        message = f"tether {__version__} ready in {cwd}"
        self.conn.notify(
            types.WINDOW_LOG_MESSAGE,
            types.LogMessageParams(type=types.MessageType.Info, message=message),
        )

    def code_actions(
        self, params: types.CodeActionParams
    ) -> list[types.CodeAction | types.Command]:
        caps = self.server.client_capabilities.text_document
        literal = (
            caps is not None
            and caps.code_action is not None
            and (caps.code_action.code_action_literal_support is not None)
        )
        return code_actions(params, literal)

    def progress_cancelled(self, params: types.WorkDoneProgressCancelParams) -> None:
        for ticket in self._tickets.values():
            if ticket.token == params.token:
                ticket.cancel()

    def document_changed(
        self,
        params: types.DidOpenTextDocumentParams
        | types.DidChangeTextDocumentParams
        | types.DidCloseTextDocumentParams,
    ) -> None:
        self.documents.changed(params.text_document.uri)

    async def shutdown(self) -> None:
        """LSP `shutdown`: the running turn ends (its prompt answers `cancelled`) first."""
        for ticket in list(self._tickets.values()):
            ticket.cancel()
        while self._active is not None:
            await self._released.wait()


def _keep_grant(s: Session, grant: DirGrant) -> None:
    """A directory the user let the session reach stays reachable (stored with it)."""
    kept = [g for g in s.state.dir_grants if g.path != str(grant.path)]
    s.state.dir_grants = [*kept, AccessGrant(str(grant.path), grant.access)]


def workspace_dirs(params: dict[str, Any]) -> tuple[str, list[str]]:
    """The session's cwd and roots: the client's workspace folders (the first is the cwd), else
    its root, else the directory the server was started in."""
    folders = params.get("workspaceFolders") or []
    roots = [p for p in (_dir_of(f.get("uri")) for f in folders) if p is not None]
    root = _dir_of(params.get("rootUri")) or _dir_of_path(params.get("rootPath"))
    cwd = roots[0] if roots else root or os.getcwd()
    return cwd, roots or [cwd]


def _dir_of(uri: object) -> str | None:
    if not isinstance(uri, str) or not uri.startswith("file:"):
        return None
    return _dir_of_path(to_fs_path(uri))


def _dir_of_path(path: object) -> str | None:
    if isinstance(path, str) and os.path.isabs(path) and os.path.isdir(path):
        return os.path.normpath(path)
    return None


def _built_web() -> Web:
    """`ctx.web` from the environment alone (deps without one: tests' and embedders')."""
    from tether.engine.web.build import build_web

    return build_web()
