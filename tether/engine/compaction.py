"""Context reduction: what a request carries when the conversation no longer fits the model's
window, in this order, each step only while still needed:

1. old tool results shrink, oldest first; the newest KEEP_WHOLE stay whole, and results of the
   current turn are left alone unless the turn itself overflows (then they shrink too, the
   newest kept);
2. the older part of the conversation (before the current turn) is summarised by the model:
   the summarisation request carries that part as a transcript (its tool results shortened),
   in pieces when it is too big for one request, each piece summarised on top of the summary so
   far, so nothing is dropped; an empty or failed summary replaces nothing;
3. whatever still does not fit shrinks further (every result but the newest, then that one).

Only requests are reduced: the stored history keeps every original message. Sizes are a chars/4
estimate, calibrated by the API's own count of a request's input tokens (`ratio`).
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from tether.engine.history import (
    AssistantMessage,
    Message,
    MessageSizes,
    TextPart,
    ToolResultMessage,
    UserMessage,
    message_chars,
)
from tether.engine.providers import base as llm

KEEP_WHOLE = 12  # the newest tool results a request carries whole
SHRUNK_CHARS = 300  # what is left of a shrunk tool result
SUMMARY_RESULT_CHARS = 600  # a tool result as the summarisation transcript carries it
SUMMARY_ARGS_CHARS = 1_000  # a tool call's arguments, likewise
SUMMARY_TOKENS = 4_096  # the summary's own output budget
SUMMARY_PROMPT = (
    "You are compacting a coding session so it fits the model's context window. Tools are "
    "unavailable: do not call any tool, answer with text only. Summarise the conversation "
    "for the assistant who will continue it: the user's goals and constraints, decisions "
    "taken, files read or changed (with paths), commands run and their outcomes, identifiers "
    "and values that matter, and what is still open. Keep everything from the summary so far "
    "that still matters. Be specific and brief."
)
SUMMARY_HEADER = "Summary of the earlier part of this session (compacted to fit the context):\n"


class Window(msgspec.Struct, frozen=True):
    """What a request must fit: the model's budget, and what every request carries besides its
    messages (the system prompt, the tool schemas)."""

    budget: int  # tokens for the request's input
    fixed_chars: int  # the system prompt and the tool schemas
    ratio: float = 1.0  # the API's tokens per estimated token, once measured
    sizes: MessageSizes = msgspec.field(default_factory=MessageSizes)

    @classmethod
    def of(
        cls,
        info: llm.ModelInfo,
        system: str,
        tools: Sequence[llm.ToolSpec],
        ratio: float = 1.0,
        sizes: MessageSizes | None = None,
    ) -> Window:
        fixed = fixed_chars(system, tools)
        return cls(budget(info), fixed, ratio, sizes or MessageSizes())

    def tokens(self, messages: list[Message]) -> int:
        return estimate(self.fixed_chars + self.sizes.total(messages), self.ratio)

    def fits(self, messages: list[Message]) -> bool:
        return self.tokens(messages) <= self.budget


def estimate(chars: int, ratio: float = 1.0) -> int:
    return int(chars / 4 * ratio)


def fixed_chars(system: str, tools: Sequence[llm.ToolSpec]) -> int:
    """The system prompt's characters and the tool schemas' encoded ones (encoded as one list,
    once per request, less its brackets and commas: the sum of encoding each)."""
    if not tools:
        return len(system)
    return len(system) + len(msgspec.json.encode(list(tools))) - len(tools) - 1


def estimate_tokens(system: str, messages: Sequence[Message], tools: Sequence[llm.ToolSpec]) -> int:
    """A chars/4 estimate of a request's size, uncalibrated (the same for every provider)."""
    return estimate(fixed_chars(system, tools) + sum(message_chars(m) for m in messages))


