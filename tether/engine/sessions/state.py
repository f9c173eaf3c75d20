"""A session: a stored sequence of turns bound to a cwd, with its mode, model and grants."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

import anyio
import msgspec

from tether.engine.events import Event, Notice
from tether.engine.grants import Grants
from tether.engine.history import Message, MessageSizes
from tether.engine.seam import TodoGroup
from tether.engine.sessions.modes import ALLOW_ALL_MODE as ALLOW_ALL_MODE  # modes, as before
from tether.engine.sessions.modes import DEFAULT_MODE
from tether.engine.sessions.modes import MODES as MODES
from tether.engine.sessions.modes import READ_ONLY_MODE as READ_ONLY_MODE
from tether.engine.sessions.undo import TurnChanges
from tether.errors import SessionBusy

# How a round of several calls needing consent is put to the user.
APPROVALS: dict[str, tuple[str, str]] = {
    "round": ("One per round", "Ask once for all the calls of a round"),
    "call": ("One per call", "Ask about each call on its own (a checkbox form where offered)"),
}
DEFAULT_APPROVALS = "round"
# What an "always" answer covers.
ALWAYS: dict[str, tuple[str, str]] = {
    "session": ("This session", 'An "always" answer holds for this session'),
    "project": (
        "This project",
        'An "always" answer holds in every session of this project (see /grants)',
    ),
}
DEFAULT_ALWAYS = "session"
# Whether the commands the sandbox confines may use the network.
NETWORK: dict[str, tuple[str, str]] = {
    "off": ("Off", "Confined commands open no network connection"),
    "on": ("On", "Confined commands may use the network (they still write only in the project)"),
}


class AccessGrant(msgspec.Struct, frozen=True):
    """A directory outside the roots the user opened to this session's tools."""

    path: str
    access: Literal["read", "write"]


class HostNotice(msgspec.Struct, frozen=True):
    """What tether is to tell the model about the session itself (sessions/host_notices.py)."""

    kind: str  # one pending notice per kind: a newer one replaces it
    title: str  # what the user is shown
    text: str  # what the model reads


class UsageTotals(msgspec.Struct, omit_defaults=True):
    """Tokens billed over some rounds (each round re-sends the history, so these are billed
    sums, not the context's size), the rounds, and the cost when the model has prices.
    `estimated`: some round's counts were tether's chars/4 estimate (the API gave none)."""

    rounds: int = 0
    input_tokens: int = 0
    cached_tokens: int = 0
    output_tokens: int = 0
    cost: float | None = None
    estimated: bool = False

    def add(self, other: UsageTotals) -> None:
        self.rounds += other.rounds
        self.input_tokens += other.input_tokens
        self.cached_tokens += other.cached_tokens
        self.output_tokens += other.output_tokens
        if other.cost is not None:
            self.cost = (self.cost or 0.0) + other.cost
        self.estimated = self.estimated or other.estimated


class SessionState(msgspec.Struct):
    """What is persisted with a session besides its history."""

    mode: str = DEFAULT_MODE
    approvals: str = DEFAULT_APPROVALS
    always: str = DEFAULT_ALWAYS  # what an "always" answer lasts for (ALWAYS)
    model: str = ""
    grants: Grants = msgspec.field(default_factory=Grants)
    mcp_servers: list[dict[str, Any]] = []
    roots: list[str] = []
    reasoning: str | None = None  # the reasoning effort picked for this session's model
    cost: float = 0.0  # what this session has cost so far, when prices are configured
    # A summary standing in for history[:compacted_upto] in requests (the history keeps all).
    summary: str | None = None
    compacted_upto: int = 0
    # The skill directories the user allowed changes to for this session (a skill write's
    # "this session" answer: engine/skills/skill_writes.py).
    skill_writes: list[str] = []
    # The project snapshot in the system prompt, taken at the first prompt (see system_prompt).
    context: str | None = None
    instruction_files: list[str] = []  # the instruction files read into it, in order
    dir_grants: list[AccessGrant] = []  # request_directory_access answers
    # Per turn that changed files, their content before it: what /undo restores (newest last).
    undo: list[TurnChanges] = []
    # Whether confined commands may use the network (None: the config file's `[sandbox]`).
    network: bool | None = None
    # Per model, the API's input tokens per estimated token (chars/4), once it reported some.
    token_ratios: dict[str, float] = {}
    # How the last turn ended when it did not finish ("running" while it runs, and after a
    # kill; "cancelled", "error", "max_tokens", "max_turn_requests"): /retry goes on from it.
    unfinished: str | None = None
    # What the model is to be told about the session at its next prompt (host_notices.py).
    notices: list[HostNotice] = []
    # The todo stack (engine/todo_stack.py), bottom group first: it outlives turns and reloads.
    todos: list[TodoGroup] = []
    # What the last turn and the whole session used (/status, `tether ask`'s last line).
    last_turn: UsageTotals = msgspec.field(default_factory=UsageTotals)
    usage: UsageTotals = msgspec.field(default_factory=UsageTotals)


