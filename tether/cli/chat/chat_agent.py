"""The chat's side of the ACP conversation: the `tether acp` it spawns (as `tether ask` does, with
ask's process stream and command line), the session it opens or loads, and one turn at a time,
cancellable. What the agent sends is handed to the view; permission requests to the menu."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import anyio
from msgspec import UnsetType

from tether.cli.ask_client import CANCEL_GRACE, _race
from tether.cli.chat.chat_view import ChatView
from tether.cli.chat.slash_complete import SlashCompleter
from tether.rpc.peer import Peer
from tether.schemas import acp

Chooser = Callable[[acp.RequestPermissionRequest], Awaitable[str | None]]


class ChatAgent:
    def __init__(
        self, peer: Peer, view: ChatView, completer: SlashCompleter, choose: Chooser
    ) -> None:
        self.peer = peer
        self.view = view
        self.completer = completer
        self.choose = choose
        self.session_id = ""
        self.mode = ""  # the session's mode, as the agent last said it
        self.turning = False
        self._cancel = anyio.Event()
        self._forced = anyio.Event()

    def register(self) -> None:
        self.peer.on_notification("session/update", self._update, acp.SessionNotification)
        self.peer.on_request(
            "session/request_permission", self._permission, acp.RequestPermissionRequest
        )

    async def initialize(self) -> None:
        """No `fs` capability: the agent reads and writes the project's files itself (the chat
        runs in the same folder), and no elicitation: its questions come as permission menus."""
        init = acp.InitializeRequest(
            protocol_version=1,
            client_capabilities=acp.ClientCapabilities(),
            client_info=acp.Implementation(name="tether-chat", version="1"),
        )
        await self.peer.request("initialize", init, acp.InitializeResponse)

    async def new_session(self, cwd: str) -> None:
        new = acp.NewSessionRequest(cwd=cwd, mcp_servers=[])
        made = await self.peer.request("session/new", new, acp.NewSessionResponse)
        self.session_id = made.session_id
        self._take_modes(made.modes)

    async def set_mode(self, mode: str) -> None:
        change = acp.SetModeRequest(session_id=self.session_id, mode_id=mode)
        await self.peer.request("session/set_mode", change)
        self.mode = mode

    async def load_session(self, session_id: str, cwd: str) -> None:
        """The agent replays the conversation as session/update frames before it answers."""
        self.session_id = session_id
        load = acp.LoadSessionRequest(session_id=session_id, cwd=cwd, mcp_servers=[])
        loaded = await self.peer.request("session/load", load, acp.LoadSessionResponse)
        self._take_modes(loaded.modes)
        self.view.flush()

    def _take_modes(self, modes: acp.SessionModeState | UnsetType) -> None:
        if isinstance(modes, acp.SessionModeState):
            self.mode = modes.current_mode_id

    async def list_sessions(self, cwd: str) -> list[acp.SessionInfo]:
        listing = acp.ListSessionsRequest(cwd=cwd)
        found = await self.peer.request("session/list", listing, acp.ListSessionsResponse)
        return found.sessions

    async def turn(self, text: str) -> str | None:
        """One prompt; its stop reason, or None when the agent did not answer a cancel in time."""
        self._cancel, self._forced = anyio.Event(), anyio.Event()
        prompt = acp.PromptRequest(session_id=self.session_id, prompt=[acp.TextContent(text=text)])

        async def cancelled() -> None:
            await self._cancel.wait()
            await self.peer.notify("session/cancel", {"sessionId": self.session_id})
            with anyio.move_on_after(CANCEL_GRACE):
                await self._forced.wait()

        self.turning = True
        try:
            result = await _race(
                lambda: self.peer.request("session/prompt", prompt, acp.PromptResponse),
                cancelled,
            )
        finally:
            self.turning = False
        reason = result.stop_reason if result is not None else None
        self.view.end_turn(reason)
        return reason

    def interrupt(self) -> None:
        """Ctrl-C during a turn: cancel it; a second one stops waiting for the agent's answer."""
        if self._cancel.is_set():
            self._forced.set()
        self._cancel.set()
        self.view.interrupted()

    async def _update(self, params: acp.SessionNotification) -> None:
        u = params.update
        if isinstance(u, acp.AvailableCommandsUpdate):
            self.completer.commands = list(u.available_commands)
            return
        if isinstance(u, acp.CurrentModeUpdate):
            self.mode = u.current_mode_id
        self.view.update(u)

    async def _permission(
        self, params: acp.RequestPermissionRequest
    ) -> acp.RequestPermissionResponse:
        self.view.flush()
        choice = await self.choose(params)
        self.view.permission(params, choice)
        if choice is None:  # Ctrl-C at the menu: the round is refused and the turn cancelled
            self.interrupt()
            return acp.RequestPermissionResponse(outcome=acp.CancelledOutcome())
        return acp.RequestPermissionResponse(outcome=acp.SelectedOutcome(option_id=choice))
