"""The `tether.prompt` requests of one connection, from the moment each frame is read until it
is answered: one holds the connection (the active ticket); one read meanwhile is busy (refused);
`$/cancelRequest`, a cancelled progress, `tether.cancel`, the end of input and `shutdown` cancel
them. These are the hooks the connection calls as it reads frames (`wire.Hooks`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import anyio
from lsprotocol import types

from tether.engine.sessions.state import Session
from tether.rpc.lsp.wire import RequestId


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


class Tickets:
    """`on_input_end`: what else ends with the input (the session manager's running turns)."""

    def __init__(self, on_input_end: Callable[[], Awaitable[None]]) -> None:
        self._on_input_end = on_input_end
        self._tickets: dict[RequestId, Ticket] = {}
        self.active: Ticket | None = None
        self._released = anyio.Event()
        self.ended = False  # the input ended

    # --- what the connection tells us as frames are read ----------------------------------

    def accept(self, request_id: RequestId, params: types.ExecuteCommandParams) -> None:
        ticket = Ticket(request_id, params.work_done_token)
        if self.active is not None:
            ticket.busy = True
        else:
            self.active = ticket
            if self.ended:
                ticket.cancel()
        self._tickets[request_id] = ticket

    def cancel_request(self, request_id: RequestId) -> bool:
        ticket = self._tickets.get(request_id)
        if ticket is None:
            return False
        ticket.cancel()
        return True

    async def input_ended(self) -> None:
        self.ended = True
        for ticket in self._tickets.values():
            ticket.cancel()
        await self._on_input_end()

    # --- a prompt's handler ---------------------------------------------------------------

    def ticket(self, rid: RequestId | None) -> Ticket:
        """The ticket `accept` made for the request being handled (`rid`, pygls's id of it)."""
        if rid is None or rid not in self._tickets:  # not read through our connection
            rid = rid if rid is not None else ""
            self.accept(rid, types.ExecuteCommandParams(command=""))
        return self._tickets[rid]

    def release(self, ticket: Ticket) -> None:
        self._tickets.pop(ticket.request_id, None)
        if self.active is ticket:
            self.active = None
            self._released.set()
            self._released = anyio.Event()

    # --- cancelled otherwise --------------------------------------------------------------

    def progress_cancelled(self, params: types.WorkDoneProgressCancelParams) -> None:
        for ticket in self._tickets.values():
            if ticket.token == params.token:
                ticket.cancel()

    async def shutdown(self) -> None:
        """LSP `shutdown`: the running turn ends (its prompt answers `cancelled`) first."""
        for ticket in list(self._tickets.values()):
            ticket.cancel()
        while self.active is not None:
            await self._released.wait()
