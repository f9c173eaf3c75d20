"""The model's side of Agent Skills (engine/skills/): `skill_read` activates a skill (its
instructions, and the absolute paths of its files, which `read_file` and `run_argv` reach
because the skills' roots are readable), `skill_list` shows every skill found now, with the
shadowed copies and the broken ones, `skill_search` greps them all. Each looks afresh: a skill
made during the session is there at once. `skill_create` and `skill_edit` write them, asked
first (engine/skills/skill_writes.py: a "this session" answer or `[skills] allow_write` covers a
skill's directory; no mode skips the question)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal

import anyio

from tether.engine.events import DiffOut, TextOut
from tether.engine.registry import CallPlan, ToolArgs, ToolDef, ToolOutput, tool
from tether.engine.seam import Capabilities
from tether.engine.skills.skill_catalog import activation, resources
from tether.engine.skills.skill_discovery import Discovery, Skill, discover
from tether.errors import ToolError

if TYPE_CHECKING:
    from tether.tools.skill_files import Change


class SkillReadArgs(ToolArgs):
    name: str


class SkillListArgs(ToolArgs):
    pass


@tool(kind="read", read_only=True)
async def skill_read(ctx: Capabilities, args: SkillReadArgs) -> ToolOutput:
    """Load a skill: its instructions (the body of its SKILL.md) and the list of its files.
    Call it when a task matches a skill's description, then follow the instructions; read
    the files they mention with read_file, by the absolute paths listed.

    Args:
        name: The skill's name, as the skills list gives it.
    """
    skill = await _find(ctx, args.name)
    files = await anyio.to_thread.run_sync(resources, skill.directory)
    return ToolOutput(activation(skill, files), [TextOut(_card_text(skill, files))])


@skill_read.described_by
def _describe_read(ctx: Capabilities, args: SkillReadArgs) -> CallPlan:
    return CallPlan(title=f"Use skill {args.name}", kind="read", target=args.name)


@tool(kind="read", read_only=True)
async def skill_list(ctx: Capabilities, args: SkillListArgs) -> str:
    """List the skills available now (name, description, directory), including any made
    since the conversation began, and the skills left out (shadowed by another of the same
    name, or with a broken SKILL.md)."""
    return listing(await anyio.to_thread.run_sync(discover, ctx.skills))


@skill_list.described_by
def _describe_list(ctx: Capabilities, args: SkillListArgs) -> CallPlan:
    return CallPlan(title="List skills", kind="read")


async def _find(ctx: Capabilities, name: str) -> Skill:
    found = await anyio.to_thread.run_sync(discover, ctx.skills)
    skill = found.find(name.strip().removeprefix("/"))
    if skill is None:
        names = ", ".join(s.name for s in found.skills) or "none"
        raise ToolError("SKILL_NOT_FOUND", f"no skill named {name!r} (skills: {names})")
    return skill


def listing(found: Discovery) -> str:
    lines = [f"{len(found.skills)} skills:"] if found.skills else ["No skills found."]
    lines += [
        f"- {s.name}: {' '.join(s.description.split())} ({s.directory}, {s.root.source})"
        for s in found.skills
    ]
    if found.shadowed:
        lines += ["", "Shadowed (another root's skill of the same name wins):"]
        lines += [f"- {lost.directory} (by {won.directory})" for lost, won in found.shadowed]
    if found.problems:
        lines += ["", "Left out (broken):"]
        lines += [f"- {p.path}: {p.message}" for p in found.problems]
    return "\n".join(lines)


def _card_text(skill: Skill, files: list[Path]) -> str:
    more = f", {len(files)} files" if files else ""
    return f"Skill **{skill.name}** loaded ({skill.directory}{more})"


# --- writing skills (tools/skill_files.py does the work; engine/skills/skill_writes.py decides
# who may) -----------------------------------------------------------------------------------


SEARCH_RESULTS = 100  # matching lines skill_search prints


class SkillSearchArgs(ToolArgs):
    pattern: str
    glob: str | None = None


@tool(kind="search", read_only=True)
async def skill_search(ctx: Capabilities, args: SkillSearchArgs) -> ToolOutput:
    """Search every skill's files with a Python regex, line by line: `<skill>/<file>:line: text`.

    Args:
        pattern: Python regular expression.
        glob: Only files whose name matches, e.g. `*.md`.
    """
    from tether.tools.skill_files import search

    return await search(ctx, args.pattern, args.glob, SEARCH_RESULTS)


@skill_search.described_by
def _describe_search(ctx: Capabilities, args: SkillSearchArgs) -> CallPlan:
    return CallPlan(title=f"Search skills for /{args.pattern}/", kind="search")


class SkillCreateArgs(ToolArgs):
    name: str
    description: str
    body: str
    files: dict[str, str] = {}
    location: Literal["tether", "project", "user"] = "tether"


@tool(kind="edit")
async def skill_create(ctx: Capabilities, args: SkillCreateArgs) -> ToolOutput:
    """Create a skill: SKILL.md (header from name and description, then body) and files.

    Args:
        name: Lowercase letters, digits, hyphens (max 64).
        description: What it does and when to use it.
        body: Markdown instructions.
        files: More files: path in the skill -> text.
        location: tether (every project), project (.agents/skills) or user (~/.agents/skills).
    """
    from tether.tools.skill_files import create

    change = await create(ctx, args.name, args.description, args.body, args.files, args.location)
    return await _written(ctx, change, None)


@skill_create.planned_by
async def _plan_create(ctx: Capabilities, args: SkillCreateArgs, mode: str) -> CallPlan:
    from tether.tools.skill_files import create

    change = await create(ctx, args.name, args.description, args.body, args.files, args.location)
    return change.plan(f"Create skill {args.name}")


@skill_create.described_by
def _describe_create(ctx: Capabilities, args: SkillCreateArgs) -> CallPlan:
    return CallPlan(title=f"Create skill {args.name}", kind="edit", target=args.name)


class SkillEditArgs(ToolArgs):
    name: str
    text: str
    path: str = "SKILL.md"
    old: str | None = None
    append: bool = False


@tool(kind="edit")
async def skill_edit(ctx: Capabilities, args: SkillEditArgs) -> ToolOutput:
    """Change one file of a skill: replace `old` (found once) by `text`, append `text`, or
    rewrite the file as `text`.

    Args:
        name: The skill.
        text: The new text.
        path: File in the skill.
        old: Exact text to replace.
        append: Add `text` at the end.
    """
    from tether.tools.skill_files import edit

    change = await edit(ctx, args.name, args.path, args.text, args.old, args.append)
    return await _written(ctx, change, change.files[0][2])


@skill_edit.planned_by
async def _plan_edit(ctx: Capabilities, args: SkillEditArgs, mode: str) -> CallPlan:
    from tether.tools.skill_files import edit

    change = await edit(ctx, args.name, args.path, args.text, args.old, args.append)
    return change.plan(f"Edit skill {args.name}: {args.path}")


@skill_edit.described_by
def _describe_edit(ctx: Capabilities, args: SkillEditArgs) -> CallPlan:
    return CallPlan(title=f"Edit skill {args.name}: {args.path}", kind="edit", target=args.name)


async def _written(ctx: Capabilities, change: Change, before: str | None) -> ToolOutput:
    from tether.tools.skill_files import notes

    for path, text, _ in change.files:
        await ctx.fs.write_text(path, text)
        ctx.reads.forget(path)
    lines = [change.summary, *notes(change, ctx.skills, before)]
    diffs = [DiffOut(str(p), new, old) for p, new, old in change.files]
    return ToolOutput("\n".join(lines), [*diffs, TextOut(lines[-1])])


def skill_tools() -> list[ToolDef]:
    """The skill tools, in the order the model is shown them."""
    return [skill_read, skill_list, skill_search, skill_create, skill_edit]
