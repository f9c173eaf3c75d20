"""The `approval` seam over LSP: the aggregated confirm as `window/showMessageRequest`.

A round of two or more calls asks once: the message lists the calls (what each edits or runs,
with its diff's size), each followed by what its card says (where a command runs) and its diff
(approval_text.py), the actions are `Reject all`, `Allow all` and `One by one`; the last asks
about each call on its own (`Reject`, `Allow`, `Always allow`), as does a single call. A client
that shows documents is first shown the whole diff (review_document.py, `window/showDocument`
without the focus), so the change is on its screen when it is asked; a diff too long for the
question is cut there, and the question names that document. The safe
action comes first: a client that pre-selects the first action (eglot fills it into the
minibuffer, so a bare RET picks it) rejects by default. A dismissed question, an error or a
malformed answer allows nothing (the calls are answered `cancelled`).

Every client is asked, whether or not it announced `window.showMessage` (eglot answers the
request without announcing it). One that answers "method not found" (Helix) cannot ask: that is
remembered for the connection, it is told once per round with `window/showMessage`, and the calls
are refused by policy.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import anyio
from lsprotocol import types

from tether.engine.seam import ConfirmDecision, ConfirmRequest, RoundCard
from tether.rpc.lsp import approval_text as text
from tether.rpc.lsp.lsp_messages import show_document
from tether.rpc.lsp.review_document import ReviewDocuments
from tether.rpc.lsp.wire import Connection
from tether.rpc.rpc_error import METHOD_NOT_FOUND, ConnectionClosed, RpcError

log = logging.getLogger("tether.lsp")

ALLOW_ALL, REJECT_ALL, ONE_BY_ONE = "Allow all", "Reject all", "One by one"
ALLOW, ALWAYS, REJECT = "Allow", "Always allow", "Reject"

Status = Callable[[str], None]  # shows what the turn waits on (the progress line)
SHOW_WAIT = 5.0  # seconds a client may take to show a review document before it is asked


class LspApproval:
    def __init__(
        self,
        conn: Connection,
        *,
        status: Status,
        reviews: ReviewDocuments | None = None,
        shows_documents: bool = False,
    ) -> None:
        self._conn = conn
        self._can_ask = True  # until the client answers "method not found"
        self._status = status
        self._reviews = reviews
        self._shows_documents = shows_documents

    @property
    def can_ask(self) -> bool:
        return self._can_ask

    def cannot_ask(self) -> None:
        """The client answered `window/showMessageRequest` with "method not found"."""
        if self._can_ask:
            log.info("the client cannot ask (window/showMessageRequest: method not found)")
        self._can_ask = False

    async def confirm(
        self, batch: list[ConfirmRequest], card: RoundCard | None
    ) -> list[ConfirmDecision]:
        if not self._can_ask:
            return self._refuse(batch, card)
        diffs = await anyio.to_thread.run_sync(text.diffs_of, batch)
        if card is not None:
            return await self._round(batch, diffs, card)
        return await self._each(batch, diffs)

    async def _round(
        self, batch: list[ConfirmRequest], diffs: list[text.CallDiff], card: RoundCard
    ) -> list[ConfirmDecision]:
        review = await self._review(diffs)
        budget = text.DiffBudget()
        lines = [f"tether asks to {card.title}:"]
        for i, (r, diff) in enumerate(zip(batch, diffs, strict=True)):
            lines += [f"{i + 1}. {text.title_line(r, diff)}", *text.details(r)]
            lines += budget.take(diff.hunks)
        lines += budget.end(review, "Allow these changes?")
        self._status(f"Waiting for your approval: {card.title}")
        choice = await self._ask("\n".join(lines), [REJECT_ALL, ALLOW_ALL, ONE_BY_ONE])
        if choice == ALLOW_ALL:
            return [ConfirmDecision("allow", by="user (round)") for _ in batch]
        if choice == REJECT_ALL:
            return [ConfirmDecision("reject", by="user (round)") for _ in batch]
        if choice == ONE_BY_ONE:
            return await self._each(batch, diffs, review or "")
        if not self._can_ask:  # "method not found": this client cannot ask at all
            return self._refuse(batch, card)
        return [ConfirmDecision("cancelled") for _ in batch]

    async def _each(
        self, batch: list[ConfirmRequest], diffs: list[text.CallDiff], review: str | None = None
    ) -> list[ConfirmDecision]:
        """Each call asked on its own; `review`: the round's review document ("" none), which
        serves its calls (no document of their own)."""
        decisions: list[ConfirmDecision] = []
        for n, req in enumerate(batch):
            if not self._can_ask:  # the client turned out unable to ask
                return decisions + self._refuse(batch[n:], None)
            decision = await self._one(req, diffs[n], review)
            decisions.append(decision)
            if decision.verdict == "cancelled":  # dismissed: stop asking
                decisions += [ConfirmDecision("cancelled") for _ in batch[n + 1 :]]
                break
        return decisions

    async def _one(
        self, req: ConfirmRequest, diff: text.CallDiff, review: str | None
    ) -> ConfirmDecision:
        scope = req.grant_label or (f"{req.tool} in {req.scope}" if req.scope else req.tool)
        if review is None:
            review = await self._review([diff])
        lines = [f"tether asks to {text.title_line(req, diff)}", *text.details(req)]
        if req.grantable:
            lines.append(f"({ALWAYS}: {scope}, for this {req.lasting})")
        budget = text.DiffBudget()
        lines += budget.take(diff.hunks)
        lines += budget.end(review or None, "Allow this change?")
        self._status(f"Waiting for your approval: {req.title}")
        choice = await self._ask(
            "\n".join(lines), [REJECT, ALLOW, ALWAYS] if req.grantable else [REJECT, ALLOW]
        )
        if choice == ALLOW:
            return ConfirmDecision("allow", by="user (once)")
        if choice == ALWAYS:
            return ConfirmDecision("allow", by="user (always)", remember=True)
        if choice == REJECT:
            return ConfirmDecision("reject", by="user (once)")
        return ConfirmDecision("cancelled")

    async def _review(self, diffs: list[text.CallDiff]) -> str | None:
        """The batch's whole diff as a review document, shown first to a client that shows
        documents; written for others only when the question cannot carry all of it. Its
        path; None when there is no document."""
        diff = text.review_text(diffs)
        long = sum(len(d.hunks) for d in diffs) > text.DIFF_LINES
        if not diff or self._reviews is None or not (self._shows_documents or long):
            return None
        path = await self._reviews.write(diff)
        if path is None:
            return None
        if self._shows_documents:
            with anyio.move_on_after(SHOW_WAIT):  # a client that never answers is asked anyway
                await show_document(self._conn, path.as_uri())
        return str(path)

    async def _ask(self, message: str, titles: list[str]) -> str | None:
        """The title the user picked; None when dismissed or the question failed."""
        params = types.ShowMessageRequestParams(
            type=types.MessageType.Info,
            message=message,
            actions=[types.MessageActionItem(title=t) for t in titles],
        )
        try:
            item: types.MessageActionItem | None = await self._conn.request(
                types.WINDOW_SHOW_MESSAGE_REQUEST, params
            )
        except RpcError as exc:
            if exc.code == METHOD_NOT_FOUND:
                self.cannot_ask()
                return None
            log.warning("approval question failed; treating it as cancelled: %s", exc.message)
            return None
        except ConnectionClosed:
            return None
        if item is None:
            return None
        if item.title not in titles:
            log.warning("the client chose an action never offered: %r", item.title)
            return None
        return item.title

    def _refuse(self, batch: list[ConfirmRequest], card: RoundCard | None) -> list[ConfirmDecision]:
        what = card.title if card is not None else ", ".join(r.title for r in batch)
        message = (
            f"tether refused to {what}: this editor cannot ask for approval "
            "(it has no window/showMessageRequest), so calls that need it are not run"
        )
        self._conn.notify(
            types.WINDOW_SHOW_MESSAGE,
            types.ShowMessageParams(type=types.MessageType.Warning, message=message),
        )
        return [ConfirmDecision("reject", by="policy") for _ in batch]
