"""The tool execution pipeline for one round's batch of calls: decode -> validate -> plan ->
confirm (one batch) -> per-file locks -> timeout -> invoke -> spill."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable

import anyio
import msgspec

from tether.engine import round_card
from tether.engine.events import (
    Event,
    PlanChanged,
    TextOut,
    ToolContent,
    ToolFinished,
    ToolStarted,
    ToolUpdated,
)
from tether.engine.grants import Grant, GrantBook, Grants, Lasting
from tether.engine.history import ToolCall, ToolResultMessage
from tether.engine.registry import Args, CallPlan, Registry, ToolDef, ToolOutput
from tether.engine.seam import Capabilities, ConfirmDecision, ConfirmRequest
from tether.engine.sessions import undo
from tether.engine.sessions.state import ALLOW_ALL_MODE, READ_ONLY_MODE
from tether.engine.sessions.undo import TurnChanges
from tether.errors import SeamError, ToolError

log = logging.getLogger("tether.tools")

Emit = Callable[[Event], Awaitable[None]]
Settled = Callable[[ToolResultMessage], Awaitable[None]]
MAX_RESULT_CHARS = 32_768  # [agent] max_tool_result_chars: longer results are spilled
SPILL_PREVIEW_CHARS = 4 * 1024


class _Call(msgspec.Struct):
    call: ToolCall
    tool: ToolDef | None = None
    args: Args | None = None
    plan: CallPlan | None = None
    approved_by: str | None = None
    result: ToolResultMessage | None = None
    shown: bool = False  # its card was announced
    started: float | None = None  # when it began to run (monotonic)
    aborted: str | None = None  # its ABORTED text, once written: the card and history agree


def error_text(code: str, message: str) -> str:
    return f"error [{code}]: {message}"


class Batch:
    """Runs one round's calls. `results()` is complete even after a cancellation: calls that
    never finished are answered ABORTED, so the history stays well-formed for the next request."""

    def __init__(
        self,
        calls: list[ToolCall],
        *,
        registry: Registry,
        ctx: Capabilities,
        grants: GrantBook | Grants,
        mode: str,
        emit: Emit,
        approvals: str = "round",
        changes: TurnChanges | None = None,
        max_result_chars: int = MAX_RESULT_CHARS,
        parallel: bool = True,
        settled: Settled | None = None,
    ) -> None:
        """`settled`: told each call's result the moment it is known (to store it);
        `parallel`: a round's independent calls run at once (else one after another)."""
        self._calls = [_Call(c) for c in calls]
        self._registry = registry
        self._ctx = ctx
        self._grants = grants if isinstance(grants, GrantBook) else GrantBook(grants)
        self._mode = mode
        self._approvals = approvals  # "round": one request for several calls; "call": each
        self._changes = changes  # the turn's pre-images, for /undo
        self._emit = emit
        self._max_chars = max_result_chars
        self._parallel = parallel
        self._settled = settled

    async def run(self) -> list[ToolResultMessage]:
        """Plan, confirm and run the calls. A call whose plan fails on the files as they are
        (FILE_NOT_FOUND, ...) while an earlier call of the round writes waits for the earlier
        ones to run and is planned again then: calls that depend on each other run in call
        order, each planned against the state the earlier ones leave."""
        pending = list(self._calls)
        while pending:
            written: set[str] = set()
            later: list[_Call] = []
            for c in pending:
                # After a call that waits, the later ones wait too: they keep call order.
                if later or not await self._prepare(c, written, may_wait=bool(written)):
                    later.append(c)
            ready = [c for c in pending if c not in later]
            for c in ready:
                if c.result is None and c.plan and not c.plan.confirm and c.plan.waived_by_mode:
                    c.approved_by = f"mode ({self._mode})"
            await self._confirm(
                [c for c in ready if c.result is None and c.plan and c.plan.confirm]
            )
            await self._execute([c for c in ready if c.result is None])
            pending = later
        return self.results()

    async def close_cards(self) -> None:
        """Every card the client was shown ends `completed` or `failed`: after a cancel, the
        calls that never finished are closed here (their results say ABORTED)."""
        for c in self._calls:
            if c.shown and c.result is None:
                await self._emit(ToolFinished(c.call.id, "failed", [TextOut(_abort_text(c))]))

    def results(self) -> list[ToolResultMessage]:
        return [c.result or _aborted(c) for c in self._calls]

    def unsettled(self) -> list[ToolResultMessage]:
        """Results for the calls that never got one (the turn was cancelled): ABORTED."""
        return [_aborted(c) for c in self._calls if c.result is None]

    async def _settle(self, c: _Call, result: ToolResultMessage) -> None:
        c.result = result
        if self._settled is not None:
            await self._settled(result)

    async def _fail(self, c: _Call, code: str, message: str) -> None:
        text = error_text(code, message)
        await self._settle(c, ToolResultMessage(c.call.id, c.call.name, text, is_error=True))
        await self._emit(ToolFinished(c.call.id, "failed", [TextOut(text), *_decided(c)]))

    # --- decode, validate, plan ------------------------------------------------------------

    async def _prepare(self, c: _Call, written: set[str], *, may_wait: bool = False) -> bool:
        """Plan the call and show its card (or refuse it); False when it waits for the calls
        planned before it to run (`may_wait`: some of them write)."""
        c.tool = self._registry.get(c.call.name)
        try:
            if c.tool is None:
                raise self._registry.missing(c.call.name)
            c.args = c.tool.decode(c.call.arguments)
            refusal = c.tool.read_only_refusal(c.args) if self._mode == READ_ONLY_MODE else None
            if refusal is not None:
                # The tool stays in the list (a stable prefix keeps the prompt cache); its
                # calls are answered here, before anything is planned or asked.
                raise ToolError("READ_ONLY_MODE", refusal)
            c.plan = await c.tool.plan(self._ctx, c.args, self._mode)
        except (ToolError, SeamError) as exc:
            if may_wait and exc.code in _STATE_CODES:
                return False  # an earlier call may create what this one needs
            await self._refuse(c, exc.code, exc.message)
            return True
        except Exception as exc:  # a planner's bug is this call's error, never the turn's
            log.exception("planning %s failed", c.call.name)
            await self._refuse(c, "TOOL_FAILED", f"{type(exc).__name__}: {exc}")
            return True
        p = c.plan
        if p.always_ask or self._ctx.policy.guards(p.writes):
            p.always_ask = p.confirm = True  # the mode waives nothing, no grant covers it
            p.waived_by_mode, p.grantable = False, False
            p.skill_dirs = _skill_dirs(self._ctx, p.writes)
            p.title += " (a change to a skill)" if p.skill_dirs else " (a skill: asked every time)"
        if written.intersection(p.writes):
            # Planned against the files as they were before this round: an earlier call of the
            # round writes the same file first, so whatever the plan says, the user decides.
            p.confirm = True
            p.title += " (after an earlier call of this round)"
        written.update(p.writes)
        c.shown = True
        await self._emit(
            ToolStarted(
                c.call.id, c.call.name, p.title, p.kind, _raw(c.call), p.locations, p.content
            )
        )
        return True

    async def _refuse(self, c: _Call, code: str, message: str) -> None:
        """A call refused before it ran still shows as its tool would: title, kind, place."""
        card = (
            c.tool.describe(self._ctx, c.args)
            if c.tool is not None
            else CallPlan(title=c.call.name)
        )
        await self._emit(
            ToolStarted(c.call.id, c.call.name, card.title, card.kind, _raw(c.call), card.locations)
        )
        await self._fail(c, code, message)

    # --- the aggregated confirm ----------------------------------------------------------

    async def _confirm(self, pending: list[_Call]) -> None:
        ask: list[_Call] = []
        for c in pending:
            assert c.plan is not None
            if c.plan.skill_dirs:
                c.approved_by = _skill_standing(self._ctx, c.plan.skill_dirs)
                if c.approved_by is not None:
                    continue
            waived = not (c.plan.always_ask or c.plan.asks_in_every_mode)
            if self._mode == ALLOW_ALL_MODE and waived:
                c.approved_by = f"mode ({ALLOW_ALL_MODE})"
                continue
            found = self._grants.match(c.call.name, c.plan.scope) if c.plan.grantable else None
            if found is None:
                ask.append(c)
            elif found[0].verdict == "allow":
                c.approved_by = f"grant ({found[1]})"
            else:
                why = f"grant ({found[1]}): always rejected {found[0].scope}"
                await self._fail(c, "REJECTED", why)
        if ask:
            decisions = await self._decide([_request(c, self._grants.lasting) for c in ask])
            for c, d in zip(ask, decisions, strict=True):
                await self._decided(c, d)

    async def _decided(self, c: _Call, d: ConfirmDecision) -> None:
        assert c.plan is not None
        if d.remember and d.verdict in ("allow", "reject") and c.plan.grantable:
            label = c.plan.grant_label
            await self._grants.remember(Grant(c.call.name, c.plan.scope, d.verdict, label))
        if d.verdict == "allow" and d.remember and c.plan.skill_dirs:
            _remember_skills(self._ctx, c.plan.skill_dirs)
            c.approved_by = "user (session)"
        elif d.verdict == "allow":
            # Nothing was recorded for a call that asks every time: it was allowed once.
            c.approved_by = d.by if c.plan.grantable else _once(d.by)
        elif d.verdict == "reject":
            why = "policy" if d.by == "policy" else "user declined"
            if d.note:
                why += f"; the user says: {d.note!r}"
            await self._fail(c, "REJECTED", why)
        else:
            await self._fail(c, "REJECTED", "prompt cancelled")

    async def _decide(self, requests: list[ConfirmRequest]) -> list[ConfirmDecision]:
        """Ask once for the round on its own card (shown, then closed like every card), or
        call by call when there is one call or the session reviews each."""
        if len(requests) < 2 or self._approvals != "round":
            return await self._ctx.approval.confirm(requests, None)
        card = round_card.round_card(requests)
        await self._emit(
            ToolStarted(
                card.id, None, card.title, card.kind, card.raw_input, card.locations, card.content
            )
        )
        decisions: list[ConfirmDecision] = [ConfirmDecision("cancelled") for _ in requests]
        try:
            decisions = await self._ctx.approval.confirm(requests, card)
        finally:
            status = "completed" if any(d.verdict == "allow" for d in decisions) else "failed"
            with anyio.CancelScope(shield=True):
                await self._emit(
                    ToolFinished(card.id, status, round_card.outcome(requests, decisions))
                )
        return decisions

    # --- execution -----------------------------------------------------------------------

    async def _execute(self, ready: list[_Call]) -> None:
        # A call waits for every earlier call of this batch that writes a file it touches
        # (writes, or names on its card: a read after a write reads what was written).
        done: dict[str, anyio.Event] = {}
        if not self._parallel:
            for c in ready:
                await self._run_one(c, [], anyio.Event())
            return
        async with anyio.create_task_group() as tg:
            for c in ready:
                assert c.plan is not None
                touched = {*c.plan.writes, *(loc.path for loc in c.plan.locations)}
                before = [done[p] for p in touched if p in done]
                finished = anyio.Event()
                for p in c.plan.writes:
                    done[p] = finished
                tg.start_soon(self._run_one, c, before, finished)

    async def _run_one(self, c: _Call, before: list[anyio.Event], finished: anyio.Event) -> None:
        try:
            for e in before:
                await e.wait()
            if self._changes is not None and c.plan is not None and c.plan.writes:
                await undo.remember(self._ctx, self._changes, c.plan.writes)
            await self._invoke(c)
        finally:
            finished.set()

    async def _invoke(self, c: _Call) -> None:
        assert c.tool is not None and c.args is not None
        await self._emit(ToolUpdated(c.call.id, status="in_progress"))
        call_id = c.call.id
        c.started = time.monotonic()

        async def report(content: list[ToolContent]) -> None:
            await self._emit(ToolUpdated(call_id, content=content))

        try:
            out: ToolOutput | None = None
            ctx = msgspec.structs.replace(self._ctx, call_id=c.call.id, report=report)
            with anyio.move_on_after(c.tool.timeout):
                out = await c.tool.invoke(ctx, c.args)
            if out is None:
                key = f" (the budget is `{c.tool.timeout_key}`)" if c.tool.timeout_key else ""
                raise ToolError(
                    "TOOL_TIMEOUT",
                    f"{c.tool.name} did not finish within {c.tool.timeout:g} s{key}",
                )
        except (ToolError, SeamError) as exc:
            await self._fail(c, exc.code, exc.message)
            return
        except Exception as exc:
            log.exception("tool %s failed", c.call.name)
            await self._fail(c, "TOOL_FAILED", f"{type(exc).__name__}: {exc}")
            return
        if out.is_error:
            await self._settle(
                c, ToolResultMessage(c.call.id, c.call.name, out.text, is_error=True)
            )
            content = [*out.content, *_decided(c)]
            await self._emit(ToolFinished(c.call.id, "failed", content, out.raw_output))
            return
        text = await self._spill(c, out.text) if c.tool.spill else out.text
        if c.approved_by:  # leads, so a cut result keeps it
            text = f"[approval] {c.approved_by}\n{text}"
        await self._settle(c, ToolResultMessage(c.call.id, c.call.name, text, images=out.images))
        content = [*out.content, *_decided(c)]
        await self._emit(ToolFinished(c.call.id, "completed", content, out.raw_output))
        if out.plan is not None:
            await self._emit(PlanChanged(out.plan))

    async def _spill(self, c: _Call, text: str) -> str:
        if len(text) <= self._max_chars:
            return text
        try:
            path = await self._ctx.spill.save(f"{c.call.name}-{c.call.id}", text)
        except (OSError, SeamError):
            log.warning("could not spill %s; returning it inline", c.call.id)
            return text
        shown = min(SPILL_PREVIEW_CHARS, self._max_chars)
        return (
            f"{text[:shown]}\n[Truncated ({self._max_chars} chars max; {len(text) - shown} "
            f"omitted). The full result is saved at {path} — read it with read_file. You may ask "
            "for user to increase the limit via configuration file.]"
        )


