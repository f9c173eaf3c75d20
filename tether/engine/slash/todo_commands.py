"""/todos: the session's todo stack, shown or changed by the user: `/todos` lists it (numbered
as the model's todo_update names tasks), `push A; B` adds a group, `pop` removes the TOP
group, `clear` empties it. A change goes out as the session's plan."""

from __future__ import annotations

from tether.engine import events as ev
from tether.engine import todo_stack
from tether.engine.seam import TodoGroup
from tether.engine.slash.slash_command import CommandContext

USAGE = "Use `/todos`, `/todos push TASK; TASK`, `/todos pop` or `/todos clear`."


async def todos(ctx: CommandContext, arg: str) -> str:
    groups = ctx.session.state.todos
    verb, _, rest = arg.strip().partition(" ")
    if not verb:
        return _listing(groups)
    if verb == "push":
        try:
            todo_stack.push(groups, rest.split(";"))
        except ValueError:
            return f"Nothing pushed: name at least one task. {USAGE}"
        said = "Pushed a group."
    elif verb == "pop":
        if todo_stack.pop(groups) is None:
            return "The todo stack is empty: nothing to pop."
        said = "Popped the TOP group."
    elif verb == "clear":
        said = f"Cleared {todo_stack.clear(groups)} task(s)."
    else:
        return f"Unknown `/todos {verb}`. {USAGE}"
    await ctx.manager.emit(ctx.session, ev.PlanChanged(todo_stack.plan(groups)))
    await ctx.manager.persist(ctx.session)
    return f"{said}\n\n{_listing(groups)}"


def _listing(groups: list[TodoGroup]) -> str:
    return f"```\n{todo_stack.render(groups)}\n```"
