"""What a running turn shows over LSP: one status line (the agent's latest line of text, the tool
running and the latest line it reports, such as `wait`'s countdown or a command's output, the
plan step) for the progress, each tool as it starts running (for clients shown only a few
messages), and the answer text the command returns."""

from __future__ import annotations

from collections.abc import Callable

from tether.engine import events as ev

Report = Callable[[str], None]
TITLE_WIDTH = 40  # characters of a tool's title before its reported line


class TurnView:
    def __init__(self, report: Report, on_tool: Report | None = None) -> None:
        self._report = report
        self._on_tool = on_tool  # called with a tool's title as it starts running
        self._texts: dict[str, list[str]] = {}  # message id -> its deltas
        self._last_message: str | None = None
        self._partial = ""  # the line being written
        self._last_line = ""  # the last complete, non-blank line
        self._titles: dict[str, str] = {}  # call id -> title
        self._running: set[str] = set()  # calls started and not finished

    @property
    def answer(self) -> str:
        """The text of the turn's last message (the final answer)."""
        if self._last_message is None:
            return ""
        return "".join(self._texts[self._last_message]).strip()

    def report(self, message: str) -> None:
        self._report(message)

    def take(self, e: ev.Event) -> None:
        if isinstance(e, ev.TextDelta):
            self._text(e)
        elif isinstance(e, ev.ThoughtDelta):
            self._report("Thinking…")
        elif isinstance(e, ev.ToolStarted):
            self._titles[e.call_id] = e.title
        elif isinstance(e, ev.ToolUpdated) and e.status == "in_progress":
            title = self._titles.get(e.call_id, e.title or "a tool")
            self._running.add(e.call_id)
            self._report(f"Running: {title}")
            if self._on_tool is not None:
                self._on_tool(title)
        elif isinstance(e, ev.ToolUpdated) and e.call_id in self._running and e.content:
            self._reported(e.call_id, e.content)
        elif isinstance(e, ev.ToolFinished):
            self._running.discard(e.call_id)
        elif isinstance(e, ev.PlanChanged):
            doing = [i.content for i in e.entries if i.status == "in_progress"]
            if doing:
                self._report(f"Plan: {doing[0]}")
        elif isinstance(e, ev.Notice):
            self._report(e.title)

    def _reported(self, call_id: str, content: list[ev.ToolContent]) -> None:
        """A running call's own report (its card's text over ACP): its last line."""
        texts = [c.text for c in content if isinstance(c, ev.TextOut)]
        lines = [line for t in texts for line in t.splitlines()]
        lines = [line for line in lines if line.strip().strip("`")]  # no blanks, fence bars
        if lines:
            title = self._titles.get(call_id, "a tool")
            if len(title) > TITLE_WIDTH:  # the line is the news: the title yields room
                title = title[: TITLE_WIDTH - 1] + "…"
            self._report(f"Running: {title} — {lines[-1]}")

    def _text(self, e: ev.TextDelta) -> None:
        if e.message_id != self._last_message:
            self._last_message = e.message_id
            self._partial = ""
        self._texts.setdefault(e.message_id, []).append(e.text)
        pieces = e.text.split("\n")
        if len(pieces) > 1:
            done = [self._partial + pieces[0], *pieces[1:-1]]
            full = [line for line in done if line.strip()]
            if full:
                self._last_line = full[-1]
            self._partial = pieces[-1]
        else:
            self._partial += pieces[0]
        self._report(self._partial if self._partial.strip() else self._last_line)