def margin(info: llm.ModelInfo) -> int:
    """Tokens kept free besides the reply's: the estimate's error, smaller once calibrated."""
    return max(256, info.context_window // 32)


def budget(info: llm.ModelInfo) -> int:
    """Tokens a request may use: the window less room for the reply."""
    return max(info.context_window - info.max_output_tokens - margin(info), 1024)


# --- shrinking ---------------------------------------------------------------------------------


def shrink(
    messages: list[Message],
    window: Window,
    *,
    start: int = 0,
    stop: int | None = None,
    keep: int = KEEP_WHOLE,
) -> int:
    """Shorten tool results in `messages[start:stop]`, oldest first, leaving the newest `keep`
    of them whole, until the request fits. In place; how many were shortened."""
    stop = len(messages) if stop is None else stop
    results = [i for i in range(start, stop) if isinstance(messages[i], ToolResultMessage)]
    shrunk = 0
    for i in results[: max(len(results) - keep, 0)]:
        if window.fits(messages):
            break
        m = messages[i]
        assert isinstance(m, ToolResultMessage)
        if len(m.content) > SHRUNK_CHARS:
            messages[i] = shortened(m, SHRUNK_CHARS)
            shrunk += 1
    return shrunk


def shortened(m: ToolResultMessage, keep: int) -> ToolResultMessage:
    text = m.content
    cut = (
        f"{text[:keep]}\n[... {len(text) - keep} more characters elided to fit the context "
        "window; run the tool again if you need them]"
    )
    return ToolResultMessage(m.call_id, m.name, cut, m.is_error)


def fit_last_result(messages: list[Message], window: Window) -> bool:
    """Last resort: cut the newest tool result to what the window leaves room for."""
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if isinstance(m, ToolResultMessage):
            over = window.tokens(messages) - window.budget
            room = len(m.content) - int(over * 4 / max(window.ratio, 0.1)) - 200
            if room < len(m.content):
                messages[i] = shortened(m, max(room, 0))
            return window.fits(messages)
    return False


# --- the older part, summarised ---------------------------------------------------------------


def split_point(messages: Sequence[Message]) -> int:
    """Where the current turn starts: the last user prompt (a real one, not a tool result), so
    no tool call is separated from its result."""
    for i in range(len(messages) - 1, 0, -1):
        if isinstance(messages[i], UserMessage):
            return i
    return 0


def with_summary(summary: str, tail: Sequence[Message]) -> list[Message]:
    return [UserMessage([TextPart(SUMMARY_HEADER + summary)]), *tail]


def transcript(messages: Sequence[Message]) -> list[str]:
    """The messages as plain text, one entry per message, for the summariser (every API takes
    text; tool calls and their results need no pairing there). Long tool results and arguments
    are shortened first."""
    out: list[str] = []
    for m in messages:
        if isinstance(m, UserMessage):
            text = "".join(p.text if isinstance(p, TextPart) else "[an image]" for p in m.parts)
            out.append(f"User: {text}")
        elif isinstance(m, AssistantMessage):
            lines = [f"Assistant: {m.text}"] if m.text else []
            for c in m.tool_calls:
                lines.append(f"Assistant called {c.name}({_cut(c.arguments, SUMMARY_ARGS_CHARS)})")
            out.append("\n".join(lines) or "Assistant: (no text)")
        else:
            status = "error" if m.is_error else "result"
            out.append(f"Tool {status} ({m.name}): {_cut(m.content, SUMMARY_RESULT_CHARS)}")
    return out


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]} [... {len(text) - limit} more characters]"


def piece_chars(
    info: llm.ModelInfo, summary_so_far: int, ratio: float = 1.0, prompt: str = SUMMARY_PROMPT
) -> int:
    """How much transcript one summarisation request can carry beside the summary so far."""
    room = info.context_window - min(info.max_output_tokens, SUMMARY_TOKENS) - margin(info)
    chars = int(room * 4 / max(ratio, 0.1)) - len(prompt) - summary_so_far - 500
    return max(chars, 2_000)


def summary_request(
    piece: str,
    summary_so_far: str | None,
    info: llm.ModelInfo,
    focus: str | None = None,
    prompt: str = SUMMARY_PROMPT,
) -> llm.ChatRequest:
    """The request that summarises one piece of the older conversation (no tools offered);
    `prompt`: its system prompt (`[agent] compact_system_prompt` replaces tether's)."""
    parts = []
    if summary_so_far:
        parts.append(f"The summary so far:\n<summary>\n{summary_so_far}\n</summary>")
    parts.append(f"The conversation to add to it:\n<conversation>\n{piece}\n</conversation>")
    ask = "Write the updated summary." if summary_so_far else "Write the summary."
    if focus:
        ask += f" Focus on: {focus}"
    parts.append(ask)
    return llm.ChatRequest(
        system=prompt,
        messages=[UserMessage([TextPart("\n\n".join(parts))])],
        tools=[],
        max_output_tokens=min(info.max_output_tokens, SUMMARY_TOKENS),
    )
