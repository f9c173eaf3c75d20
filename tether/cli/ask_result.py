"""What a headless run ends with, for `--output-format json` and `stream-json`'s last line: the
answer, the session, how the turn stopped, its usage and cost, how long it took, and which
permissions were refused for want of someone to ask. Field names follow Claude Code's
`--output-format json` where the two mean the same (docs/cli.md lists every field)."""

from __future__ import annotations

import time
from typing import Any

from tether.cli.ask_transcript import TurnUsage
from tether.rpc.acp.translate import is_ending
from tether.schemas import acp


class RunRecord:
    """Fed the run's updates as they come; `result()` is the final object."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.session_id: str | None = None
        self.usage = TurnUsage()
        self.stop_reason: str | None = None
        self.error: str | None = None
        self.denials: list[dict[str, str]] = []
        self._message: list[str] = []  # the agent's text since its last tool call
        self._after_tool = False
        self._titles: dict[str, str] = {}

    def update(self, u: acp.SessionUpdate) -> None:
        if isinstance(u, acp.AgentMessageChunk) and isinstance(u.content, acp.TextContent):
            if is_ending(u.content.text):
                return
            if self._after_tool:  # a new message: the result is the last one
                self._message, self._after_tool = [], False
            self._message.append(u.content.text)
        elif isinstance(u, acp.ToolCallStart):
            self._titles[u.tool_call_id] = u.title
            self._after_tool = True
        elif isinstance(u, acp.UsageUpdate):
            self.usage.take(u)

    def title(self, tool_call_id: str, fallback: str | None = None) -> str:
        return fallback or self._titles.get(tool_call_id, tool_call_id)

    def denied(self, tool_call_id: str, title: str, reason: str) -> None:
        """A permission refused by policy: `--no`, or no terminal to ask on."""
        self.denials.append({"tool_call_id": tool_call_id, "title": title, "reason": reason})

    @property
    def text(self) -> str:
        return "".join(self._message)

    def result(self, exit_code: int) -> dict[str, Any]:
        u = self.usage
        cost = u.cost.amount if u.cost is not None and u.cost.currency == "USD" else None
        return {
            "type": "result",
            "subtype": _subtype(exit_code, self.stop_reason),
            "is_error": exit_code != 0,
            "exit_code": exit_code,
            "result": self.text,
            "error": self.error,
            "session_id": self.session_id,
            "stop_reason": self.stop_reason,
            "duration_ms": round((time.monotonic() - self.started) * 1000),
            "num_rounds": u.rounds,
            "usage": {
                "input_tokens": u.input if u.counted else None,
                "output_tokens": u.output if u.counted else None,
                "cache_read_input_tokens": u.cached if u.counted else None,
            },
            "total_cost_usd": cost,
            "permission_denials": self.denials,
        }


def _subtype(exit_code: int, stop_reason: str | None) -> str:
    if exit_code == 0:
        return "success"
    if stop_reason == "max_turn_requests":
        return "error_max_rounds"
    if exit_code == 3:
        return "error_permission_denied"
    if exit_code == 130:
        return "cancelled"
    return "error_during_execution"
