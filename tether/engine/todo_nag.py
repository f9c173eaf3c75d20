"""The todo stack's reminder at the end of a turn, through the channel `[agent]
todo_nag_strategy` names: `developer` (an instruction from tether, as the API's developer or
system message where it has one mid-conversation), `user` (a user message), `synthetic_tool`
(a `todo_list` call tether makes on the model's behalf, whose result is the real listing,
shown to the user as a card like any call) or `none`.

Due when a turn tries to end with a non-empty stack that no todo_* tool touched this turn:
open tasks are work the model forgot ([TODO OPEN WORK]), a stack of only finished tasks is
left-over bookkeeping ([TODO HYGIENE]). Once per turn."""

from __future__ import annotations

import uuid
from typing import Literal

from tether.engine import events as ev
from tether.engine import todo_stack
from tether.engine.history import (
    AssistantMessage,
    Message,
    TextPart,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from tether.engine.seam import TodoGroup

NagStrategy = Literal["developer", "user", "synthetic_tool", "none"]
STRATEGIES: tuple[NagStrategy, ...] = ("developer", "user", "synthetic_tool", "none")
DEFAULT_STRATEGY: NagStrategy = "developer"
TOOL = "todo_list"


def due(groups: list[TodoGroup], turn: list[Message], strategy: str) -> bool:
    """Whether the turn so far (`turn`: its messages) ends with a reminder."""
    if strategy == "none" or not groups:
        return False
    for m in turn:
        if isinstance(m, AssistantMessage) and any(
            c.name.startswith("todo_") for c in m.tool_calls
        ):
            return False
    return True


def messages(groups: list[TodoGroup], strategy: str) -> list[Message]:
    """What the history gets: the reminder through the strategy's channel."""
    if strategy == "synthetic_tool":
        call = ToolCall(f"todo-nag-{uuid.uuid4().hex[:12]}", TOOL, "{}")
        listing = todo_stack.render(groups)
        return [AssistantMessage(tool_calls=[call]), ToolResultMessage(call.id, TOOL, listing)]
    text = todo_stack.reminder(groups)
    return [UserMessage([TextPart(text)], host=strategy == "developer")]


def shown(added: list[Message]) -> list[ev.Event]:
    """The card a client sees for a synthetic call (the other channels show nothing)."""
    out: list[ev.Event] = []
    for m in added:
        if isinstance(m, AssistantMessage):
            for c in m.tool_calls:
                out.append(ev.ToolStarted(c.id, c.name, "Plan (todo reminder)", "think", {}))
        elif isinstance(m, ToolResultMessage):
            out.append(ev.ToolFinished(m.call_id, "completed", [ev.TextOut(m.content)]))
    return out
