"""Typed events the engine emits while a turn runs. A protocol front renders each one; the store
keeps them so a replay goes through the very same rendering (live == replay)."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from tether.engine.history import UserPart

ToolStatus = Literal["pending", "in_progress", "completed", "failed"]
StopReason = Literal["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"]


class TextOut(msgspec.Struct, tag="text", frozen=True):
    text: str


class DiffOut(msgspec.Struct, tag="diff", frozen=True):
    path: str
    new_text: str
    old_text: str | None = None  # None: a new file


class TerminalOut(msgspec.Struct, tag="terminal", frozen=True):
    terminal_id: str


ToolContent = TextOut | DiffOut | TerminalOut


class Location(msgspec.Struct, frozen=True):
    path: str
    line: int | None = None


class UserPrompted(msgspec.Struct, tag="user", frozen=True):
    parts: list[UserPart]


class TextDelta(msgspec.Struct, tag="text_delta", frozen=True):
    message_id: str
    text: str


class ThoughtDelta(msgspec.Struct, tag="thought_delta", frozen=True):
    message_id: str
    text: str


class ToolStarted(msgspec.Struct, tag="tool_started", frozen=True):
    call_id: str
    name: str
    title: str
    kind: str
    raw_input: Any
    locations: list[Location] = []
    content: list[ToolContent] = []


class ToolUpdated(msgspec.Struct, tag="tool_updated", frozen=True):
    call_id: str
    status: ToolStatus | None = None
    title: str | None = None
    content: list[ToolContent] | None = None


class ToolFinished(msgspec.Struct, tag="tool_finished", frozen=True):
    call_id: str
    status: Literal["completed", "failed"]
    content: list[ToolContent]
    raw_output: Any = None


class PlanItem(msgspec.Struct, frozen=True):
    content: str
    status: Literal["pending", "in_progress", "completed"] = "pending"
    priority: Literal["high", "medium", "low"] = "medium"


class PlanChanged(msgspec.Struct, tag="plan", frozen=True):
    entries: list[PlanItem]


class UsageSampled(msgspec.Struct, tag="usage", frozen=True):
    used: int
    size: int
    cost: float | None = None
    currency: str = "USD"


class Notice(msgspec.Struct, tag="notice", frozen=True):
    severity: Literal["info", "warning", "error"]
    title: str
    description: str | None = None


class TitleChanged(msgspec.Struct, tag="title", frozen=True):
    title: str


class TurnEnded(msgspec.Struct, tag="turn_ended", frozen=True):
    stop_reason: StopReason


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
)
