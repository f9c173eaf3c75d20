"""The session's todo stack: a LIFO stack of task groups (not a queue of tasks). `todo_push`
adds one group of sibling tasks on top; `todo_pop` removes the whole top group; tasks are
named by the number a listing shows them under (render order: the TOP group first), never by
a stored id. The breakdown goes depth first: push [T1, T2], push [T1.1, T1.2], finish and pop
them, then push [T2.1].

Open tasks (pending, in progress) are unfinished work; a stack whose every task is done or
cancelled still needs popping (hygiene). A turn that never looked at a non-empty stack is
reminded of it when it tries to end (engine/todo_nag.py). Loaded when a todo tool runs or a
reminder is due, never on the way to a session's first answer."""

from __future__ import annotations

from tether.engine.events import PlanItem
from tether.engine.seam import TodoGroup, TodoItem, TodoStatus

OPEN: frozenset[str] = frozenset({"pending", "in_progress"})
MARKS: dict[str, str] = {"pending": "[ ]", "in_progress": "[~]", "done": "[x]", "cancelled": "[-]"}
# How many open titles a reminder names before it says how many more there are.
REMINDER_TITLES = 8


def numbered(groups: list[TodoGroup]) -> list[tuple[int, int, TodoItem]]:
    """(number, depth, task) in render order: the TOP group's tasks first, numbered from 1;
    depth counts groups from the bottom (1) to the top."""
    out: list[tuple[int, int, TodoItem]] = []
    for depth in range(len(groups), 0, -1):
        for item in groups[depth - 1].items:
            out.append((len(out) + 1, depth, item))
    return out


def render(groups: list[TodoGroup]) -> str:
    """The stack as the model and /todos read it (what `todo_list` returns)."""
    if not groups:
        return "Todo stack: empty."
    lines = [f"Todo stack (LIFO of task groups, TOP first; depth {len(groups)}):"]
    last = 0
    for number, depth, item in numbered(groups):
        if depth != last:
            top = " TOP" if depth == len(groups) else ""
            lines.append(f"group {depth}{top}:")
            last = depth
        note = f" — {item.notes}" if item.notes else ""
        lines.append(f"  {number}. {MARKS[item.status]} {item.title}{note}")
    return "\n".join(lines)


def push(groups: list[TodoGroup], titles: list[str], notes: str = "") -> TodoGroup:
    """Add one group of sibling tasks on top; ValueError when no title has text."""
    cleaned = [t.strip() for t in titles if t.strip()]
    if not cleaned:
        raise ValueError("give at least one non-empty title")
    group = TodoGroup([TodoItem(t, notes=notes.strip()) for t in cleaned])
    groups.append(group)
    return group


def pop(groups: list[TodoGroup]) -> TodoGroup | None:
    """Remove the TOP group, all its tasks; None when the stack is empty."""
    return groups.pop() if groups else None


def clear(groups: list[TodoGroup]) -> int:
    """Empty the stack; how many tasks it held."""
    count = sum(len(g.items) for g in groups)
    groups.clear()
    return count


def update(
    groups: list[TodoGroup],
    number: int,
    *,
    status: TodoStatus | None = None,
    title: str | None = None,
    notes: str | None = None,
) -> TodoItem:
    """Change the task a listing numbers `number`; ValueError for no such task or an empty
    title."""
    place = _place(groups, number)
    if place is None:
        total = len(numbered(groups))
        have = f"tasks are numbered 1 to {total}" if total else "the stack is empty"
        raise ValueError(f"there is no task {number}: {have} (see todo_list)")
    group, index = place
    item = group.items[index]
    if title is not None and not title.strip():
        raise ValueError("a title must not be empty")
    changed = TodoItem(
        title.strip() if title is not None else item.title,
        status if status is not None else item.status,
        notes.strip() if notes is not None else item.notes,
    )
    group.items[index] = changed
    return changed


def _place(groups: list[TodoGroup], number: int) -> tuple[TodoGroup, int] | None:
    """The group and index of the task numbered `number` in render order."""
    seen = 0
    for group in reversed(groups):
        if number - seen <= len(group.items) and number > seen:
            return group, number - seen - 1
        seen += len(group.items)
    return None


def open_items(groups: list[TodoGroup]) -> list[TodoItem]:
    return [item for g in groups for item in g.items if item.status in OPEN]


def plan(groups: list[TodoGroup]) -> list[PlanItem]:
    """The stack as an ACP plan: every task, flattened in render order (the TOP group first),
    so the plan's n-th entry is the task `todo_update` and /todos call n. A cancelled task
    counts as completed (ACP has no cancelled) and says so; the TOP group's are high priority."""
    out: list[PlanItem] = []
    for _, depth, item in numbered(groups):
        priority = "high" if depth == len(groups) else "medium"
        if item.status == "cancelled":
            out.append(PlanItem(f"{item.title} (cancelled)", "completed", priority))
        elif item.status == "done":
            out.append(PlanItem(item.title, "completed", priority))
        else:
            out.append(PlanItem(item.title, item.status, priority))
    return out


def reminder(groups: list[TodoGroup]) -> str:
    """What a turn that tries to end without having looked at a non-empty stack is told: open
    work it forgot ([TODO OPEN WORK]) or a finished stack left standing ([TODO HYGIENE])."""
    waiting = open_items(groups)
    if waiting:
        titles = "; ".join(item.title for item in waiting[:REMINDER_TITLES])
        if len(waiting) > REMINDER_TITLES:
            titles += f"; and {len(waiting) - REMINDER_TITLES} more"
        head = (
            f"[TODO OPEN WORK] You are ending the turn with {len(waiting)} open task(s) on the "
            f"todo stack ({len(groups)} group(s)) and did not touch it this turn. Open tasks are "
            f"unfinished work: {titles}."
        )
        action = (
            "Go on with the TOP group's open tasks, or mark them done/cancelled with "
            "todo_update, pop a finished TOP group with todo_pop, or todo_clear if the user "
            "dropped the plan. If the user must decide something first, say so and end the turn."
        )
    else:
        head = (
            f"[TODO HYGIENE] The todo stack still holds {len(groups)} group(s) whose every task "
            "is done or cancelled."
        )
        action = (
            "The work looks finished; the stack is not: todo_pop the finished TOP group(s), or "
            "todo_clear when the whole plan is done."
        )
    return "\n".join([head, action, "", render(groups)])
