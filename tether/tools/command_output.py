"""What a command prints, as its card shows it while it runs (a live tail, or the client
terminals it runs in) and as the model reads it after (status line, output, raw result).
Shared by run_argv and run_argv_batch."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio

from tether.engine.events import TerminalOut, TextOut, ToolContent
from tether.engine.seam import CommandResult
from tether.tools.text import fence

T = TypeVar("T")

OUTPUT_LIMIT = 24_000  # bytes of output kept per command (head and tail)
PROGRESS_INTERVAL = 0.25  # seconds between two progress updates of a card
PROGRESS_TAIL = 4_000  # characters of live output a card shows
CARD_TAIL_LINES = 20  # lines of output a finished command's card shows (the model has it all)


class CardProgress:
    """A running command's card: its live output tail (at most every PROGRESS_INTERVAL), or
    the client terminals it runs in. Implements the seam's CommandProgress."""

    def __init__(
        self, report: Callable[[list[ToolContent]], Awaitable[None]] | None, prefix: str = ""
    ) -> None:
        self.report = report
        self.prefix = prefix  # what earlier commands of a batch printed
        self.terminals: list[str] = []
        self._tail = ""
        self._changed = anyio.Event()

    def output(self, text: str) -> None:
        self._tail = (self._tail + text)[-PROGRESS_TAIL:]
        self._changed.set()

    async def terminal(self, terminal_id: str) -> None:
        self.terminals.append(terminal_id)
        if self.report is not None:
            await self.report([TerminalOut(t) for t in self.terminals])

    def restart(self, prefix: str) -> None:
        self.prefix = prefix
        self._tail = ""

    async def around(self, work: Callable[[], Awaitable[T]]) -> T:
        if self.report is None:
            return await work()
        done: list[T] = []
        failed: list[Exception] = []
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._ticker)
            try:
                done.append(await work())
            except Exception as exc:  # raised as itself, not inside an ExceptionGroup
                failed.append(exc)
            tg.cancel_scope.cancel()  # the card's last word is the result, not a late tick
        if failed:
            raise failed[0]
        return done[0]

    async def _ticker(self) -> None:
        assert self.report is not None
        while True:
            await self._changed.wait()
            self._changed = anyio.Event()
            text = f"{self.prefix}{self._tail}"[-PROGRESS_TAIL * 2 :]
            await self.report([TextOut(fence(text))])
            await anyio.sleep(PROGRESS_INTERVAL)


def status_line(result: CommandResult, timeout: float) -> str:
    if result.timed_out:
        return f"timed out after {timeout:g} s: the command and what it started were killed"
    line = f"killed by {result.signal}" if result.signal else f"exit code {result.exit_code}"
    if len(result.stage_codes) > 1:
        codes = " | ".join("killed" if c is None else str(c) for c in result.stage_codes)
        line += f" (pipeline: {codes})"
    if result.launcher_skipped:  # first line: what a client terminal's card shows of the text
        line += f" {LAUNCHER_SKIPPED}"
    return line


LAUNCHER_SKIPPED = (
    "⚠ the editor did not start tether's launcher for this command: it ran outside the "
    "sandbox and outside tether's hold, or did not run at all (the editor looked the "
    "program up elsewhere); tether now names its launcher by its path in this editor"
)


def terminal_card(terminal_ids: list[str], result: CommandResult, status: str) -> list[ToolContent]:
    """The card of a command that ran in client terminals: the terminals, which the client
    shows with the exit status it saw (a status line beside them says it twice), and `status`
    only when it tells what a terminal cannot: that it was killed for taking too long, or that
    the editor did not start tether's launcher."""
    card: list[ToolContent] = [TerminalOut(t) for t in terminal_ids]
    if result.timed_out or result.launcher_skipped:
        card.append(TextOut(status))
    return card


def output_card(command: str, result: CommandResult, status: str) -> str:
    """A finished command's card, as a terminal shows it: the command, the tail of what it
    printed (the model reads the whole bounded output), then how it ended."""
    body = result.output.rstrip("\n")
    lines = body.split("\n") if body else []
    shown = lines[-CARD_TAIL_LINES:]
    text = "\n".join(shown)[-PROGRESS_TAIL:]
    above = len(lines) - len(shown)
    cut = above > 0 or result.omitted > 0 or result.truncated
    more = ["[... earlier output above ...]" if not above else f"[... {above} lines above ...]"]
    return "\n".join([f"$ {command}", *(more if cut else []), *([text] if text else []), status])


def result_text(result: CommandResult, timeout: float) -> str:
    lines = [status_line(result, timeout)]
    if result.truncated and not result.omitted:
        lines.append("[... the start of the output was dropped by the terminal ...]")
    body = result.output.rstrip("\n")
    lines.append(body if body else "(no output)")
    return "\n".join(lines)


def raw_result(result: CommandResult) -> dict[str, Any]:
    return {
        "exitCode": result.exit_code,
        "signal": result.signal,
        "timedOut": result.timed_out,
        "truncated": result.truncated,
    }
