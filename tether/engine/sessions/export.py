"""A stored session for people and programs: the conversation as Markdown (what the client was
shown: prompts, answers, tool calls with their outcome and diffs, the plan), or as JSON (the
record itself: state, model-facing messages and shown events)."""

from __future__ import annotations

import difflib
from typing import Any

import msgspec

from tether.engine import events as ev
from tether.engine.history import TextPart
from tether.engine.sessions.state import Session

_STATUS = {"completed": "done", "failed": "failed", "in_progress": "running", "pending": "asked"}


def to_json(session: Session, events: list[ev.Event]) -> dict[str, Any]:
    return {
        "id": session.id,
        "cwd": session.cwd,
        "title": session.title,
        "updated_at": session.updated_at,
        "state": msgspec.to_builtins(session.state),
        "messages": msgspec.to_builtins(session.history),
        "events": msgspec.to_builtins(events),
    }


def to_markdown(session: Session, events: list[ev.Event]) -> str:
    out = [
        f"# {session.title or session.id}",
        "",
        f"`{session.id}` in `{session.cwd}`, "
        f"updated {session.updated_at}, model `{session.state.model}`",
        "",
    ]
    calls: dict[str, str] = {}
    for e in ev.coalesce(events):
        out.extend(_event_lines(e, calls))
    return "\n".join(out).rstrip() + "\n"


def _event_lines(e: ev.Event, calls: dict[str, str]) -> list[str]:
    if isinstance(e, ev.UserPrompted):
        text = "\n".join(p.text if isinstance(p, TextPart) else "[image]" for p in e.parts)
        return ["## You", "", text, ""]
    if isinstance(e, ev.TextDelta):
        return [e.text, ""]
    if isinstance(e, ev.ThoughtDelta):
        return ["> " + line for line in e.text.strip().splitlines()] + [""]
    if isinstance(e, ev.ToolStarted):
        calls[e.call_id] = e.title
        return [f"**{e.title}**", *_diffs(e.content), ""]
    if isinstance(e, ev.ToolFinished):
        title = calls.get(e.call_id, e.call_id)
        texts = [c.text.splitlines()[0] for c in e.content if isinstance(c, ev.TextOut) and c.text]
        detail = f": {texts[0]}" if texts else ""
        return [f"- {title} — {_STATUS[e.status]}{detail}", ""]
    if isinstance(e, ev.PlanChanged):
        marks = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]"}
        return ["Plan:", *[f"- {marks[i.status]} {i.content}" for i in e.entries], ""]
    if isinstance(e, ev.TitleChanged):
        return []
    return []


def _diffs(content: list[ev.ToolContent]) -> list[str]:
    lines: list[str] = []
    for c in content:
        if isinstance(c, ev.DiffOut):
            old = (c.old_text or "").splitlines()
            diff = difflib.unified_diff(old, c.new_text.splitlines(), c.path, c.path, lineterm="")
            lines += ["", "```diff", *diff, "```"]
    return lines
