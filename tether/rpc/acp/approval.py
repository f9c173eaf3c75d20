"""The `approval` seam over ACP: the aggregated confirm projected onto permission requests.

One call asks on its own tool card. Two or more ask once for the whole round, on a card listing
every call; "choose per call" then asks with one checkbox per call (form elicitation) or, when the
client has no forms, one call at a time.
"""

from __future__ import annotations

import uuid

from tether.engine.seam import ConfirmDecision, ConfirmRequest
from tether.rpc.acp.translate import tool_content
from tether.rpc.peer import Peer
from tether.schemas import acp

ALLOW_ONCE, ALLOW_ALWAYS, REJECT_ONCE, REJECT_ALWAYS = (
    "allow",
    "allow_always",
    "reject",
    "reject_always",
)
ALLOW_ROUND, REJECT_ROUND, CHOOSE = "allow_round", "reject_round", "choose"


class AcpApproval:
    def __init__(self, peer: Peer, session_id: str, *, forms: bool) -> None:
        self._peer = peer
        self._session = session_id
        self._forms = forms

    async def confirm(self, batch: list[ConfirmRequest]) -> list[ConfirmDecision]:
        if len(batch) == 1:
            return [await self._one(batch[0])]
        return await self._round(batch)

    async def _ask(
        self, card: acp.ToolCallFields, options: list[acp.PermissionOption]
    ) -> str | None:
        params = acp.RequestPermissionRequest(
            session_id=self._session, tool_call=card, options=options
        )
        resp = await self._peer.request(
            "session/request_permission", params, acp.RequestPermissionResponse
        )
        outcome = resp.outcome
        return outcome.option_id if isinstance(outcome, acp.SelectedOutcome) else None

    async def _one(self, req: ConfirmRequest) -> ConfirmDecision:
        options = [
            acp.PermissionOption(option_id=ALLOW_ONCE, name="Allow", kind="allow_once"),
            acp.PermissionOption(
                option_id=ALLOW_ALWAYS, name=f"Always allow {_scope(req)}", kind="allow_always"
            ),
            acp.PermissionOption(option_id=REJECT_ONCE, name="Reject", kind="reject_once"),
            acp.PermissionOption(
                option_id=REJECT_ALWAYS, name=f"Always reject {_scope(req)}", kind="reject_always"
            ),
        ]
        choice = await self._ask(acp.ToolCallFields(tool_call_id=req.call_id), options)
        return _single(choice)

    async def _round(self, batch: list[ConfirmRequest]) -> list[ConfirmDecision]:
        options = [
            acp.PermissionOption(
                option_id=ALLOW_ROUND,
                name=f"Allow all {len(batch)} (this round)",
                kind="allow_once",
            ),
            acp.PermissionOption(
                option_id=ALLOW_ALWAYS, name="Always allow these", kind="allow_always"
            ),
            acp.PermissionOption(option_id=CHOOSE, name="Choose per call…", kind="allow_once"),
            acp.PermissionOption(option_id=REJECT_ROUND, name="Reject all", kind="reject_once"),
        ]
        choice = await self._ask(_round_card(batch), options)
        if choice == ALLOW_ROUND:
            return [ConfirmDecision("allow", by="user (round)") for _ in batch]
        if choice == ALLOW_ALWAYS:
            return [ConfirmDecision("allow", by="user (always)", remember=True) for _ in batch]
        if choice == CHOOSE:
            return await self._per_call(batch)
        verdict = "reject" if choice == REJECT_ROUND else "cancelled"
        return [ConfirmDecision(verdict, by="user (round)") for _ in batch]

    async def _per_call(self, batch: list[ConfirmRequest]) -> list[ConfirmDecision]:
        if not self._forms:
            return [await self._one(req) for req in batch]
        props = {
            f"call_{i}": acp.BooleanProperty(
                type="boolean", title=req.title, description=_scope(req), default=True
            )
            for i, req in enumerate(batch)
        }
        params = acp.CreateFormElicitationRequest(
            session_id=self._session,
            message="Choose which of this round's tool calls may run",
            mode="form",
            requested_schema=acp.ElicitationSchema(
                type="object", title="Approve tool calls", properties=props
            ),
        )
        resp = await self._peer.request("elicitation/create", params, acp.CreateElicitationResponse)
        if resp.action != "accept" or not isinstance(resp.content, dict):
            verdict = "reject" if resp.action == "decline" else "cancelled"
            return [ConfirmDecision(verdict, by="user (once)") for _ in batch]
        chosen = resp.content
        return [
            ConfirmDecision(
                "allow" if chosen.get(f"call_{i}") is True else "reject", by="user (once)"
            )
            for i in range(len(batch))
        ]


def _single(choice: str | None) -> ConfirmDecision:
    if choice == ALLOW_ONCE:
        return ConfirmDecision("allow", by="user (once)")
    if choice == ALLOW_ALWAYS:
        return ConfirmDecision("allow", by="user (always)", remember=True)
    if choice == REJECT_ALWAYS:
        return ConfirmDecision("reject", by="user (always)", remember=True)
    if choice == REJECT_ONCE:
        return ConfirmDecision("reject", by="user (once)")
    return ConfirmDecision("cancelled")


def _scope(req: ConfirmRequest) -> str:
    return f"{req.tool} in {req.scope}" if req.scope else req.tool


def _round_card(batch: list[ConfirmRequest]) -> acp.ToolCallFields:
    """A card for the whole round: Zed upserts a card from a permission request's new id."""
    lines = [f"{i + 1}. {req.title}  ({_scope(req)})" for i, req in enumerate(batch)]
    content: list[acp.ToolCallContent] = [
        acp.ContentToolContent(
            content=acp.TextContent(text="This round wants to:\n" + "\n".join(lines))
        )
    ]
    for req in batch:
        content.extend(tool_content(c) for c in req.content)
    return acp.ToolCallFields(
        tool_call_id=f"round_{uuid.uuid4().hex[:12]}",
        title=f"Approve {len(batch)} tool calls",
        kind="other",
        status="pending",
        content=content,
        raw_input={
            "calls": [{"id": r.call_id, "tool": r.tool, "input": r.raw_input} for r in batch]
        },
    )
