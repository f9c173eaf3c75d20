"""A session: a stored sequence of turns bound to a cwd, with its mode, model and grants."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import anyio
import msgspec

from tether.engine.events import Event, Notice
from tether.engine.grants import Grants
from tether.engine.history import Message

MODES: dict[str, tuple[str, str]] = {
    "ask": ("Ask", "Ask before every change to files and before running anything"),
    "code": ("Code", "Create new files freely; ask before replacing or running anything"),
}
DEFAULT_MODE = "ask"


class SessionState(msgspec.Struct):
    """What is persisted with a session besides its history."""

    mode: str = DEFAULT_MODE
    model: str = ""
    grants: Grants = msgspec.field(default_factory=Grants)
    mcp_servers: list[dict[str, Any]] = []
    roots: list[str] = []
    reasoning: str | None = None  # the reasoning effort picked for this session's model
    cost: float = 0.0  # what this session has cost so far, when prices are configured
    # A summary standing in for history[:compacted_upto] in requests (the history keeps all).
    summary: str | None = None
    compacted_upto: int = 0


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class Session:
    id: str
    cwd: str
    state: SessionState
    history: list[Message] = field(default_factory=list[Message])
    title: str | None = None
    updated_at: str = field(default_factory=now_iso)
    # A running turn's scope, so session/cancel and session/close can stop it.
    turn_scope: anyio.CancelScope | None = None
    saved_messages: int = 0  # how many history entries the store already has
    # Events not yet stored, kept for replay.
    pending_events: list[Event] = field(default_factory=list[Event])

    @property
    def busy(self) -> bool:
        return self.turn_scope is not None

    def record(self, event: Event) -> None:
        """Keep an event for replay (notices are live only)."""
        if not isinstance(event, Notice):
            self.pending_events.append(event)

    def cancel_turn(self) -> None:
        if self.turn_scope is not None:
            self.turn_scope.cancel()
