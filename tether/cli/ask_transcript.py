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


class TurnUsage:
    """The turn's usage as its `usage_update`s tell it: one per round, with the API's token
    counts in `_meta.tether` (absent when tether estimated them) and the session's cost so far
    (`tether ask`'s session is new: its cost is the turn's)."""

    def __init__(self) -> None:
        self.rounds = 0
        self.counted = 0  # rounds whose counts the API reported
        self.input = self.cached = self.output = 0
        self.cost: acp.Cost | None = None

    def take(self, u: acp.UsageUpdate) -> None:
        self.rounds += 1
        if isinstance(u.cost, acp.Cost):
            self.cost = u.cost
        meta = u.meta if isinstance(u.meta, dict) else {}
        counts = meta.get("tether")
        if isinstance(counts, dict):
            self.counted += 1
            self.input += int(counts.get("inputTokens") or 0)
            self.cached += int(counts.get("cachedInputTokens") or 0)
            self.output += int(counts.get("outputTokens") or 0)

    def line(self) -> str:
        """`[usage: 2 rounds, 1,234 tokens in (1,000 cached), 56 out, $0.0012]`."""
        parts = [f"{self.rounds} round{'s' if self.rounds != 1 else ''}"]
        if self.counted:
            cached = f" ({self.cached:,} cached)" if self.cached else ""
            unsure = "" if self.counted == self.rounds else " (some rounds not reported)"
            parts.append(f"{self.input:,} tokens in{cached}, {self.output:,} out{unsure}")
        else:
            parts.append("tokens not reported")
        if self.cost is not None:
            sign = "$" if self.cost.currency == "USD" else f"{self.cost.currency} "
            parts.append(f"{sign}{self.cost.amount:.4f}")
        return f"[usage: {', '.join(parts)}]"


class Transcript:
    """`out` takes the progress (thinking, tool cards, permissions, the stop and usage lines);
    `answer` the agent's text (default: `out`): standard error and output, for `tether ask`."""

    def __init__(
        self,
        out: Sink | None,
        cwd: str = ".",
        *,
        quiet: bool = False,
        answer: Sink | None = None,
    ) -> None:
        self.out = out
        self.answer = answer or out
        self.cwd = cwd
        # --quiet: the answer, permission answers, the stop line and errors only (no
        # thinking, tool, plan or notice lines, no usage line).
        self.quiet = quiet
        self.usage = TurnUsage()
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
        if self._in_text and self.answer is not None:  # the answer's line ends first
            self.answer.write("\n")
        elif self.prompting:
            self._w("\n")
        self._in_text = self.prompting = False
        self._w(text + "\n")

    def opened(self, session_id: str, cwd: str, model: str | None, mode: str | None) -> None:
        self._line(f"[session: {session_id}]")

    def update(self, u: acp.SessionUpdate) -> None:
        if isinstance(u, acp.AgentMessageChunk) and isinstance(u.content, acp.TextContent):
            if is_ending(u.content.text):  # `[stop: ...]` follows and says it
                return
            if self.answer is not None:
                self.answer.write(u.content.text)
            self._in_text = True
        elif isinstance(u, acp.UsageUpdate):
            self.usage.take(u)
        elif not self.quiet:
            self._progress(u)

    def _progress(self, u: acp.SessionUpdate) -> None:
        """The lines that show how the turn goes (hidden by --quiet)."""
        if isinstance(u, acp.AgentThoughtChunk) and isinstance(u.content, acp.TextContent):
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

    def permission_asked(self, params: acp.RequestPermissionRequest, title: str) -> None:
        return  # the question itself is on the terminal, or answered by policy at once

    def permission(
        self, params: acp.RequestPermissionRequest, choice: str | None, by: str, title: str
    ) -> None:
        names = {o.option_id: o.name for o in params.options}
        why = " (no terminal to ask on)" if by == "no terminal" else ""
        self._line(f"? permission for {title}: {names.get(choice or '', 'cancelled')}{why}")

    def after_echo(self) -> None:
        """The terminal echoed `^C` where the cursor was: the next line starts on a new one."""
        if self.out is not None and self.out.out.isatty():
            self.prompting = True  # a fresh line on the terminal, not in the answer

    def stop(self, reason: str) -> None:
        self._line(f"[stop: {reason}]")

    def usage_line(self) -> None:
        """After the stop line of a turn that ran to its answer (not when it was cancelled)."""
        if self.usage.rounds and not self.quiet:
            self._line(self.usage.line())

    def error(self, message: str) -> None:
        self._line(f"[error: {message}]")


def _relative(path: str, cwd: str) -> str:
    """`path` relative to `cwd` when inside it, else as given."""
    if not path or not os.path.isabs(path):
        return path
    try:
        rel = os.path.relpath(path, cwd)
    except ValueError:  # another drive (Windows)
        return path
    return path if rel == os.pardir or rel.startswith(os.pardir + os.sep) else rel