# Plan errors about the files as they are now: an earlier call of the round may change that.
_STATE_CODES = frozenset(
    {"FILE_NOT_FOUND", "NOT_A_DIRECTORY", "IS_A_DIRECTORY", "FILE_EXISTS", "NOT_A_REGULAR_FILE"}
)


def _aborted(c: _Call) -> ToolResultMessage:
    return ToolResultMessage(c.call.id, c.call.name, _abort_text(c), True)


def _abort_text(c: _Call) -> str:
    """A call the cancel cut short: in its tool's words when it has some (how long a wait
    ran), written once so its card and its result say the same."""
    if c.aborted is None:
        message = "the turn was cancelled"
        if c.tool is not None and c.tool.aborted is not None and c.started is not None:
            message = c.tool.aborted(time.monotonic() - c.started)
        c.aborted = error_text("ABORTED", message)
    return c.aborted


def _decided(c: _Call) -> list[ToolContent]:
    """Who allowed the call, on its card: part of the session, so a reload still says it."""
    return [TextOut(f"Allowed: {c.approved_by}")] if c.approved_by else []


def _once(by: str) -> str:
    return "user (once)" if by == "user (always)" else by


def _raw(call: ToolCall) -> object:
    try:
        return msgspec.json.decode(call.arguments or "{}")
    except msgspec.DecodeError:
        return {"_unparsed": call.arguments}


