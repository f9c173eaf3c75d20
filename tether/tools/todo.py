"""The todo stack tools (todo_list, todo_push, todo_pop, todo_update, todo_clear): the model's
plan as a LIFO stack of task groups, stored with the session and shown to the user as the ACP
plan (engine/todo_stack.py). They change tether's own record only, never a file: nothing asks.
The stack's logic loads when a call runs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tether.engine.events import TextOut
from tether.engine.registry import CallPlan, ToolArgs, ToolOutput, tool
from tether.engine.seam import Capabilities, TodoGroup, TodoStatus
from tether.errors import ToolError

if TYPE_CHECKING:
    from tether.engine.registry import ToolDef

RETIRED = (
    "todo_write was replaced by the todo stack: todo_push adds a group of tasks, todo_update "
    "changes one by its number, todo_pop removes the finished TOP group, todo_list shows the "
    "stack, todo_clear empties it"
)


def retired(name: str) -> ToolError | None:
    """Why a call to a tool tether no longer has fails (a registry explainer)."""
    return ToolError("UNKNOWN_TOOL", RETIRED) if name == "todo_write" else None


class NoArgs(ToolArgs):
    pass


class PushArgs(ToolArgs):
    titles: list[str]


class UpdateArgs(ToolArgs):
    number: int
    status: TodoStatus | None = None
    title: str = ""  # "": kept
    notes: str = ""  # "": kept


def _stack(ctx: Capabilities) -> list[TodoGroup]:
    if ctx.todos is None:
        raise ToolError("TOOL_FAILED", "this context has no session todo stack")
    return ctx.todos


def _shown(groups: list[TodoGroup], said: str) -> ToolOutput:
    """The stack after a change: rendered for the model, as the ACP plan for the user."""
    from tether.engine import todo_stack

    text = f"{said}\n{todo_stack.render(groups)}"
    return ToolOutput(text, [TextOut(said)], plan=todo_stack.plan(groups))  # the plan shows it


@tool(kind="think", read_only=True)
async def todo_list(ctx: Capabilities, args: NoArgs) -> ToolOutput:
    """Show the todo stack, TOP group first, tasks numbered."""
    from tether.engine import todo_stack

    listing = todo_stack.render(_stack(ctx))
    return ToolOutput(listing, [TextOut(listing)])  # no change: the plan stays as it was


@tool(kind="think", read_only=True)
async def todo_push(ctx: Capabilities, args: PushArgs) -> ToolOutput:
    """Push a group of tasks onto the todo stack (a LIFO of groups): push [T1,T2], push
    [T1.1,T1.2], pop when done.

    Args:
        titles: The tasks, in order.
    """
    from tether.engine import todo_stack

    groups = _stack(ctx)
    try:
        group = todo_stack.push(groups, args.titles)
    except ValueError as exc:
        raise ToolError("INVALID_ARGS", str(exc)) from None
    return _shown(groups, f"pushed a group of {len(group.items)} task(s)")


@tool(kind="think", read_only=True)
async def todo_pop(ctx: Capabilities, args: NoArgs) -> ToolOutput:
    """Pop the TOP group of the todo stack."""
    from tether.engine import todo_stack

    groups = _stack(ctx)
    group = todo_stack.pop(groups)
    if group is None:
        raise ToolError("TOOL_FAILED", "the todo stack is empty: nothing to pop")
    waiting = sum(item.status in todo_stack.OPEN for item in group.items)
    left = f", {waiting} of them still open" if waiting else ""
    return _shown(groups, f"popped a group of {len(group.items)} task(s){left}")


@tool(kind="think", read_only=True)
async def todo_update(ctx: Capabilities, args: UpdateArgs) -> ToolOutput:
    """Set a todo task's status, title or notes.

    Args:
        number: As todo_list numbers it.
        status: New status.
        title: New title.
        notes: New notes.
    """
    from tether.engine import todo_stack

    groups = _stack(ctx)
    try:
        title, notes = args.title or None, args.notes or None  # "": kept as it is
        item = todo_stack.update(groups, args.number, status=args.status, title=title, notes=notes)
    except ValueError as exc:
        raise ToolError("INVALID_ARGS", str(exc)) from None
    return _shown(groups, f"task {args.number} is now {item.status}: {item.title}")


@tool(kind="think", read_only=True)
async def todo_clear(ctx: Capabilities, args: NoArgs) -> ToolOutput:
    """Empty the todo stack."""
    from tether.engine import todo_stack

    count = todo_stack.clear(_stack(ctx))
    return _shown([], f"cleared {count} task(s)")


@todo_push.described_by
def _push_card(ctx: Capabilities, args: PushArgs) -> CallPlan:
    return CallPlan(title=f"Plan: {', '.join(args.titles)}"[:120], kind="think")


@todo_update.described_by
def _update_card(ctx: Capabilities, args: UpdateArgs) -> CallPlan:
    what = args.status or "edit"
    return CallPlan(title=f"Plan: task {args.number} {what}", kind="think")


def todo_tools() -> list[ToolDef]:
    return [todo_list, todo_push, todo_pop, todo_update, todo_clear]


for _t, _title in (
    (todo_list, "Plan"),
    (todo_pop, "Plan: pop the TOP group"),
    (todo_clear, "Plan: clear"),
):
    _t.title = _title
