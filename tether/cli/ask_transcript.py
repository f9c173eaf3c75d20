"""A readable transcript of an ACP conversation, for `tether ask`."""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable
from typing import TextIO

from tether.rpc.acp.translate import is_ending
from tether.schemas import acp


class Sink:
    """Standard output that may go away (`tether ask ... | head -1`): the first broken write
    points the stream at the null device, so nothing fails again (not even Python's flush at
    exit), and calls `on_broken` once."""

    def __init__(self, out: TextIO, on_broken: Callable[[], None] = lambda: None) -> None:
        self.out = out
        self.on_broken = on_broken
        self.broken = False

    def write(self, text: str) -> None:
        if self.broken:
            return
        try:
            self.out.write(text)
            self.out.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.broken = True
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self.out.fileno())
            os.close(devnull)
            self.on_broken()


class Transcript:
    def __init__(self, out: Sink | None, cwd: str = ".") -> None:
        self.out = out
        self.cwd = cwd
        self._in_text = False
        # A question is on the terminal (stderr) with the cursor after it: what is printed
        # meanwhile starts on a fresh line.
        self.prompting = False
        self._titles: dict[str, str] = {}  # tool call id -> title, for permission lines
        self._labels: dict[str, str] = {}  # tool call id -> "write_file notes.md"
        self._rounds: set[str] = set()  # cards that stand for several calls

    def _w(self, text: str) -> None:
        if self.out is not None:
            self.out.write(text)

    def _line(self, text: str) -> None:
        if self._in_text or self.prompting:
            self._w("\n")
            self._in_text = self.prompting = False
        self._w(text + "\n")

    def update(self, u: acp.SessionUpdate) -> None:
        if isinstance(u, acp.AgentMessageChunk) and isinstance(u.content, acp.TextContent):
            if is_ending(u.content.text):  # `[stop: ...]` follows and says it
                return
            self._w(u.content.text)
            self._in_text = True
        elif isinstance(u, acp.AgentThoughtChunk) and isinstance(u.content, acp.TextContent):
            self._line(f"  (thinking) {u.content.text.strip()}")
        elif isinstance(u, acp.ToolCallStart):
            self._titles[u.tool_call_id] = u.title
            if not isinstance(u.name, str) or not u.name:
                self._rounds.add(u.tool_call_id)  # a round's card: no tool of its own
            self._labels[u.tool_call_id] = self._label(u)
            self._line(f"▸ {u.title}  [{u.kind or 'other'}]")
            self._contents(u.content or [])
        elif isinstance(u, acp.ToolCallProgress) and u.status in ("completed", "failed"):
            mark = "✓" if u.status == "completed" else "✗"
            texts = [
                c.content.text
                for c in (u.content or [])
                if isinstance(c, acp.ContentToolContent) and isinstance(c.content, acp.TextContent)
            ]
            lines = texts[0].splitlines() if texts and texts[0] else []
            label = self._labels.get(u.tool_call_id, u.tool_call_id)
            if u.tool_call_id in self._rounds and len(lines) > 1:  # every call's outcome
                self._line(f"  {mark} {label}\n" + "\n".join(f"      {line}" for line in lines))
            else:
                self._line(f"  {mark} {label}{' — ' + lines[0] if lines else ''}")
        elif isinstance(u, acp.PlanUpdate):
            self._line("plan:\n" + "\n".join(f"  [{e.status}] {e.content}" for e in u.entries))
        elif isinstance(u, acp.NoticeUpdate):
            self._line(f"! {u.title}")

    def _label(self, u: acp.ToolCallStart) -> str:
        """The tool's name and what it works on, as the project sees it: `write_file notes.md`
        (the title when the agent sent no name)."""
        if not isinstance(u.name, str) or not u.name:
            return u.title
        where = u.locations[0].path if u.locations else ""
        return f"{u.name} {_relative(where, self.cwd)}".rstrip()

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

    def after_echo(self) -> None:
        """The terminal echoed `^C` where the cursor was: the next line starts on a new one."""
        if self.out is not None and self.out.out.isatty():
            self._in_text = True

    def stop(self, reason: str) -> None:
        self._line(f"[stop: {reason}]")

    def error(self, message: str) -> None:
        self._line(f"[{message}]")


def _relative(path: str, cwd: str) -> str:
    """`path` relative to `cwd` when inside it, else as given."""
    if not path or not os.path.isabs(path):
        return path
    try:
        rel = os.path.relpath(path, cwd)
    except ValueError:  # another drive (Windows)
        return path
    return path if rel == os.pardir or rel.startswith(os.pardir + os.sep) else rel