def _request(c: _Call, lasting: Lasting) -> ConfirmRequest:
    assert c.plan is not None
    return ConfirmRequest(
        lasting=lasting,
        call_id=c.call.id,
        tool=c.call.name,
        title=c.plan.title,
        kind=c.plan.kind,
        raw_input=_raw(c.call),
        scope=c.plan.scope,
        content=c.plan.content,
        locations=c.plan.locations,
        target=c.plan.target,
        grant_label=c.plan.grant_label,
        grantable=c.plan.grantable,
        session_label=_skill_label(c.plan.skill_dirs),
    )


# --- changes to skills (engine/skills/skill_writes.py, loaded when a skill is changed) --------


def _skill_dirs(ctx: Capabilities, writes: list[str]) -> list[str]:
    from tether.engine.skills.skill_writes import skill_dirs

    roots = [r.path for r in ctx.skills]
    return skill_dirs(writes, roots, ctx.policy.read_roots or roots)


def _skill_standing(ctx: Capabilities, dirs: list[str]) -> str | None:
    from tether.engine.skills.skill_writes import standing

    return standing(dirs, ctx.skill_writes, ctx.skill_allow_write)


def _remember_skills(ctx: Capabilities, dirs: list[str]) -> None:
    from tether.engine.skills.skill_writes import remember

    remember(dirs, ctx.skill_writes)


def _skill_label(dirs: list[str]) -> str:
    if not dirs:
        return ""
    from tether.engine.skills.skill_writes import label

    return label(dirs)
