"""Typed events the engine emits while a turn runs. A protocol front renders each one; the store
keeps them so a replay goes through the very same rendering (live == replay)."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from tether.engine.history import UserPart

ToolStatus = Literal["pending", "in_progress", "completed", "failed"]
StopReason = Literal["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"]


class TextOut(msgspec.Struct, tag="text", frozen=True, gc=False):
    text: str


class DiffOut(msgspec.Struct, tag="diff", frozen=True, gc=False):
    path: str
    new_text: str
    old_text: str | None = None  # None: a new file


class TerminalOut(msgspec.Struct, tag="terminal", frozen=True, gc=False):
    terminal_id: str


ToolContent = TextOut | DiffOut | TerminalOut


class Location(msgspec.Struct, frozen=True, gc=False):
    path: str
    line: int | None = None


class UserPrompted(msgspec.Struct, tag="user", frozen=True, gc=False):
    parts: list[UserPart]
    # The history index of the same prompt as a UserMessage, when there is one: the store then
    # keeps the parts once, in the message.
    message: int | None = None


class TextDelta(msgspec.Struct, tag="text_delta", frozen=True, gc=False):
    message_id: str
    text: str


class ThoughtDelta(msgspec.Struct, tag="thought_delta", frozen=True, gc=False):
    message_id: str
    text: str


class ToolStarted(msgspec.Struct, tag="tool_started", frozen=True, gc=False):
    call_id: str
    name: str | None  # the tool's name; None for a card that is not one call (a round)
    title: str
    kind: str
    raw_input: Any
    locations: list[Location] = []
    content: list[ToolContent] = []


class ToolUpdated(msgspec.Struct, tag="tool_updated", frozen=True, gc=False):
    call_id: str
    status: ToolStatus | None = None
    title: str | None = None
    content: list[ToolContent] | None = None


class ToolFinished(msgspec.Struct, tag="tool_finished", frozen=True, gc=False):
    call_id: str
    status: Literal["completed", "failed"]
    content: list[ToolContent]
    raw_output: Any = None


class PlanItem(msgspec.Struct, frozen=True, gc=False):
    content: str
    status: Literal["pending", "in_progress", "completed"] = "pending"
    priority: Literal["high", "medium", "low"] = "medium"


class PlanChanged(msgspec.Struct, tag="plan", frozen=True, gc=False):
    entries: list[PlanItem]


class UsageSampled(msgspec.Struct, tag="usage", frozen=True, gc=False):
    used: int
    size: int
    cost: float | None = None
    currency: str = "USD"
    # The round's counts as the API reported them (None for an estimate); cached input tokens
    # were read from the provider's prompt cache.
    input_tokens: int | None = None
    cached_tokens: int | None = None
    output_tokens: int | None = None


class Notice(msgspec.Struct, tag="notice", frozen=True, gc=False, omit_defaults=True):
    severity: Literal["info", "warning", "error"]
    title: str
    description: str | None = None
    kept: bool = False  # recorded for replay (a host notice: the model was told too)


class TitleChanged(msgspec.Struct, tag="title", frozen=True, gc=False):
    title: str


class TurnEnded(msgspec.Struct, tag="turn_ended", frozen=True, gc=False):
    stop_reason: StopReason


class Compacted(msgspec.Struct, tag="compacted", frozen=True, gc=False):
    """The conversation before here is summarised for the model (the history keeps it all)."""

    messages: int  # how many earlier messages the summary now stands for
    summary: str


Event = (
    UserPrompted
    | TextDelta
    | ThoughtDelta
    | ToolStarted
    | ToolUpdated
    | ToolFinished
    | PlanChanged
    | UsageSampled
    | Notice
    | TitleChanged
    | TurnEnded
    | Compacted
)


def coalesce(events: list[Event]) -> list[Event]:
    """Merge consecutive deltas of one message, so a stored message is one event, not
    thousands of fragments (and the replay sends one chunk per message); drop a running call's
    output updates that a later one replaces (ACP content updates replace the whole content),
    so a chatty command does not grow the store."""
    events = _latest_progress(events)
    out: list[Event] = []
    run: list[str] = []
    for e in events:
        last = out[-1] if out else None
        if (
            isinstance(e, TextDelta | ThoughtDelta)
            and type(last) is type(e)
            and _same_message(last, e)
        ):
            run.append(e.text)
            continue
        _close_run(out, run)
        out.append(e)
        run = [e.text] if isinstance(e, TextDelta | ThoughtDelta) else []
    _close_run(out, run)
    return out


def _latest_progress(events: list[Event]) -> list[Event]:
    replaced: set[int] = set()
    later: set[str] = set()  # calls with a later content update (or their end)
    for i in range(len(events) - 1, -1, -1):
        e = events[i]
        if isinstance(e, ToolFinished):
            later.add(e.call_id)
        elif isinstance(e, ToolUpdated) and e.content is not None:
            if e.call_id in later and e.status is None and e.title is None:
                replaced.add(i)
            later.add(e.call_id)
    return [e for i, e in enumerate(events) if i not in replaced] if replaced else events


def _same_message(a: Event | None, b: TextDelta | ThoughtDelta) -> bool:
    return isinstance(a, TextDelta | ThoughtDelta) and a.message_id == b.message_id


def _close_run(out: list[Event], run: list[str]) -> None:
    last = out[-1] if out else None
    if len(run) > 1 and isinstance(last, TextDelta | ThoughtDelta):
        out[-1] = type(last)(last.message_id, "".join(run))
