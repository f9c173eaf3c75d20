"""What the chat shows of a turn, drawn with rich: the answer streamed as Markdown (redrawn in
place as it grows), thinking in dim, a card per tool call (its title and status, a diff summary
for edits, the command and its output tail for commands), the plan, notices, and the turn's end.
A replayed session (`--continue`, `--resume`) comes through here too, the user's lines included."""

from __future__ import annotations

import os
import time

from rich.console import Console
from rich.live import Live
from rich.markdown import Markdown
from rich.text import Text

from tether.rpc.acp.translate import is_ending
from tether.schemas import acp

OUTPUT_TAIL = 6  # lines of a command's output shown on its card
CARD_NOTE_LINES = 4  # lines of the text on a card when it is announced
REDRAW_EVERY = 0.05  # seconds between redraws of a streaming answer (the last one always lands)
_MARKS = {"completed": "✓", "failed": "✗"}
_PLAN_MARKS = {"pending": "☐", "in_progress": "◐", "completed": "☑"}


class ChatView:
    def __init__(self, console: Console, cwd: str) -> None:
        self.console = console
        self.cwd = cwd
        self._answer = ""
        self._live: Live | None = None
        self._drawn = 0.0
        self._thought = ""
        self._user = ""
        self._cards: dict[str, acp.ToolCallStart] = {}
        self.used: tuple[int, int] | None = None  # context used, size (the last usage_update)

    # --- the stream -----------------------------------------------------------------------

    def update(self, u: acp.SessionUpdate) -> None:
        if isinstance(u, acp.AgentMessageChunk):
            self._flush_user()
            self._flush_thought()
            if isinstance(u.content, acp.TextContent) and not is_ending(u.content.text):
                self._stream(u.content.text)
        elif isinstance(u, acp.AgentThoughtChunk) and isinstance(u.content, acp.TextContent):
            self._end_answer()
            self._thought += u.content.text
        elif isinstance(u, acp.UserMessageChunk) and isinstance(u.content, acp.TextContent):
            self.flush()
            self._user += u.content.text
        elif isinstance(u, acp.UsageUpdate):
            self.used = (u.used, u.size)
        else:
            self.flush()
            self._other(u)

    def _other(self, u: acp.SessionUpdate) -> None:
        if isinstance(u, acp.ToolCallStart):
            self._card(u)
        elif isinstance(u, acp.ToolCallProgress) and u.status in _MARKS:
            self._outcome(u)
        elif isinstance(u, acp.PlanUpdate):
            for e in u.entries:
                self.console.print(Text(f"  {_PLAN_MARKS.get(e.status, '?')} {e.content}"))
        elif isinstance(u, acp.NoticeUpdate):
            self.console.print(Text(f"! {u.title}", style="yellow"))
        elif isinstance(u, acp.CurrentModeUpdate):
            self.console.print(Text(f"mode: {u.current_mode_id}", style="dim"))

    def _stream(self, text: str) -> None:
        """The answer's finished blocks are printed once, for good; only the block still growing
        is redrawn in place (a whole answer redrawn would be copied into the scrollback at
        every redraw once it is taller than the screen)."""
        self._answer += text
        cut = settled_end(self._answer)
        if cut:
            done, self._answer = self._answer[:cut], self._answer[cut:]
            if self._live is not None:
                self._live.update(Markdown(self._answer), refresh=False)
            self.console.print(Markdown(done))
            self.console.print()
        if not self._answer:
            return
        if self._live is None:
            self._live = Live(
                Markdown(self._answer),
                console=self.console,
                auto_refresh=False,
                vertical_overflow="visible",
            )
            self._live.start()
            self._drawn = 0.0
        now = time.monotonic()
        redraw = now - self._drawn >= REDRAW_EVERY
        self._live.update(Markdown(self._answer), refresh=redraw)
        if redraw:
            self._drawn = now

    def flush(self) -> None:
        """Everything pending on screen, before something else draws (a card, the menu)."""
        self._flush_user()
        self._flush_thought()
        self._end_answer()

    def _end_answer(self) -> None:
        if self._live is not None:
            self._live.update(Markdown(self._answer), refresh=True)
            self._live.stop()
        self._live, self._answer = None, ""

    def _flush_thought(self) -> None:
        if self._thought.strip():
            self.console.print(Text(f"✻ {self._thought.strip()}", style="dim italic"))
        self._thought = ""

    def _flush_user(self) -> None:
        if self._user.strip():
            self.console.print(Text(f"> {self._user.strip()}", style="bold cyan"))
        self._user = ""

    # --- tool cards -----------------------------------------------------------------------

    def _card(self, u: acp.ToolCallStart) -> None:
        self._cards[u.tool_call_id] = u
        kind = u.kind if isinstance(u.kind, str) else "other"
        self.console.print(Text.assemble(("▸ ", "bold"), (u.title, "bold"), (f"  [{kind}]", "dim")))
        if kind == "execute":
            command = u.raw_input.get("argv") if isinstance(u.raw_input, dict) else None
            shown = " ".join(str(a) for a in command) if isinstance(command, list) else u.title
            self.console.print(Text(f"  $ {shown}", style="cyan"))
        contents = u.content if isinstance(u.content, list) else []
        for c in contents:
            if isinstance(c, acp.DiffToolContent):
                self.console.print(Text(f"  {diff_summary(c, self.cwd)}", style="dim"))
        for text in _texts(contents):  # what the agent says of the call: a command's warnings
            for line in text.splitlines()[:CARD_NOTE_LINES]:
                self.console.print(Text(f"  {line}", style="dim"))

    def _outcome(self, u: acp.ToolCallProgress) -> None:
        start = self._cards.get(u.tool_call_id)
        title = start.title if start is not None else u.tool_call_id
        status = u.status if isinstance(u.status, str) else "completed"
        style = "green" if status == "completed" else "red"
        texts = _texts(u.content if isinstance(u.content, list) else [])
        first = texts[0] if texts else ""
        if start is not None and start.kind == "execute":
            self.console.print(Text(f"  {_MARKS[status]} {title}", style=style))
            for line in output_tail(first):
                self.console.print(Text(f"    {line}", style="dim"))
            return
        note = first.splitlines()[0] if first.strip() else ""
        self.console.print(Text(f"  {_MARKS[status]} {title}{' — ' + note if note else ''}", style))

    # --- turns, permissions -----------------------------------------------------------------

    def permission(self, params: acp.RequestPermissionRequest, choice: str | None) -> None:
        card = params.tool_call
        title = card.title if isinstance(card.title, str) else card.tool_call_id
        names = {o.option_id: o.name for o in params.options}
        answer = names.get(choice or "", "cancelled")
        self.console.print(Text(f"? {title}: {answer}", style="magenta"))

    def interrupted(self) -> None:
        self.flush()
        self.console.print(Text("cancelling the turn…", style="yellow"))

    def end_turn(self, reason: str | None) -> None:
        self.flush()
        if reason is None:
            self.console.print(Text("[the agent did not answer the cancel]", style="red"))
        elif reason != "end_turn":
            self.console.print(Text(f"[{reason}]", style="yellow"))
        if self.used is not None:
            used, size = self.used
            self.console.print(Text(f"context {used:,} / {size:,}", style="dim"))

    def say(self, text: str, style: str = "dim") -> None:
        self.flush()
        self.console.print(Text(text, style=style))


