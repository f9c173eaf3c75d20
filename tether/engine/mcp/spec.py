"""What the engine knows of an MCP server before and after connecting: protocol-neutral
(the ACP front converts its `McpServer` entries, the config layer its `[mcp_servers]` tables;
the SDK never appears here)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

import msgspec

Transport = Literal["stdio", "http", "sse"]
DEFAULT_TIMEOUT = 120.0  # seconds for one request: as long as any built-in tool may run


class ServerSpec(msgspec.Struct, frozen=True):
    """One configured server: a command to run (stdio) or a URL (streamable HTTP)."""

    name: str
    transport: Transport
    command: str = ""
    args: list[str] = msgspec.field(default_factory=list[str])
    env: dict[str, str] = msgspec.field(default_factory=dict[str, str])
    url: str = ""
    headers: dict[str, str] = msgspec.field(default_factory=dict[str, str])
    # Every tool of the server runs without asking (the user vouches for it).
    read_only: bool = False
    # Why it cannot start, known before trying (a variable its config names is unset).
    problem: str = ""
    # Seconds one request (a tool call, a prompt) may take; None: DEFAULT_TIMEOUT.
    timeout: float | None = None

    @property
    def request_timeout(self) -> float:
        return self.timeout if self.timeout is not None else DEFAULT_TIMEOUT


def merged(client: Iterable[ServerSpec], configured: Iterable[ServerSpec]) -> list[ServerSpec]:
    """A session's servers: the client's, then the configured ones it does not name (the
    client's entry is the more specific one: an editor's per-project setting)."""
    servers = list(client)
    named = {s.name for s in servers}
    return servers + [s for s in configured if s.name not in named]


class RemoteTool(msgspec.Struct, frozen=True):
    """A tool as the server lists it."""

    name: str
    description: str
    input_schema: dict[str, Any]
    title: str = ""
    read_only_hint: bool = False


class PromptArgument(msgspec.Struct, frozen=True):
    name: str
    description: str = ""
    required: bool = False


class RemotePrompt(msgspec.Struct, frozen=True):
    """A prompt as the server lists it (offered as the slash command `/mcp__<server>__<name>`)."""

    name: str
    description: str
    arguments: list[PromptArgument] = msgspec.field(default_factory=list[PromptArgument])
    title: str = ""
