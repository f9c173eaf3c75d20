"""todo_write: the model's plan for the turn, shown to the user as the ACP plan."""

from __future__ import annotations

from typing import Literal

import msgspec

from tether.engine.events import PlanItem
from tether.engine.registry import CallPlan, ToolArgs, ToolOutput, tool
from tether.engine.seam import Capabilities

_MARKS = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]"}


class Todo(msgspec.Struct, forbid_unknown_fields=True):
    content: str
    status: Literal["pending", "in_progress", "completed"] = "pending"
    priority: Literal["high", "medium", "low"] = "medium"


class TodoWriteArgs(ToolArgs):
    todos: list[Todo]


@tool(kind="think", read_only=True)
async def todo_write(ctx: Capabilities, args: TodoWriteArgs) -> ToolOutput:
    """Replace the task list for this work, which the user sees as your plan.

    Send the whole list every time; keep exactly one item in_progress while you work.

    Args:
        todos: Every task, in order, each with content, status (pending, in_progress,
            completed) and priority (high, medium, low).
    """
    todos = args.todos
    plan = [PlanItem(t.content, t.status, t.priority) for t in todos]
    done = sum(t.status == "completed" for t in todos)
    lines = [f"{_MARKS[t.status]} {t.content}" for t in todos]
    text = "\n".join([f"plan updated: {done}/{len(todos)} done", *lines])
    return ToolOutput(text, [], plan=plan)


@todo_write.described_by
def _describe(ctx: Capabilities, args: TodoWriteArgs) -> CallPlan:
    return CallPlan(title="Update plan", kind="think")
