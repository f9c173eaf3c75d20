"""`--output-format stream-json`: the run as one JSON object per line on standard output, each
an event docs/cli.md describes (not ACP frames: those are `--json`'s, for debugging). The last
line is the result object `--output-format json` prints alone."""

from __future__ import annotations

import json
from typing import Any

import msgspec

from tether.cli.ask_transcript import Sink
from tether.rpc.acp.translate import is_ending
from tether.schemas import acp


class StreamJson:
    """The same calls as the text transcript (`Transcript`), written as events."""

    def __init__(self, out: Sink) -> None:
        self.out = out
        self.prompting = False  # the client sets it around a terminal question

    def emit(self, event: dict[str, Any]) -> None:
        self.out.write(json.dumps(event, ensure_ascii=False) + "\n")

    def opened(self, session_id: str, cwd: str, model: str | None, mode: str | None) -> None:
        self.emit(
            {
                "type": "system",
                "subtype": "init",
                "session_id": session_id,
                "cwd": cwd,
                "model": model,
                "mode": mode,
            }
        )

    def update(self, u: acp.SessionUpdate) -> None:
        if isinstance(u, acp.AgentMessageChunk) and isinstance(u.content, acp.TextContent):
            if not is_ending(u.content.text):
                self.emit({"type": "text", "text": u.content.text})
        elif isinstance(u, acp.AgentThoughtChunk) and isinstance(u.content, acp.TextContent):
            self.emit({"type": "thinking", "text": u.content.text})
        elif isinstance(u, acp.ToolCallStart):
            self.emit(_tool_call(u))
        elif isinstance(u, acp.ToolCallProgress) and u.status in ("completed", "failed"):
            self.emit(
                {
                    "type": "tool_result",
                    "tool_call_id": u.tool_call_id,
                    "status": u.status,
                    "output": _texts(u.content or []),
                }
            )
        elif isinstance(u, acp.PlanUpdate):
            entries = [{"content": e.content, "status": e.status} for e in u.entries]
            self.emit({"type": "plan", "entries": entries})
        elif isinstance(u, acp.NoticeUpdate):
            self.emit({"type": "notice", "title": u.title})

    def permission_asked(self, params: acp.RequestPermissionRequest, title: str) -> None:
        options = [{"id": o.option_id, "name": o.name, "kind": o.kind} for o in params.options]
        self.emit(
            {
                "type": "permission_request",
                "tool_call_id": params.tool_call.tool_call_id,
                "title": title,
                "options": options,
            }
        )

    def permission(
        self, params: acp.RequestPermissionRequest, choice: str | None, by: str, title: str
    ) -> None:
        kinds = {o.option_id: o.kind for o in params.options}
        self.emit(
            {
                "type": "permission_response",
                "tool_call_id": params.tool_call.tool_call_id,
                "title": title,
                "outcome": kinds.get(choice or "", "cancelled"),
                "by": by,
            }
        )

    def after_echo(self) -> None:
        return

    def stop(self, reason: str) -> None:
        return  # the result object says it

    def usage_line(self) -> None:
        return

    def error(self, message: str) -> None:
        self.emit({"type": "error", "message": message})


def _tool_call(u: acp.ToolCallStart) -> dict[str, Any]:
    name = u.name if isinstance(u.name, str) and u.name else None
    return {
        "type": "tool_call",
        "tool_call_id": u.tool_call_id,
        "title": u.title,
        "kind": u.kind or "other",
        "name": name,  # null: a card standing for a round of calls, or a question
        "input": u.raw_input if u.raw_input is not msgspec.UNSET else None,
        "locations": [loc.path for loc in u.locations or []],
    }


def _texts(contents: list[acp.ToolCallContent]) -> str:
    return "\n".join(
        c.content.text
        for c in contents
        if isinstance(c, acp.ContentToolContent) and isinstance(c.content, acp.TextContent)
    )
