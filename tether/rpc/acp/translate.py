"""The one translator from engine events to ACP `session/update` payloads. Live turns and
replays both go through it, so what an editor sees after a reload is what it saw live."""

from __future__ import annotations

from typing import Any

from msgspec import UNSET, UnsetType

from tether.engine import events as ev
from tether.engine.history import ImagePart, TextPart
from tether.schemas import acp


def replay(events: list[ev.Event], *, notices: bool) -> list[acp.SessionUpdate]:
    """A stored session as the updates a client sees, through the same translation as live."""
    return [u for e in events for u in to_updates(e, notices=notices)]


def to_updates(event: ev.Event, *, notices: bool) -> list[acp.SessionUpdate]:
    """The updates an event becomes (one, except a user prompt: one chunk per part)."""
    if isinstance(event, ev.TextDelta):
        return [
            acp.AgentMessageChunk(
                content=acp.TextContent(text=event.text), message_id=event.message_id
            )
        ]
    if isinstance(event, ev.ThoughtDelta):
        return [
            acp.AgentThoughtChunk(
                content=acp.TextContent(text=event.text), message_id=event.message_id
            )
        ]
    if isinstance(event, ev.ToolStarted):
        return [_tool_call(event)]
    if isinstance(event, ev.ToolUpdated):
        return [_tool_progress(event)]
    if isinstance(event, ev.ToolFinished):
        return [
            acp.ToolCallProgress(
                tool_call_id=event.call_id,
                status=event.status,
                content=[tool_content(c) for c in event.content],
                raw_output=event.raw_output if event.raw_output is not None else UNSET,
            )
        ]
    return _other(event, notices)


def _usage_meta(event: ev.UsageSampled) -> dict[str, Any] | UnsetType:
    """The round's token counts (cache reads included) when the API reported them."""
    if event.input_tokens is None:
        return UNSET
    counts = {
        "inputTokens": event.input_tokens,
        "cachedInputTokens": event.cached_tokens or 0,
        "outputTokens": event.output_tokens or 0,
    }
    return {"tether": counts}


def _other(event: ev.Event, notices: bool) -> list[acp.SessionUpdate]:
    if isinstance(event, ev.UsageSampled):
        cost = (
            acp.Cost(amount=event.cost, currency=event.currency)
            if event.cost is not None
            else UNSET
        )
        return [
            acp.UsageUpdate(used=event.used, size=event.size, cost=cost, meta=_usage_meta(event))
        ]
    if isinstance(event, ev.PlanChanged):
        entries = [
            acp.PlanEntry(content=e.content, priority=e.priority, status=e.status)
            for e in event.entries
        ]
        return [acp.PlanUpdate(entries=entries)]
    if isinstance(event, ev.Notice):
        if notices:
            return [
                acp.NoticeUpdate(
                    severity=event.severity, title=event.title, description=event.description
                )
            ]
        # A client without notices still sees the notice, as a thought.
        text = f"{event.title}: {event.description}" if event.description else event.title
        return [acp.AgentThoughtChunk(content=acp.TextContent(text=f"\n{text}\n"))]
    if isinstance(event, ev.TitleChanged):
        return [acp.SessionInfoUpdate(title=event.title)]
    if isinstance(event, ev.UserPrompted):
        return [acp.UserMessageChunk(content=_user_block(p)) for p in event.parts]
    if isinstance(event, ev.Compacted):
        text = (
            f"\nContext compacted here: the {event.messages} messages before this point are "
            "summarised for the model.\n"
        )
        return [acp.AgentThoughtChunk(content=acp.TextContent(text=text))]
    if isinstance(event, ev.TurnEnded):
        return [acp.AgentMessageChunk(content=acp.TextContent(text=ending_text(event.stop_reason)))]
    return []


def ending_text(stop_reason: str) -> str:
    """How a turn that did not simply finish ended, as the last words of its answer."""
    return f"\n\n*[{_ENDINGS.get(stop_reason, stop_reason)}]*"


def is_ending(text: str) -> bool:
    """Whether a chunk is an `ending_text` (a transcript says the stop reason itself)."""
    return text in {ending_text(r) for r in _ENDINGS}


_ENDINGS = {
    "cancelled": "the turn was cancelled",
    "max_tokens": "stopped: the answer reached its length limit",
    "max_turn_requests": "stopped: the turn reached its most rounds",
}


def _tool_call(event: ev.ToolStarted) -> acp.ToolCallStart:
    return acp.ToolCallStart(
        tool_call_id=event.call_id,
        title=event.title,
        kind=tool_kind(event.kind),
        status="pending",
        locations=[_location(loc) for loc in event.locations],
        raw_input=event.raw_input,
        content=[tool_content(c) for c in event.content],
        name=event.name if event.name is not None else UNSET,
    )


def _tool_progress(event: ev.ToolUpdated) -> acp.ToolCallProgress:
    return acp.ToolCallProgress(
        tool_call_id=event.call_id,
        status=event.status if event.status is not None else UNSET,
        title=event.title if event.title is not None else UNSET,
        content=[tool_content(c) for c in event.content] if event.content is not None else UNSET,
    )


_KINDS = {
    "read",
    "edit",
    "delete",
    "move",
    "search",
    "execute",
    "think",
    "fetch",
    "switch_mode",
    "other",
}


def tool_kind(kind: str) -> Any:
    return kind if kind in _KINDS else "other"


def _location(loc: ev.Location) -> acp.ToolCallLocation:
    return acp.ToolCallLocation(path=loc.path, line=loc.line if loc.line is not None else UNSET)


def tool_content(c: ev.ToolContent) -> acp.ToolCallContent:
    if isinstance(c, ev.TextOut):
        return acp.ContentToolContent(content=acp.TextContent(text=c.text))
    if isinstance(c, ev.DiffOut):
        return acp.DiffToolContent(path=c.path, new_text=c.new_text, old_text=c.old_text)
    return acp.TerminalToolContent(terminal_id=c.terminal_id)


def _user_block(part: TextPart | ImagePart) -> acp.ContentBlock:
    if isinstance(part, TextPart):
        return acp.TextContent(text=part.text)
    return acp.ImageContent(data=part.data, mime_type=part.mime_type)
