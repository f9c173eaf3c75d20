"""What a session's MCP server is doing, as `/mcp` shows it and as a front is told when it
changes (its state, its tools, its prompts)."""

from __future__ import annotations

from typing import Literal

import msgspec

from tether.engine.mcp.spec import RemoteTool

# starting: connecting; ready: serving; failed: never became ready; exited: went away after
# it was ready; stopped: the session stopped it.
ServerState = Literal["starting", "ready", "failed", "exited", "stopped"]
# A tool of the server left out, and why: its name ("" for a count of tools past the cap).
LeftOut = tuple[str, str]


class McpChange(msgspec.Struct, frozen=True):
    """A server's state, tools or prompts changed (its prompts are slash commands)."""

    server: str
    what: Literal["state", "tools", "prompts"]


class ServerStatus(msgspec.Struct, frozen=True):
    name: str
    transport: str
    state: ServerState
    reason: str  # why it failed or exited
    tools: list[str]  # the names the model knows them by
    prompts: int
    output: str = ""  # the end of what it wrote to stderr when it failed or exited
    left_out: list[LeftOut] = msgspec.field(default_factory=list[LeftOut])  # not offered, why

    @property
    def summary(self) -> str:
        """ "ready", "exited: the server went away", ..."""
        return f"{self.state}: {self.reason}" if self.reason else self.state


def left_out_lines(left_out: list[LeftOut], quote: str = "") -> list[str]:
    """ "no_type: not a valid MCP tool (...)", one per tool left out (`quote` around names)."""
    return [f"{quote}{name}{quote}: {why}" if name else why for name, why in left_out]


def tools_changed(server: str, before: list[RemoteTool], after: list[RemoteTool]) -> str:
    """ "MCP server X: tools changed: +a -b ~c" (added, removed, redescribed); "" when the
    list is the same."""
    old = {t.name: t for t in before}
    new = {t.name: t for t in after}
    marks = [f"+{n}" for n in new if n not in old]
    marks += [f"-{n}" for n in old if n not in new]
    marks += [f"~{n}" for n in new if n in old and new[n] != old[n]]
    return f"MCP server {server}: tools changed: {' '.join(marks)}" if marks else ""
