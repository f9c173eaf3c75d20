"""The LSP front: one session per connection, turns started by `tether.prompt`, engine events
shown as progress, notices as messages, the answer as the command's result and a transcript.

The session (a normal stored tether session: `tether sessions list` shows it) is created when the
first prompt arrives, in the workspace root the client named in `initialize`
(`connection_session.py`). A prompt claims the connection the moment its frame is read
(`Tickets.accept`, `tickets.py`), so a second prompt sent right after is refused and a cancel
sent right after still counts. `$/cancelRequest` on the prompt, cancelling its progress, or
`tether.cancel` end the turn, and the prompt answers `cancelled`. The session's seam is
`lsp_seam.py`'s.

A prompt is answered in one of two ways (`answer_mode`): with the turn's answer as the command's
result when the turn ends ("result", the default), or at once with `{"started": true}`, the turn
running on and its answer sent as `window/showMessage` ("message": for clients that give up on a
request after a few seconds, as eglot does on `workspace/executeCommand` after 10 s). The
`initializationOptions` key `answer` chooses; without it a client named "Eglot" in `clientInfo`
gets "message". A prompt's own `wait` argument overrides the connection's way.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer

from tether import __version__
from tether.engine import events as ev
from tether.engine.history import TextPart, UserPart
from tether.engine.providers.base import LLM
from tether.engine.seam import Capabilities
from tether.engine.sessions.deps import EngineDeps
from tether.engine.sessions.manager import SessionManager
from tether.engine.sessions.renderings import Replay
from tether.engine.sessions.state import Session
from tether.engine.slash import slash_registry
from tether.engine.slash.slash_command import CommandContext, no_options_changed
from tether.errors import HeldElsewhere, TetherError, TurnFailed
from tether.rpc.lsp import prompt as prompts
from tether.rpc.lsp.actions import code_actions
from tether.rpc.lsp.buffer_fs import LspFileSystem
from tether.rpc.lsp.connection_session import ConnectionSession, workspace_dirs
from tether.rpc.lsp.documents import Documents
from tether.rpc.lsp.features import ClientFeatures
from tether.rpc.lsp.lsp_messages import (
    ENDINGS,
    RESULT,
    answer_message,
    answer_mode,
    say,
    show_document,
    show_notice,
)
from tether.rpc.lsp.lsp_seam import LspSeam
from tether.rpc.lsp.progress import MessageProgress, TurnProgress
from tether.rpc.lsp.tickets import Ticket, Tickets
from tether.rpc.lsp.transcript_document import write_transcript
from tether.rpc.lsp.view import TurnView
from tether.rpc.lsp.wire import Connection
from tether.rpc.rpc_error import INTERNAL_ERROR

log = logging.getLogger("tether.lsp")

REQUEST_FAILED = -32803  # LSP's RequestFailed: a valid request that could not be served


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
        self.tickets = Tickets(self.manager.end_input)
        self.session = ConnectionSession(conn, self.manager)
        self.seam = LspSeam(
            conn, self.documents, deps, self.manager, lambda: self.features, self._report
        )
        self._background = background
        self._view: TurnView | None = None
        self._progress: TurnProgress | None = None
        self._turns = 0
        self._features: ClientFeatures | None = None

    @property
    def features(self) -> ClientFeatures:
        if self._features is None:
            self._features = ClientFeatures.of(self.server.client_capabilities)
        return self._features

    # --- the Front the engine talks to ----------------------------------------------------

    async def show(self, session_id: str, event: ev.Event) -> None:
        if isinstance(event, ev.Notice):
            show_notice(self.conn, event)
        if self._view is not None:
            self._view.take(event)

    async def catch_up(self, session_id: str, replay: Replay) -> None:
        """tether lsp opens only sessions of its own: nothing of another process to show."""

    def capabilities(self, session: Session, model: LLM) -> Capabilities:
        return self.seam.capabilities(session, model)

    def _report(self, message: str) -> None:
        if self._progress is not None:
            self._progress.report(message)

    # --- commands -------------------------------------------------------------------------

    async def prompt(self, *arguments: Any, slash: str | None = None) -> dict[str, Any]:
        """`tether.prompt`, or with `slash` the command `tether.SLASH` (its arguments: none
        or the command's argument string)."""
        ticket = self.tickets.ticket(self.server.protocol.msg_id)
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
            s = await self.session.ensure()
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
                self.tickets.release(ticket)

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
            self.tickets.release(ticket)

    async def cancel(self, *arguments: Any) -> dict[str, Any]:
        ticket = self.tickets.active
        if ticket is not None:
            ticket.cancel()
        return {"cancelled": ticket is not None}

    async def _prompt(
        self, ticket: Ticket, args: prompts.PromptArgs, answer_as_message: bool = False
    ) -> dict[str, Any]:
        s = await self.session.ensure()
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
        if self.features.show_document and not self.tickets.ended:
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

    def document_changed(
        self,
        params: types.DidOpenTextDocumentParams
        | types.DidChangeTextDocumentParams
        | types.DidCloseTextDocumentParams,
    ) -> None:
        self.documents.changed(params.text_document.uri)
