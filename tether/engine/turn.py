"""The turn/round loop. A round is one provider request, the assistant message it streams, and
the tool batch that message asks for; a turn runs rounds until the model asks for no tools or a
boundary (max rounds, output limit, refusal, cancel, provider error) ends it."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable
from contextlib import aclosing
from typing import Literal

import anyio
import anyio.lowlevel
import msgspec

from tether.engine import compaction
from tether.engine import events as ev
from tether.engine.compaction import KEEP_WHOLE
from tether.engine.context_window import ContextWindow
from tether.engine.grants import GrantBook
from tether.engine.history import (
    AssistantMessage,
    FinishReason,
    Message,
    Reasoning,
    TextPart,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    UserPart,
)
from tether.engine.images import leave_out
from tether.engine.pipeline import MAX_RESULT_CHARS, Batch
from tether.engine.providers import base as llm
from tether.engine.registry import Registry
from tether.engine.seam import Capabilities, ConfirmRequest
from tether.engine.sessions import undo
from tether.engine.sessions.state import Session, UsageTotals
from tether.errors import ProviderError, TurnFailed
from tether.schemas.config import AgentConfig

log = logging.getLogger("tether.turn")

Emit = Callable[[ev.Event], Awaitable[None]]
Persist = Callable[[Session], Awaitable[None]]

MAX_ROUNDS = 32
MAX_CONTINUATIONS = 2
CONTINUE_PROMPT = (
    "Your previous reply was cut off by the output limit. Continue exactly where it stopped, "
    "without repeating what you already wrote."
)


INTERRUPTED = (
    "error [ABORTED]: tether stopped while this call ran (killed or cancelled); it may have "
    "done part of its work: check its effects before running it again"
)


class TurnConfig(msgspec.Struct):
    system: str
    max_rounds: int = MAX_ROUNDS
    max_continuations: int = MAX_CONTINUATIONS
    parallel_tools: bool = True
    max_tool_result_chars: int = MAX_RESULT_CHARS
    keep_recent_results: int = KEEP_WHOLE
    instructions: tuple[str, ...] = ()  # more instruction files for the project snapshot
    # System-prompt sections the composition root adds after the tool rules (the enabled tools'
    # guidance); fixed for the process, so the prompt prefix stays stable.
    sections: tuple[str, ...] = ()
    tool_rules: str | None = None  # None: tether's own (`[agent] tool_directives`)
    mcp_instructions: bool = True  # the MCP servers' guidance goes into the system prompt
    summary_prompt: str | None = None  # None: tether's own (`[agent] compact_system_prompt`)
    auto_continue: bool = False  # past the round limit without asking
    # How a turn ending with a todo stack it never touched is reminded (engine/todo_nag.py).
    todo_nag: str = "developer"


def turn_config(agent: AgentConfig, persona: str, sections: tuple[str, ...]) -> TurnConfig:
    """The turns' settings from `[agent]`: its system prompt replaces the persona (the tool
    rules stay), its appended prompt follows it."""
    system = persona if agent.system_prompt is None else agent.system_prompt
    if agent.append_system_prompt:
        system = f"{system}\n\n{agent.append_system_prompt}".strip()
    return TurnConfig(
        system=system,
        max_rounds=agent.max_rounds,
        sections=sections,
        parallel_tools=agent.parallel_tools,
        max_tool_result_chars=agent.max_tool_result_chars,
        keep_recent_results=agent.keep_recent_results,
        instructions=tuple(agent.instructions),
        tool_rules=agent.tool_directives,
        mcp_instructions=agent.mcp_instructions,
        summary_prompt=agent.compact_system_prompt,
        auto_continue=agent.auto_continue_limits,
        todo_nag=agent.todo_nag_strategy,
    )


class _Round(msgspec.Struct):
    message: AssistantMessage
    finish: FinishReason
    usage: llm.Usage | None


class Turn:
    def __init__(
        self,
        session: Session,
        *,
        model: llm.LLM,
        registry: Registry,
        ctx: Capabilities,
        emit: Emit,
        persist: Persist,
        config: TurnConfig,
        grants: GrantBook | None = None,
        mode: str | None = None,
    ) -> None:
        """`mode`: the mode this turn's calls are judged in, whatever the session's says
        (`/yolo once`); None: the session's, as it is at each round."""
        self.session = session
        self.mode = mode
        self.grants = grants or GrantBook(session.state.grants)
        self.model = model
        self.registry = registry
        self.ctx = ctx
        ctx.todos = session.state.todos  # the todo tools change the session's stack in place
        self._front = emit
        self.persist = persist
        self.config = config
        self.context = ContextWindow(
            session,
            model,
            system=config.system,
            tools=registry.specs(),
            emit=self.emit,
            persist=persist,
            keep=config.keep_recent_results,
            summary_prompt=config.summary_prompt,
        )
        self._start = 0  # where this turn begins in the history (set by run)
        self.changes = undo.TurnChanges()  # files this turn wrote, as they were before

    async def emit(self, event: ev.Event) -> None:
        await self._front(event)

    async def run(self, parts: list[UserPart], scope: anyio.CancelScope) -> ev.StopReason:
        """Run the turn to its stop reason inside `scope` (the session's claim: cancelling it,
        even before this starts, ends the turn with `cancelled`); a provider failure raises
        TurnFailed."""
        history = self.session.history
        history.extend(interrupted_results(history))  # a killed turn's calls, answered
        self._start = len(history)
        history.append(UserMessage(parts))
        self.session.state.last_turn = UsageTotals()  # a /retry goes on adding to it
        return await self._go(scope)

    async def resume(self, scope: anyio.CancelScope) -> ev.StopReason:
        """Go on with the session's last turn, which did not finish (a provider error, a
        cancel, a kill, the round limit): what was stored stays, calls that never reported a
        result are answered as interrupted (never run again), a cut answer is continued."""
        history = self.session.history
        self._start = compaction.split_point(history)
        history.extend(interrupted_results(history))
        last = history[-1] if history else None
        if isinstance(last, AssistantMessage) and not last.tool_calls:
            history.append(UserMessage([TextPart(CONTINUE_PROMPT)]))
        return await self._go(scope)

    async def _go(self, scope: anyio.CancelScope) -> ev.StopReason:
        state = self.session.state
        state.unfinished = "running"  # what a kill leaves: /retry goes on from here
        await self.persist(self.session)
        stop: ev.StopReason = "cancelled"
        failed = False
        with scope:
            try:
                await anyio.lowlevel.checkpoint()  # a cancel that came first ends it here
                stop = await self._rounds()
            except TurnFailed:
                failed = True
                raise
            finally:
                done = stop in ("end_turn", "refusal") and not failed
                state.unfinished = None if done else ("error" if failed else stop)
                undo.push(state.undo, self.changes)
                with anyio.CancelScope(shield=True):
                    await self.persist(self.session)
        return stop

    async def _rounds(self) -> ev.StopReason:
        continuations = 0
        limit = self.config.max_rounds
        rounds = 0
        reminded = False
        while True:
            if rounds >= limit:
                more = self.config.max_rounds if self.config.auto_continue else 0
                more = more or await self._ask_for_more_rounds(rounds)
                if more == 0:
                    return "max_turn_requests"
                limit += more
            rounds += 1
            rnd = await self._stream_round()
            message = rnd.message
            if rnd.finish == "length" and message.tool_calls:
                # A call cut off mid-arguments must not run: the model re-issues it.
                message = AssistantMessage(message.text, message.reasoning, [], message.opaque)
            self.session.history.append(message)
            if rnd.finish == "refusal":
                return "refusal"
            if message.tool_calls:
                await self.persist(self.session)  # the calls are stored before any runs
                await self._run_tools(message.tool_calls)
                continue
            if rnd.finish == "pause":
                continue  # the paused response goes back as it is, and the model goes on
            if rnd.finish == "length":
                if continuations >= self.config.max_continuations:
                    return "max_tokens"
                continuations += 1
                self.session.history.append(UserMessage([TextPart(CONTINUE_PROMPT)]))
                continue
            if not reminded and await self._todo_reminder():
                reminded = True
                continue
            return "end_turn"

    async def _todo_reminder(self) -> bool:
        """At the turn's end, a non-empty todo stack it never touched: the model is reminded
        once (engine/todo_nag.py, loaded only then) and the turn goes on."""
        todos, strategy = self.session.state.todos, self.config.todo_nag
        if not todos or strategy == "none":
            return False
        from tether.engine import todo_nag

        if not todo_nag.due(todos, self.session.history[self._start :], strategy):
            return False
        added = todo_nag.messages(todos, strategy)
        for event in todo_nag.shown(added):
            await self.emit(event)
        self.session.history.extend(added)
        await self.persist(self.session)
        return True

    async def _ask_for_more_rounds(self, rounds: int) -> int:
        """At the round limit, the user decides: more rounds (as many again), the rest of the
        turn (no limit), or stop (0). Asked like a call, on a card of its own."""
        step = self.config.max_rounds
        card = f"rounds-{uuid.uuid4().hex[:12]}"
        title = f"Continue this turn past {rounds} rounds?"
        note = (
            f"The turn has run {rounds} model rounds ([agent] max_rounds = {step}). Allow: "
            f"{step} more rounds. Always allow: no limit for the rest of this turn. Reject: "
            "stop here (/retry goes on later)."
        )
        await self.emit(ev.ToolStarted(card, None, title, "other", {"rounds": rounds}))
        request = ConfirmRequest(
            call_id=card,
            tool="continue",
            title=title,
            kind="other",
            raw_input={"rounds": rounds},
            scope="",
            content=[ev.TextOut(note)],
            grant_label="more rounds in this turn",
        )
        [decision] = await self.ctx.approval.confirm([request], None)
        allowed = decision.verdict == "allow"
        status: Literal["completed", "failed"] = "completed" if allowed else "failed"
        said = decision.by if decision.verdict != "cancelled" else "prompt cancelled"
        outcome = f"{'Continued' if allowed else 'Stopped'}: {said}"
        with anyio.CancelScope(shield=True):
            await self.emit(ev.ToolFinished(card, status, [ev.TextOut(outcome)]))
        if not allowed:
            return 0
        return 1 << 30 if decision.remember else step

    async def _run_tools(self, calls: list[ToolCall]) -> None:
        batch = Batch(
            calls,
            registry=self.registry,
            ctx=self.ctx,
            grants=self.grants,
            mode=self.mode or self.session.state.mode,
            emit=self.emit,
            approvals=self.session.state.approvals,
            changes=self.changes,
            max_result_chars=self.config.max_tool_result_chars,
            parallel=self.config.parallel_tools,
            settled=self._commit_result,
        )
        first = len(self.session.history)
        try:
            await batch.run()
        finally:
            # Even when cancelled, every call gets a result so the history stays well-formed,
            # and every card the client saw is closed.
            self.session.history.extend(batch.unsettled())
            self._in_call_order(first, calls)
            with anyio.CancelScope(shield=True):
                await batch.close_cards()
        await self.persist(self.session)

    def _in_call_order(self, first: int, calls: list[ToolCall]) -> None:
        """The batch's results, stored as each came, put back in call order (the rows already
        stored are rewritten in place)."""
        history = self.session.history
        position = {c.id: i for i, c in enumerate(calls)}
        came = history[first:]
        ordered = sorted(
            came,
            key=lambda m: (
                position.get(m.call_id, len(position))
                if isinstance(m, ToolResultMessage)
                else len(position)
            ),
        )
        if ordered != came:
            history[first:] = ordered
            self.session.rewritten.update(range(first, len(history)))

    async def _commit_result(self, result: ToolResultMessage) -> None:
        """A call's result is stored the moment it is known: a kill later in the batch does
        not make /retry run it again."""
        self.session.history.append(result)
        with anyio.CancelScope(shield=True):
            await self.persist(self.session)

    async def _stream_round(self) -> _Round:
        self.context.tools = self.registry.specs()  # an MCP server may have come up meanwhile
        request = await self.context.request(self._start)
        acc = _Accumulator(uuid.uuid4().hex)
        try:
            # aclosing: a cancelled round closes the provider's HTTP stream at once, not at GC.
            async with aclosing(self.model.stream(request)) as stream:
                async for item in stream:
                    await acc.take(item, self.emit)
        except ProviderError as exc:
            raise TurnFailed(f"{exc}{self._leave_out_images(exc)}") from exc
        except anyio.get_cancelled_exc_class():
            if acc.text:  # keep what the user already saw; drop half-streamed tool calls
                self.session.history.append(AssistantMessage(acc.text))
            raise
        await self.emit(self._usage(acc.usage, request, acc.text))
        return _Round(acc.message(), acc.finish, acc.usage)

    def _leave_out_images(self, exc: ProviderError) -> str:
        """A refused request (400, 413, 422) with this turn's images: they leave the session,
        which would otherwise fail at every later prompt. What to tell the user."""
        if exc.retryable or exc.status not in (400, 413, 422):
            return ""
        count, changed = leave_out(self.session.history, self._start)
        self.session.rewritten.update(changed)
        if count == 0:
            return ""
        what = "this turn's image is" if count == 1 else f"this turn's {count} images are"
        return f" ({what} left out of the session, so the next prompt goes without)"

    def _usage(
        self, usage: llm.Usage | None, request: llm.ChatRequest, reply: str
    ) -> ev.UsageSampled:
        info = self.model.info
        self.context.calibrate(request, usage)
        if usage is None:
            used = self.context.estimate(request)
            self._count(UsageTotals(1, used, 0, len(reply) // 4, estimated=True))
            return ev.UsageSampled(used=used + len(reply) // 4, size=info.context_window)
        cost = _cost(info, usage)
        if cost is not None:
            self.session.state.cost += cost
        counts = (usage.input_tokens, usage.cached_tokens, usage.output_tokens)
        self._count(UsageTotals(1, *counts, cost=cost, estimated=usage.estimated))
        total = self.session.state.cost if cost is not None else None
        used = usage.input_tokens + usage.output_tokens
        api = not usage.estimated  # the API's own counts (cache reads included) go to the front
        return ev.UsageSampled(
            used=used,
            size=info.context_window,
            cost=total,
            currency=info.currency,
            input_tokens=usage.input_tokens if api else None,
            cached_tokens=usage.cached_tokens if api else None,
            output_tokens=usage.output_tokens if api else None,
        )

    def _count(self, round_usage: UsageTotals) -> None:
        """A round's usage, added to the turn's and the session's totals."""
        state = self.session.state
        state.last_turn.add(round_usage)
        state.usage.add(round_usage)


def _cost(info: llm.ModelInfo, usage: llm.Usage) -> float | None:
    if info.input_price is None or info.output_price is None:
        return None
    cached_price = (
        info.cached_input_price if info.cached_input_price is not None else info.input_price
    )
    fresh = usage.input_tokens - usage.cached_tokens
    return (
        fresh * info.input_price
        + usage.cached_tokens * cached_price
        + usage.output_tokens * info.output_price
    ) / 1e6


class _Accumulator:
    """Collects one round's stream into an AssistantMessage while forwarding deltas as events."""

    def __init__(self, message_id: str) -> None:
        self.id = message_id
        self.text_parts: list[str] = []
        self.reasoning: list[Reasoning] = []
        self.thought_parts: list[str] = []
        self.calls: list[ToolCall] = []
        self.opaque: list[dict[str, object]] = []
        self.usage: llm.Usage | None = None
        self.finish: FinishReason = "stop"
        self.retries = 0
        # Leading whitespace is held back: a message never starts with a whitespace-only chunk
        # (clients render an empty bubble for it); it goes out with the first visible text.
        self._held_text = ""
        self._held_thought = ""

    @property
    def text(self) -> str:
        return "".join(self.text_parts)

    async def take(self, item: llm.StreamEvent, emit: Emit) -> None:
        if isinstance(item, llm.TextDelta):
            text, self._held_text = _unhold(self.text_parts, self._held_text, item.text)
            if text:
                self.text_parts.append(text)
                await emit(ev.TextDelta(self.id, text))
        elif isinstance(item, llm.ThoughtDelta):
            text, self._held_thought = _unhold(self.thought_parts, self._held_thought, item.text)
            if text:
                self.thought_parts.append(text)
                await emit(ev.ThoughtDelta(self.id, text))
        elif isinstance(item, llm.ToolCallDelta):
            self.calls.append(ToolCall(item.id, item.name, item.arguments))
        elif isinstance(item, llm.ReasoningBlock):
            self.reasoning.append(item.reasoning)
        elif isinstance(item, llm.OpaqueBlock):
            self.opaque.append(item.block)
        elif isinstance(item, llm.Usage):
            self.usage = item
        elif isinstance(item, llm.Finish):
            self.finish = item.reason
        else:
            await emit(_retry_notice(item))

    def message(self) -> AssistantMessage:
        reasoning = self.reasoning
        if not reasoning and self.thought_parts:
            reasoning = [Reasoning("".join(self.thought_parts))]
        return AssistantMessage(self.text, reasoning, self.calls, self.opaque)


def _unhold(shown: list[str], held: str, text: str) -> tuple[str, str]:
    """(what to show now, what to keep holding) for a delta of a message showing `shown`."""
    if shown:
        return text, ""
    pending = held + text
    return ("", pending) if not pending.strip() else (pending, "")


def interrupted_results(history: list[Message]) -> list[ToolResultMessage]:
    """Results for the calls of the last assistant message that never reported one (tether
    was killed or the turn cancelled while they ran): they may have done part of their work,
    so they are answered, not run again."""
    for i in range(len(history) - 1, -1, -1):
        m = history[i]
        if isinstance(m, AssistantMessage):
            answered = {r.call_id for r in history[i + 1 :] if isinstance(r, ToolResultMessage)}
            return [
                ToolResultMessage(c.id, c.name, INTERRUPTED, is_error=True)
                for c in m.tool_calls
                if c.id not in answered
            ]
        if isinstance(m, UserMessage):
            return []
    return []


def _retry_notice(item: llm.RetryNotice) -> ev.Notice:
    of = f" of {item.attempts}" if item.attempts else ""
    return ev.Notice(
        "warning",
        f"The model provider is unavailable ({item.reason}); retrying in {item.delay:.0f} s",
        f"attempt {item.attempt}{of}; cancel the turn to stop waiting",
    )
