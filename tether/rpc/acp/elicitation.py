"""The `ask` seam over ACP: a question to the user, as a form (`elicitation/create`) when the
client offers form elicitation, else as a permission request whose options are the choices
(on the asking tool call's card), else refused with a reason the model can act on."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from msgspec import UNSET

from tether.engine.seam import AskAnswer, AskField
from tether.errors import SeamError
from tether.rpc.peer import Peer
from tether.rpc.rpc_error import ConnectionClosed, RpcError
from tether.schemas import acp

log = logging.getLogger("tether.acp")

# A permission request maps its options by kind, each kind at most once: four choices at most.
CHOICE_KINDS: list[acp.PermissionKind] = [
    "allow_once",
    "reject_once",
    "allow_always",
    "reject_always",
]
CHOICE = "choice"
SECRET_NOTE = "Typed into the program as it is; the agent's model never sees it."
# How a password field is marked for the client to mask: the ACP string schema's `format` has
# no "password" and custom keys belong in `_meta`, so JSON Schema's own word for a value that
# is sent and never shown back goes there.
SECRET_MARK: dict[str, object] = {"writeOnly": True}


class AcpAsk:
    def __init__(
        self, peer: Peer, session_id: str, *, forms: bool, withdraw: Callable[[], bool]
    ) -> None:
        self._peer = peer
        self._session = session_id
        self._forms = forms
        self._withdraw = withdraw

    async def ask(
        self, question: str, options: list[str], fields: list[AskField], call_id: str | None
    ) -> AskAnswer:
        if self._forms:
            return await self._form(question, options, fields, call_id)
        if options and not fields and len(options) <= len(CHOICE_KINDS) and call_id:
            return await self._choice(question, options, call_id)
        if fields or not options:
            why = "this editor cannot show a form or take typed answers"
        else:
            why = f"this editor can offer at most {len(CHOICE_KINDS)} choices"
        raise SeamError(
            "ASK_UNAVAILABLE", f"{why}; ask the user in your reply instead and end your turn"
        )

    async def _form(
        self, question: str, options: list[str], fields: list[AskField], call_id: str | None
    ) -> AskAnswer:
        props: dict[str, acp.ElicitationProperty] = {}
        if options:
            choices = [acp.EnumOption(const=o, title=o) for o in options]
            props[CHOICE] = acp.StringProperty(type="string", title="Answer", one_of=choices)
        for f in fields:
            props[f.name] = _property(f)
        required = ([CHOICE] if options else []) + [f.name for f in fields if f.required]
        params = acp.CreateFormElicitationRequest(
            session_id=self._session,
            message=question,
            mode="form",
            requested_schema=acp.ElicitationSchema(
                type="object", properties=props, required=required
            ),
            tool_call_id=call_id if call_id else UNSET,
        )
        try:
            resp = await self._peer.request(
                "elicitation/create", params, acp.CreateElicitationResponse, withdraw=self._withdraw
            )
        except (RpcError, ConnectionClosed) as exc:
            raise SeamError("ASK_FAILED", f"the editor could not ask: {exc}") from None
        if resp.action != "accept":
            return AskAnswer(False, dismissed=resp.action != "decline")
        content = resp.content if isinstance(resp.content, dict) else {}
        return AskAnswer(True, {k: v for k, v in content.items() if k in props})

    async def _choice(self, question: str, options: list[str], call_id: str) -> AskAnswer:
        ids = [f"choice_{i}" for i in range(len(options))]
        params = acp.RequestPermissionRequest(
            session_id=self._session,
            tool_call=acp.ToolCallFields(tool_call_id=call_id, title=question),
            options=[
                acp.PermissionOption(option_id=i, name=o, kind=k)
                for i, o, k in zip(ids, options, CHOICE_KINDS, strict=False)
            ],
        )
        try:
            resp = await self._peer.request(
                "session/request_permission",
                params,
                acp.RequestPermissionResponse,
                withdraw=self._withdraw,
            )
        except (RpcError, ConnectionClosed) as exc:
            raise SeamError("ASK_FAILED", f"the editor could not ask: {exc}") from None
        outcome = resp.outcome
        if isinstance(outcome, acp.SelectedOutcome) and outcome.option_id in ids:
            return AskAnswer(True, {CHOICE: options[ids.index(outcome.option_id)]})
        return AskAnswer(False, dismissed=True)


def _property(f: AskField) -> acp.ElicitationProperty:
    prop: Any
    if f.kind == "boolean":
        prop = acp.BooleanProperty(type="boolean", title=f.label)
    elif f.kind in ("number", "integer"):
        prop = acp.NumberProperty(type=f.kind, title=f.label)
    elif f.secret:  # masked by the client; the answer goes to a program, not the model
        prop = acp.StringProperty(
            type="string", title=f.label, description=SECRET_NOTE, meta=SECRET_MARK
        )
    else:
        prop = acp.StringProperty(type="string", title=f.label)
    return prop
