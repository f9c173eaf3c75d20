"""The turn/round loop. A round is one provider request, the assistant message it streams, and
the tool batch that message asks for; a turn runs rounds until the model asks for no tools or a
boundary (max rounds, output limit, refusal, cancel, provider error) ends it."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable
from contextlib import aclosing
from dataclasses import dataclass

import anyio
import anyio.lowlevel

from tether.engine import compaction
from tether.engine import events as ev
from tether.engine.history import (
    AssistantMessage,
    FinishReason,
    Message,
    Reasoning,
    TextPart,
    ToolCall,
    UserMessage,
    UserPart,
)
from tether.engine.images import leave_out
from tether.engine.pipeline import Batch
from tether.engine.providers import base as llm
from tether.engine.registry import Registry
from tether.engine.seam import Capabilities
from tether.engine.sessions import undo
from tether.engine.sessions.state import Session
from tether.errors import TetherError

log = logging.getLogger("tether.turn")

Emit = Callable[[ev.Event], Awaitable[None]]
Persist = Callable[[Session], Awaitable[None]]

MAX_ROUNDS = 32
MAX_CONTINUATIONS = 2
CONTINUE_PROMPT = (
    "Your previous reply was cut off by the output limit. Continue exactly where it stopped, "
    "without repeating what you already wrote."
)


class TurnFailed(TetherError):
    """The provider could not serve the turn; the message is fit to show the user."""

    def __init__(self, message: str) -> None:
        super().__init__("TURN_FAILED", message)


@dataclass
class TurnConfig:
    system: str
    max_rounds: int = MAX_ROUNDS
    max_continuations: int = MAX_CONTINUATIONS
    # System-prompt sections the composition root adds after the tool rules (the enabled tools'
    # guidance); fixed for the process, so the prompt prefix stays stable.
    sections: tuple[str, ...] = ()


@dataclass
class _Round:
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
    ) -> None:
        self.session = session
        self.model = model
        self.registry = registry
        self.ctx = ctx
        self._front = emit
        self.persist = persist
        self.config = config
        self._told_shrink = False
        self._start = 0  # where this turn begins in the history (set by run)
        self.changes = undo.TurnChanges()  # files this turn wrote, as they were before

    async def emit(self, event: ev.Event) -> None:
        await self._front(event)

    async def run(self, parts: list[UserPart], scope: anyio.CancelScope) -> ev.StopReason:
        """Run the turn to its stop reason inside `scope` (the session's claim: cancelling it,
        even before this starts, ends the turn with `cancelled`); a provider failure raises
        TurnFailed."""
        self._start = len(self.session.history)
        self.session.history.append(UserMessage(parts))
        await self.persist(self.session)
        with scope:
            try:
                await anyio.lowlevel.checkpoint()  # a cancel that came first ends it here
                return await self._rounds()
            finally:
                undo.push(self.session.state.undo, self.changes)
                with anyio.CancelScope(shield=True):
                    await self.persist(self.session)
        return "cancelled"

    async def _rounds(self) -> ev.StopReason:
        continuations = 0
        for _ in range(self.config.max_rounds):
            rnd = await self._stream_round()
            self.session.history.append(rnd.message)
            if rnd.finish == "refusal":
                return "refusal"
            if rnd.message.tool_calls:
                await self._run_tools(rnd.message.tool_calls)
                continue
            if rnd.finish == "pause":
                continue  # the paused response goes back as it is, and the model goes on
            if rnd.finish == "length":
                if continuations >= self.config.max_continuations:
                    return "max_tokens"
                continuations += 1
                self.session.history.append(UserMessage([TextPart(CONTINUE_PROMPT)]))
                continue
            return "end_turn"
        return "max_turn_requests"

    async def _run_tools(self, calls: list[ToolCall]) -> None:
        batch = Batch(
            calls,
            registry=self.registry,
            ctx=self.ctx,
            grants=self.session.state.grants,
            mode=self.session.state.mode,
            emit=self.emit,
            approvals=self.session.state.approvals,
            changes=self.changes,
        )
        try:
            await batch.run()
        finally:
            # Even when cancelled, every call gets a result so the history stays well-formed,
            # and every card the client saw is closed.
            self.session.history.extend(batch.results())
            with anyio.CancelScope(shield=True):
                await batch.close_cards()
        await self.persist(self.session)

    async def _stream_round(self) -> _Round:
        request = await self._request()
        acc = _Accumulator(uuid.uuid4().hex)
        try:
            # aclosing: a cancelled round closes the provider's HTTP stream at once, not at GC.
            async with aclosing(self.model.stream(request)) as stream:
                async for item in stream:
                    await acc.take(item, self.emit)
        except llm.ProviderError as exc:
            raise TurnFailed(f"{exc}{self._leave_out_images(exc)}") from exc
        except anyio.get_cancelled_exc_class():
            if acc.text:  # keep what the user already saw; drop half-streamed tool calls
                self.session.history.append(AssistantMessage(acc.text))
            raise
        await self.emit(self._usage(acc.usage, request, acc.text))
        return _Round(acc.message(), acc.finish, acc.usage)

    def _leave_out_images(self, exc: llm.ProviderError) -> str:
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

    # --- the request and its context reduction ---------------------------------------------

    async def _request(self) -> llm.ChatRequest:
        info, state = self.model.info, self.session.state
        system, tools = self.config.system, self.registry.specs()
        messages = self._messages()
        fits = compaction.budget(info)
        if compaction.estimate_tokens(system, messages, tools) > fits:
            messages, shrunk = compaction.shrink_tool_results(messages, fits, system, tools)
            if compaction.estimate_tokens(system, messages, tools) > fits and await self._compact():
                messages, shrunk = compaction.shrink_tool_results(
                    self._messages(), fits, system, tools
                )
            if shrunk and not self._told_shrink:
                self._told_shrink = True
                await self.emit(
                    ev.Notice(
                        "info", f"Shortened {shrunk} old tool results to fit the context window"
                    )
                )
        return llm.ChatRequest(
            system=system,
            messages=messages,
            tools=tools,
            max_output_tokens=info.max_output_tokens,
            reasoning=state.reasoning,
        )

    def _messages(self) -> list[Message]:
        state, history = self.session.state, self.session.history
        if state.summary is None:
            return list(history)
        return compaction.with_summary(state.summary, history[state.compacted_upto :])

    async def _compact(self) -> bool:
        """Summarise the history before the current turn; False when there is nothing older."""
        state, history = self.session.state, self.session.history
        split = compaction.split_point(history)
        if split <= state.compacted_upto:
            return False
        older = self._messages()[: split - state.compacted_upto + (1 if state.summary else 0)]
        request = compaction.summary_request(older, self.model.info)
        parts: list[str] = []
        try:
            async with aclosing(self.model.stream(request)) as stream:
                async for item in stream:
                    if isinstance(item, llm.TextDelta):
                        parts.append(item.text)
        except llm.ProviderError as exc:
            raise TurnFailed(f"compacting the context failed: {exc}") from exc
        state.summary, state.compacted_upto = "".join(parts).strip(), split
        await self.persist(self.session)
        await self.emit(
            ev.Notice("info", f"Context compacted: {split} earlier messages summarised")
        )
        return True

    def _usage(
        self, usage: llm.Usage | None, request: llm.ChatRequest, reply: str
    ) -> ev.UsageSampled:
        info = self.model.info
        if usage is None:
            used = compaction.estimate_tokens(request.system, request.messages, request.tools)
            return ev.UsageSampled(used=used + len(reply) // 4, size=info.context_window)
        cost = _cost(info, usage)
        if cost is not None:
            self.session.state.cost += cost
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


def _retry_notice(item: llm.RetryNotice) -> ev.Notice:
    of = f" of {item.attempts}" if item.attempts else ""
    return ev.Notice(
        "warning",
        f"The model provider is unavailable ({item.reason}); retrying in {item.delay:.0f} s",
        f"attempt {item.attempt}{of}; cancel the turn to stop waiting",
    )
