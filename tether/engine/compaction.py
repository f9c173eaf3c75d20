"""Context reduction before each request: when the conversation no longer fits the model's
window, old tool results shrink first (the most recent ones stay whole), then the older part of
the conversation is summarised by the model itself. Only requests are reduced: the stored
history keeps every original message."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import msgspec

from tether.engine.history import (
    AssistantMessage,
    Message,
    TextPart,
    ToolResultMessage,
    UserMessage,
)
from tether.engine.providers import base as llm

KEEP_RECENT_RESULTS = 4
SHRUNK_CHARS = 300
MARGIN_TOKENS = 1024
SUMMARY_PROMPT = (
    "You are compacting a coding session so it fits the model's context window. Tools are "
    "unavailable: do not call any tool, answer with text only. Summarise the conversation so "
    "far for the assistant who will continue it: the user's goals and constraints, decisions "
    "taken, files read or changed (with paths), commands run and their outcomes, and what is "
    "still open. Be specific and brief."
)
SUMMARY_HEADER = "Summary of the earlier part of this session (compacted to fit the context):\n"


def estimate_tokens(system: str, messages: Sequence[Message], tools: Sequence[llm.ToolSpec]) -> int:
    """A chars/4 estimate of a request's size, the same for every provider."""
    chars = len(system) + sum(len(msgspec.json.encode(t)) for t in tools)
    return (chars + sum(message_chars(m) for m in messages)) // 4


def message_chars(m: Message) -> int:
    if isinstance(m, UserMessage):
        return sum(len(p.text) if isinstance(p, TextPart) else 1000 for p in m.parts)
    if isinstance(m, AssistantMessage):
        reasoning = sum(len(r.text) for r in m.reasoning)
        return len(m.text) + reasoning + sum(len(c.arguments) + len(c.name) for c in m.tool_calls)
    return len(m.content) + 1000 * len(m.images)


def budget(info: llm.ModelInfo) -> int:
    """Tokens a request may use: the window less room for the reply."""
    return max(info.context_window - info.max_output_tokens - MARGIN_TOKENS, 1024)


def shrink_tool_results(
    messages: list[Message], fits: int, system: str, tools: Sequence[llm.ToolSpec]
) -> tuple[list[Message], int]:
    """Shorten tool results oldest first, keeping the most recent ones whole, until the request
    fits. Returns the messages and how many results were shrunk."""
    out = list(messages)
    results = [i for i, m in enumerate(out) if isinstance(m, ToolResultMessage)]
    shrunk = 0
    for i in results[: max(len(results) - KEEP_RECENT_RESULTS, 0)]:
        if estimate_tokens(system, out, tools) <= fits:
            break
        m = out[i]
        assert isinstance(m, ToolResultMessage)
        if len(m.content) > SHRUNK_CHARS:
            out[i] = ToolResultMessage(m.call_id, m.name, _shrunk(m.content), m.is_error)
            shrunk += 1
    return out, shrunk


def _shrunk(text: str) -> str:
    return (
        f"{text[:SHRUNK_CHARS]}\n[... {len(text) - SHRUNK_CHARS} more characters elided to fit "
        "the context window; run the tool again if you need them]"
    )


def split_point(messages: Sequence[Message]) -> int:
    """Where the kept tail starts: the last user prompt (a real one, not a tool result), so
    no tool call is separated from its result."""
    for i in range(len(messages) - 1, 0, -1):
        if isinstance(messages[i], UserMessage):
            return i
    return 0


@dataclass
class Reduced:
    messages: list[Message]
    shrunk: int = 0
    summarised: bool = False


def with_summary(summary: str, tail: Sequence[Message]) -> list[Message]:
    return [UserMessage([TextPart(SUMMARY_HEADER + summary)]), *tail]


def summary_request(messages: Sequence[Message], info: llm.ModelInfo) -> llm.ChatRequest:
    """The request that asks the model to summarise `messages` (no tools offered)."""
    ask = UserMessage([TextPart("Summarise the conversation above as instructed.")])
    older = list(messages)
    while older and estimate_tokens(SUMMARY_PROMPT, older, []) > budget(info):
        older.pop(0)  # the summary itself must fit: the oldest part goes first
    while older and not isinstance(older[0], UserMessage):
        older.pop(0)  # start at a user turn, as every API expects
    return llm.ChatRequest(
        system=SUMMARY_PROMPT,
        messages=[*older, ask],
        tools=[],
        max_output_tokens=min(info.max_output_tokens, 4096),
    )
