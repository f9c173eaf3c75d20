"""A readable transcript of an ACP conversation, for `tether ask`."""

from __future__ import annotations

import difflib
from typing import TextIO

from tether.schemas import acp


class Transcript:
    def __init__(self, out: TextIO | None) -> None:
        self.out = out
        self._in_text = False
        self._titles: dict[str, str] = {}  # tool call id -> title, for permission lines

    def _w(self, text: str) -> None:
        if self.out is not None:
            self.out.write(text)
            self.out.flush()

    def _line(self, text: str) -> None:
        if self._in_text:
            self._w("\n")
            self._in_text = False
        self._w(text + "\n")

    def update(self, u: acp.SessionUpdate) -> None:
        if isinstance(u, acp.AgentMessageChunk) and isinstance(u.content, acp.TextContent):
            self._w(u.content.text)
            self._in_text = True
        elif isinstance(u, acp.AgentThoughtChunk) and isinstance(u.content, acp.TextContent):
            self._line(f"  (thinking) {u.content.text.strip()}")
        elif isinstance(u, acp.ToolCallStart):
            self._titles[u.tool_call_id] = u.title
            self._line(f"▸ {u.title}  [{u.kind or 'other'}]")
            self._contents(u.content or [])
        elif isinstance(u, acp.ToolCallProgress) and u.status in ("completed", "failed"):
            mark = "✓" if u.status == "completed" else "✗"
            texts = [
                c.content.text
                for c in (u.content or [])
                if isinstance(c, acp.ContentToolContent) and isinstance(c.content, acp.TextContent)
            ]
            detail = texts[0].splitlines()[0] if texts and texts[0] else ""
            self._line(f"  {mark} {u.status}{': ' + detail if detail else ''}")
        elif isinstance(u, acp.PlanUpdate):
            self._line("plan:\n" + "\n".join(f"  [{e.status}] {e.content}" for e in u.entries))
        elif isinstance(u, acp.NoticeUpdate):
            self._line(f"! {u.title}")

    def _contents(self, contents: list[acp.ToolCallContent]) -> None:
        for c in contents:
            if isinstance(c, acp.DiffToolContent):
                old = c.old_text.splitlines() if isinstance(c.old_text, str) else []
                diff = difflib.unified_diff(
                    old, c.new_text.splitlines(), c.path, c.path, lineterm="", n=1
                )
                self._line("\n".join(f"    {line}" for line in diff))

    def permission(self, params: acp.RequestPermissionRequest, choice: str | None) -> None:
        card = params.tool_call
        title = card.title if isinstance(card.title, str) else None
        title = title or self._titles.get(card.tool_call_id, card.tool_call_id)
        names = {o.option_id: o.name for o in params.options}
        self._line(f"? permission for {title}: {names.get(choice or '', 'cancelled')}")

    def stop(self, reason: str) -> None:
        self._line(f"[stop: {reason}]")

    def error(self, message: str) -> None:
        self._line(f"[{message}]")
