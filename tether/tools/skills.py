"""The model's side of Agent Skills (engine/skills/): `skill_read` activates a skill (its
instructions, and the absolute paths of its files, which `read_file` and `run_argv` reach
because the skills' roots are readable), `skill_list` shows every skill found now, with the
shadowed copies and the broken ones. Both look afresh: a skill made during the session is
there at once. A skill is created or changed with the file tools, every time with the user's
approval (the pipeline asks for any change in a skills root)."""

from __future__ import annotations

from pathlib import Path

import anyio

from tether.engine.events import TextOut
from tether.engine.registry import CallPlan, ToolArgs, ToolOutput, tool
from tether.engine.seam import Capabilities
from tether.engine.skills.skill_catalog import activation, resources
from tether.engine.skills.skill_discovery import Discovery, Skill, discover
from tether.errors import ToolError


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
