"""The `approval` seam over ACP: the aggregated confirm projected onto permission requests.

One call asks on its own tool card. Two or more ask once, on the round's card (shown by the
engine before it asks). Clients map keys and buttons by kind, so each kind appears once in a
request. The round's "Review one by one" takes `reject_always`, in the place of "Always reject
these" (each call's own card still offers that): a client choosing by kind then reviews, which
allows nothing by itself. Chosen, each call of the round is then asked on its own card, in order.
Reviewing every round call by call is the session's `approvals` option; it uses a checkbox form
when the client offers form elicitation, else one request per call.
Where the client offers forms, a rejection is followed by an optional note ("what should the
agent do instead?") that the model reads in the rejected calls' results.

Odd answers (an error, a malformed result, a vanished client) allow nothing: the calls asked
are answered `cancelled` and the turn goes on.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import msgspec

from tether.engine.seam import ConfirmDecision, ConfirmRequest, DecidedBy, RoundCard
from tether.rpc.acp.translate import tool_content, tool_kind
from tether.rpc.peer import Peer
from tether.rpc.rpc_error import ConnectionClosed, RpcError
from tether.schemas import acp
from tether.schemas.acp import UNSET

log = logging.getLogger("tether.acp")

ALLOW_ONCE, ALLOW_ALWAYS, REJECT_ONCE, REJECT_ALWAYS, REVIEW = (
    "allow",
    "allow_always",
    "reject",
    "reject_always",
    "review",
)


class AcpApproval:
    def __init__(
        self,
        peer: Peer,
        session_id: str,
        *,
        forms: bool,
        withdraw: Callable[[], bool] | None = None,
    ) -> None:
        self._peer = peer
        self._session = session_id
        self._forms = forms
        # Whether a request abandoned by a cancelled turn is withdrawn with $/cancel_request:
        # not after the client's own session/cancel, which answers its pending requests itself.
        self._withdraw = withdraw

    async def confirm(
        self, batch: list[ConfirmRequest], card: RoundCard | None
    ) -> list[ConfirmDecision]:
        if card is not None:
            return await self._round(batch, card)
        if len(batch) > 1 and self._forms:
            return await self._form(batch)
        return [await self._one(req) for req in batch]

    async def _ask(
        self, card: acp.ToolCallFields, options: list[acp.PermissionOption]
    ) -> str | None:
        """The chosen option id; None for a cancelled or unusable answer."""
        params = acp.RequestPermissionRequest(
            session_id=self._session, tool_call=card, options=options
        )
        try:
            resp = await self._peer.request(
                "session/request_permission",
                params,
                acp.RequestPermissionResponse,
                withdraw=self._withdraw,
            )
        except (RpcError, ConnectionClosed) as exc:
            log.warning("permission request failed; treating it as cancelled: %s", exc)
            return None
        outcome = resp.outcome
        if not isinstance(outcome, acp.SelectedOutcome):
            return None
        if outcome.option_id not in {o.option_id for o in options}:
            log.warning("the client chose an option never offered: %r", outcome.option_id)
            return None
        return outcome.option_id

    async def _one(self, req: ConfirmRequest) -> ConfirmDecision:
        scope = _scope(req)
        options = [acp.PermissionOption(option_id=ALLOW_ONCE, name="Allow", kind="allow_once")]
        if req.session_label:  # a change to a skill: once, this session, or no
            name = f"Allow {req.session_label} for this session"
            options.append(
                acp.PermissionOption(option_id=ALLOW_ALWAYS, name=name, kind="allow_always")
            )
        if req.grantable:
            options.append(
                acp.PermissionOption(
                    option_id=ALLOW_ALWAYS, name=f"Always allow {scope}", kind="allow_always"
                )
            )
        options.append(
            acp.PermissionOption(option_id=REJECT_ONCE, name="Reject", kind="reject_once")
        )
        if req.grantable:
            options.append(
                acp.PermissionOption(
                    option_id=REJECT_ALWAYS, name=f"Always reject {scope}", kind="reject_always"
                )
            )
        card = acp.ToolCallFields(
            tool_call_id=req.call_id,
            title=req.title,
            kind=tool_kind(req.kind),  # clients print it (acpx: "[other]" without one)
            # The diff and notes again: some clients render a request from its own fields.
            content=[tool_content(c) for c in req.content] or UNSET,
        )
        decision = _decision(await self._ask(card, options), "user (once)")
        return (await self._noted([decision], req.title))[0]

    async def _round(self, batch: list[ConfirmRequest], card: RoundCard) -> list[ConfirmDecision]:
        n = len(batch)
        # "always" records grants for those only (and a change to a skill: for this session)
        always = any(r.grantable or r.session_label for r in batch)
        where = " in this project" if batch[0].lasting == "project" else ""
        options = [
            acp.PermissionOption(option_id=ALLOW_ONCE, name=f"Allow all {n}", kind="allow_once"),
            acp.PermissionOption(
                option_id=ALLOW_ALWAYS, name=f"Always allow these{where}", kind="allow_always"
            ),
            acp.PermissionOption(option_id=REJECT_ONCE, name=f"Reject all {n}", kind="reject_once"),
            # In the place of "Always reject these" (each call's own card still offers it): a
            # client taking reject_always by kind reviews, which allows nothing by itself.
            acp.PermissionOption(option_id=REVIEW, name="Review one by one", kind="reject_always"),
        ]
        if not always:
            options = [o for o in options if o.kind != "allow_always"]
        fields = acp.ToolCallFields(
            tool_call_id=card.id,
            title=card.title,
            kind=tool_kind(card.kind),
            status="pending",
            content=[tool_content(c) for c in card.content],
        )
        choice = await self._ask(fields, options)
        if choice == REVIEW:
            return await self._each(batch)
        decision = _decision(choice, "user (round)")
        return await self._noted([decision for _ in batch], card.title)

    async def _each(self, batch: list[ConfirmRequest]) -> list[ConfirmDecision]:
        """The round's calls asked one by one, in order; a dismissed request ends the asking
        (the rest are cancelled, like the round would have been)."""
        decisions: list[ConfirmDecision] = []
        for n, req in enumerate(batch):
            decision = await self._one(req)
            decisions.append(decision)
            if decision.verdict == "cancelled":
                decisions += [ConfirmDecision("cancelled") for _ in batch[n + 1 :]]
                break
        return decisions

    async def _form(self, batch: list[ConfirmRequest]) -> list[ConfirmDecision]:
        props: dict[str, acp.ElicitationProperty] = {
            f"call_{i}": acp.BooleanProperty(
                type="boolean", title=req.title, description=_scope(req), default=True
            )
            for i, req in enumerate(batch)
        }
        props["note"] = _note_field()
        message = "Choose which of this round's tool calls may run"
        resp = await self._ask_form(message, "Approve tool calls", props)
        if resp is None:  # treated as cancelled
            return [ConfirmDecision("cancelled") for _ in batch]
        if resp.action != "accept" or not isinstance(resp.content, dict):
            verdict = "reject" if resp.action == "decline" else "cancelled"
            return [ConfirmDecision(verdict, by="user (once)") for _ in batch]
        chosen = resp.content
        note = chosen.get("note")
        return [
            ConfirmDecision(
                "allow" if chosen.get(f"call_{i}") is True else "reject",
                by="user (once)",
                note=note.strip() if isinstance(note, str) else "",
            )
            for i in range(len(batch))
        ]

    async def _noted(self, decisions: list[ConfirmDecision], title: str) -> list[ConfirmDecision]:
        """Rejected decisions with what the user wants instead, when the client offers a form
        to say it in (an empty or dismissed form adds nothing)."""
        if not self._forms or not any(d.verdict == "reject" for d in decisions):
            return decisions
        message = f"Rejected: {title}. Tell the agent what to do instead (optional)."
        resp = await self._ask_form(message, "Why not?", {"note": _note_field()})
        if resp is None:
            return decisions
        note = resp.content.get("note") if isinstance(resp.content, dict) else None
        if resp.action != "accept" or not isinstance(note, str) or not note.strip():
            return decisions
        return [
            msgspec.structs.replace(d, note=note.strip()) if d.verdict == "reject" else d
            for d in decisions
        ]

    async def _ask_form(
        self, message: str, title: str, props: dict[str, acp.ElicitationProperty]
    ) -> acp.CreateElicitationResponse | None:
        """A form elicitation's answer; None when the request failed (logged)."""
        params = acp.CreateFormElicitationRequest(
            session_id=self._session,
            message=message,
            mode="form",
            requested_schema=acp.ElicitationSchema(type="object", title=title, properties=props),
        )
        try:
            return await self._peer.request(
                "elicitation/create",
                params,
                acp.CreateElicitationResponse,
                withdraw=self._withdraw,
            )
        except (RpcError, ConnectionClosed) as exc:
            log.warning("the form %r failed: %s", title, exc)
            return None


def _decision(choice: str | None, who: DecidedBy) -> ConfirmDecision:
    if choice == ALLOW_ONCE:
        return ConfirmDecision("allow", by=who)
    if choice == ALLOW_ALWAYS:
        return ConfirmDecision("allow", by="user (always)", remember=True)
    if choice == REJECT_ALWAYS:
        return ConfirmDecision("reject", by="user (always)", remember=True)
    if choice == REJECT_ONCE:
        return ConfirmDecision("reject", by=who)
    return ConfirmDecision("cancelled")


def _note_field() -> acp.ElicitationProperty:
    return acp.StringProperty(
        type="string",
        title="Note for the agent",
        description="For rejected calls: what the agent should do instead (optional)",
    )


def _scope(req: ConfirmRequest) -> str:
    where = " in this project" if req.lasting == "project" else ""
    if req.grant_label:
        return req.grant_label + where
    return (f"{req.tool} in {req.scope}" if req.scope else req.tool) + where