def settled_end(text: str) -> int:
    """Where the answer's finished blocks end: after its last blank line outside a code fence
    (0: none yet)."""
    end = pos = 0
    fenced = False
    for line in text.splitlines(keepends=True):
        pos += len(line)
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced and not line.strip() and line.endswith("\n"):
            end = pos
    return end


def diff_summary(d: acp.DiffToolContent, cwd: str) -> str:
    """`app.py +1 -1` (`notes.md (new) +3`): what an edit adds and removes, by line."""
    import difflib

    old = d.old_text.splitlines() if isinstance(d.old_text, str) else []
    added = removed = 0
    for line in difflib.unified_diff(old, d.new_text.splitlines(), lineterm="", n=0):
        if line.startswith("+") and not line.startswith("+++"):
            added += 1
        elif line.startswith("-") and not line.startswith("---"):
            removed += 1
    new = " (new)" if not isinstance(d.old_text, str) else ""
    return f"{_relative(d.path, cwd)}{new} +{added} -{removed}"


def output_tail(text: str) -> list[str]:
    """The last lines of a command's output, without the Markdown fence it comes in."""
    lines = [line for line in text.splitlines() if not line.startswith("```")]
    return lines[-OUTPUT_TAIL:]


def _texts(contents: list[acp.ToolCallContent]) -> list[str]:
    return [
        c.content.text
        for c in contents
        if isinstance(c, acp.ContentToolContent) and isinstance(c.content, acp.TextContent)
    ]


def _relative(path: str, cwd: str) -> str:
    if not os.path.isabs(path):
        return path
    rel = os.path.relpath(path, cwd)
    return path if rel.startswith(os.pardir) else rel