def with_window_choices(stored: SessionState, mine: SessionState) -> SessionState:
    """The state another process stored, with what this window chose for itself kept: its
    mode, model and effort, approvals, network, MCP servers and roots (what its pickers and
    its client show). Grants, undo, the summary, the cost and the snapshot are the session's."""
    return msgspec.structs.replace(
        stored,
        mode=mine.mode,
        approvals=mine.approvals,
        always=mine.always,
        model=mine.model,
        reasoning=mine.reasoning,
        network=mine.network,
        mcp_servers=mine.mcp_servers,
        roots=mine.roots,
        notices=mine.notices,  # what this process has to tell the model
    )


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Session(msgspec.Struct):
    id: str
    cwd: str
    state: SessionState
    history: list[Message] = msgspec.field(default_factory=list[Message])
    title: str | None = None
    updated_at: str = msgspec.field(default_factory=now_iso)
    # The running turn's scope, made when the prompt is accepted (before anything awaits), so
    # a second prompt is refused and a cancel arriving before the turn really starts still
    # counts: a scope cancelled before it is entered cancels at once when entered.
    turn_scope: anyio.CancelScope | None = None
    # Why the running turn was cancelled: "client" when the client said so (session/cancel),
    # which also answers the turn's pending permission requests itself.
    cancelled_by: str | None = None
    # Set when the running turn is cancelled, for what waits before the turn's scope is entered.
    turn_cancelled: anyio.Event | None = None
    # The store's row number of each saved history entry (rows of other processes between).
    message_seqs: list[int] = msgspec.field(default_factory=list[int])
    # False for a session replayed but not yet prompted: its messages are still on disk
    # (`Store.load_history` reads them before a turn).
    history_loaded: bool = True
    # Events not yet stored, kept for replay.
    pending_events: list[Event] = msgspec.field(default_factory=list[Event])
    # Stored history entries changed since (their images left out): rewritten at the next save.
    rewritten: set[int] = msgspec.field(default_factory=set[int])
    # Each message's size as requests carry it, remembered (see history.MessageSizes).
    sizes: MessageSizes = msgspec.field(default_factory=MessageSizes)
    # The store's row after the last event this process stored or showed: rows from it on
    # were written by another process, and are shown before this process's next turn.
    event_end: int = 0
    # `/yolo once`: the next turn runs as `allow-all`, and only that turn (never stored).
    yolo_once: bool = False
    yolo_from: str | None = None  # the mode `/yolo on` left, which `/yolo off` goes back to

    @property
    def saved_messages(self) -> int:
        """How many history entries the store already has."""
        return len(self.message_seqs)

    @property
    def busy(self) -> bool:
        return self.turn_scope is not None

    def record(self, event: Event) -> None:
        """Keep an event for replay (notices are live only, but for host notices)."""
        if not isinstance(event, Notice) or event.kept:
            self.pending_events.append(event)

    def claim(self) -> anyio.CancelScope:
        """Own the session for one turn; SessionBusy when a turn already runs. Synchronous on
        purpose: two prompts sent back to back cannot both pass."""
        if self.turn_scope is not None:
            raise SessionBusy(self.id)
        self.cancelled_by = None
        self.turn_scope = anyio.CancelScope()
        self.turn_cancelled = anyio.Event()
        return self.turn_scope

    def release(self) -> None:
        self.turn_scope = None

    def cancel_turn(self, by: str = "agent") -> None:
        if self.turn_scope is not None:
            self.cancelled_by = self.cancelled_by or by
            self.turn_scope.cancel()
            if self.turn_cancelled is not None:
                self.turn_cancelled.set()
