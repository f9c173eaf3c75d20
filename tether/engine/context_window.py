"""A session's requests made to fit the model's window (the steps are `compaction.py`'s): the
messages a request carries, the summary that stands in for the older part of the conversation
(made here, stored with the session, shown as "compacted here"), and the estimate's calibration
from what the API reports."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from contextlib import aclosing

from tether.engine import compaction
from tether.engine import events as ev
from tether.engine.compaction import Window
from tether.engine.history import AssistantMessage, Message
from tether.engine.providers import base as llm
from tether.engine.sessions.state import Session
from tether.errors import ProviderError

log = logging.getLogger("tether.context")

Emit = Callable[[ev.Event], Awaitable[None]]
Persist = Callable[[Session], Awaitable[None]]


class ContextWindow:
    def __init__(
        self,
        session: Session,
        model: llm.LLM,
        *,
        system: str,
        tools: list[llm.ToolSpec],
        emit: Emit,
        persist: Persist,
        keep: int = compaction.KEEP_WHOLE,
        summary_prompt: str | None = None,
    ) -> None:
        self.session = session
        # The instructions the summary follows ([agent] compact_system_prompt); None: tether's.
        self.summary_prompt = summary_prompt or compaction.SUMMARY_PROMPT
        self.keep = keep  # the newest tool results carried whole ([agent] keep_recent_results)
        self.model = model
        self.system = system
        self.tools = tools
        self._emit = emit
        self._persist = persist
        self._told_shrink = False
        self._told_failure = False

    # --- a request -------------------------------------------------------------------------

    def window(self) -> Window:
        ratio = self.session.state.token_ratios.get(self.model.info.id, 1.0)
        return Window.of(self.model.info, self.system, self.tools, ratio, self.session.sizes)

    def used(self) -> int:
        """The next request's size in tokens as things stand, calibrated where the API said."""
        chars = compaction.fixed_chars(self.system, self.tools)
        ratio = self.session.state.token_ratios.get(self.model.info.id, 1.0)
        return round(compaction.estimate(chars + self.session.sizes.total(self._carried())) * ratio)

    def estimate(self, request: llm.ChatRequest) -> int:
        """The request's size in estimated tokens, uncalibrated."""
        chars = compaction.fixed_chars(request.system, request.tools)
        return compaction.estimate(chars + self.session.sizes.total(request.messages))

    async def request(self, turn_start: int) -> llm.ChatRequest:
        """The next request of a turn that began at history index `turn_start`."""
        messages = await self.messages(turn_start)
        info = self.model.info
        return llm.ChatRequest(
            system=self.system,
            messages=messages,
            tools=self.tools,
            max_output_tokens=info.max_output_tokens,
            reasoning=self.session.state.reasoning,
        )

    async def messages(self, turn_start: int) -> list[Message]:
        window = self.window()
        messages = self._carried()
        if window.fits(messages):
            return messages
        shrunk = self._shrink(messages, window, turn_start)
        if not window.fits(messages) and await self.compact(self._split(turn_start, window)):
            messages = self._carried()
            shrunk = self._shrink(messages, window, turn_start)
        if not window.fits(messages):
            shrunk += compaction.shrink(messages, window, keep=1)
            if not window.fits(messages):
                compaction.fit_last_result(messages, window)
        if shrunk and not self._told_shrink:
            self._told_shrink = True
            text = f"Shortened {shrunk} old tool results to fit the context window"
            await self._emit(ev.Notice("info", text))
        return messages

    def _carried(self) -> list[Message]:
        """The history as requests carry it: the summary in place of what it covers."""
        state, history = self.session.state, self.session.history
        if state.summary is None:  # nothing, or everything before a /clear, is left behind
            return history[state.compacted_upto :]
        return compaction.with_summary(state.summary, history[state.compacted_upto :])

    def _offset(self) -> int:
        """Where history index 0 would be in `_carried()`'s list (negative once compacted)."""
        state = self.session.state
        return (1 if state.summary is not None else 0) - state.compacted_upto

    def _shrink(self, messages: list[Message], window: Window, turn_start: int) -> int:
        """Old results first (the newest `keep` kept); the turn's own only when the turn
        alone overflows (its newest kept)."""
        at = max(turn_start + self._offset(), 0)
        shrunk = compaction.shrink(messages, window, stop=at, keep=self.keep)
        if not window.fits(messages) and not window.fits(messages[at:]):
            shrunk += compaction.shrink(messages, window, start=at, keep=1)
        return shrunk

    def _split(self, turn_start: int, window: Window) -> int:
        """Where the summarised part ends: the turn's start, or, when the turn alone does not
        fit and has earlier rounds, the start of its last round (so a long turn's earlier
        rounds are summarised, never the round the model is answering)."""
        history = self.session.history
        at = max(turn_start + self._offset(), 0)
        if window.fits(self._carried()[at:]):
            return turn_start
        rounds = [i for i in range(turn_start + 1, len(history)) if _is_round(history[i])]
        return rounds[-1] if len(rounds) >= 2 else turn_start

    # --- the summary -----------------------------------------------------------------------

    async def compact(self, split: int, focus: str | None = None) -> bool:
        """Summarise history[compacted_upto:split] on top of the summary so far; False when
        there is nothing to summarise or no summary came (nothing is replaced then)."""
        state = self.session.state
        if split <= state.compacted_upto:
            return False
        part = self.session.history[state.compacted_upto : split]
        summary = await self._summarise(part, state.summary, focus)
        if not summary:
            return False
        count = split - state.compacted_upto
        state.summary, state.compacted_upto = summary, split
        await self._emit(ev.Compacted(count, summary))
        await self._persist(self.session)
        return True

    async def _summarise(
        self, part: list[Message], so_far: str | None, focus: str | None
    ) -> str | None:
        info = self.model.info
        entries = compaction.transcript(part)
        summary = so_far
        ratio = self.window().ratio
        remaining = entries
        while remaining:
            limit = compaction.piece_chars(info, len(summary or ""), ratio, self.summary_prompt)
            piece, remaining = _take(remaining, limit)
            request = compaction.summary_request(piece, summary, info, focus, self.summary_prompt)
            text = await self._ask(request)
            if not text:
                return None
            summary = text
        return summary

    async def _ask(self, request: llm.ChatRequest) -> str | None:
        parts: list[str] = []
        try:
            async with aclosing(self.model.stream(request)) as stream:
                async for item in stream:
                    if isinstance(item, llm.TextDelta):
                        parts.append(item.text)
        except ProviderError as exc:
            await self._tell_failure(str(exc))
            return None
        text = "".join(parts).strip()
        if not text:
            await self._tell_failure("the model's summary was empty")
        return text or None

    async def _tell_failure(self, why: str) -> None:
        log.warning("compacting the context failed: %s", why)
        if not self._told_failure:
            self._told_failure = True
            text = (
                "The earlier conversation could not be summarised; requests go out with old "
                "tool results shortened instead"
            )
            await self._emit(ev.Notice("warning", text, why))

    # --- calibration -----------------------------------------------------------------------

    def calibrate(self, request: llm.ChatRequest, usage: llm.Usage | None) -> None:
        """Learn the API's tokens per estimated token from a request it counted."""
        if usage is None or usage.estimated or usage.input_tokens <= 0:
            return
        estimated = self.estimate(request)
        if estimated < 256:  # too small to tell (and a cache hit may report less)
            return
        measured = usage.input_tokens / estimated
        ratios = self.session.state.token_ratios
        old = ratios.get(self.model.info.id)
        ratios[self.model.info.id] = measured if old is None else (old + measured) / 2


def _is_round(m: Message) -> bool:
    return isinstance(m, AssistantMessage)


def _take(entries: list[str], limit: int) -> tuple[str, list[str]]:
    """The first piece of at most `limit` characters, and the entries after it (an entry over
    the limit is split, its remainder first in line)."""
    first = entries[0]
    if len(first) > limit:
        return first[:limit], [first[limit:], *entries[1:]]
    size, taken = len(first), 1
    while taken < len(entries) and size + 2 + len(entries[taken]) <= limit:
        size += 2 + len(entries[taken])
        taken += 1
    return "\n\n".join(entries[:taken]), entries[taken:]
