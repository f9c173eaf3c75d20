"""The `ask` seam over LSP: a question with choices is a `window/showMessageRequest` whose actions
are the choices. LSP has no way to take typed answers, so a question with fields (or none of
either) is refused with a reason the model can act on, as is every question once the client
answered `window/showMessageRequest` "method not found"."""

from __future__ import annotations

from lsprotocol import types

from tether.engine.seam import AskAnswer, AskField
from tether.errors import SeamError
from tether.rpc.lsp.message_approval import LspApproval
from tether.rpc.lsp.wire import Connection
from tether.rpc.rpc_error import METHOD_NOT_FOUND, ConnectionClosed, RpcError

CHOICE = "choice"


class LspAsk:
    def __init__(self, conn: Connection, approval: LspApproval) -> None:
        self._conn = conn
        self._approval = approval  # knows whether this client can ask at all

    async def ask(
        self, question: str, options: list[str], fields: list[AskField], call_id: str | None
    ) -> AskAnswer:
        can_ask = self._approval.can_ask
        if not can_ask or fields or not options:
            why = (
                "this editor cannot ask the user questions"
                if not can_ask
                else "this editor can offer choices but cannot take typed answers"
            )
            raise _unavailable(why)
        params = types.ShowMessageRequestParams(
            type=types.MessageType.Info,
            message=question,
            actions=[types.MessageActionItem(title=o) for o in options],
        )
        try:
            item: types.MessageActionItem | None = await self._conn.request(
                types.WINDOW_SHOW_MESSAGE_REQUEST, params
            )
        except RpcError as exc:
            if exc.code == METHOD_NOT_FOUND:
                self._approval.cannot_ask()
                raise _unavailable("this editor cannot ask the user questions") from None
            raise SeamError("ASK_FAILED", f"the editor could not ask: {exc}") from None
        except ConnectionClosed as exc:
            raise SeamError("ASK_FAILED", f"the editor could not ask: {exc}") from None
        if item is None or item.title not in options:
            return AskAnswer(False, dismissed=True)
        return AskAnswer(True, {CHOICE: item.title})


def _unavailable(why: str) -> SeamError:
    return SeamError(
        "ASK_UNAVAILABLE", f"{why}; ask the user in your reply instead and end your turn"
    )
