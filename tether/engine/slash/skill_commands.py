"""Agent Skills as slash commands: `/skills` lists what the session's roots hold (the shadowed
copies and the broken ones too), `/skills search PATTERN` greps them, and each skill is
`/name args`, a turn in which the model is given the skill's instructions and the user's
arguments. Found afresh whenever a front asks, like every use of skills."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import msgspec

from tether.engine.skills.skill_catalog import activation, resources
from tether.engine.skills.skill_discovery import SKILL_FILE, Discovery, Skill, discover
from tether.engine.skills.skill_roots import SkillRoot
from tether.engine.slash.slash_command import Command, CommandContext, prompt_turn
from tether.errors import TetherError

HELP_MAX = 160  # characters of a description shown as a command's help


def roots(ctx: CommandContext) -> list[SkillRoot]:
    return ctx.manager.deps.skills.roots(Path(ctx.session.cwd))


def skill_commands(ctx: CommandContext, taken: frozenset[str] = frozenset()) -> list[Command]:
    """The session's source of commands: `/skills`, then one per skill (`taken`: the names
    of tether's own commands, which win over a skill's)."""
    found = discover(roots(ctx))
    return [_skills_command(taken), *(_command(s) for s in found.skills)]


def _command(skill: Skill) -> Command:
    async def run(ctx: CommandContext, arg: str) -> str:
        files = await anyio.to_thread.run_sync(resources, skill.directory)
        return await prompt_turn(ctx, invocation(skill, files, arg))

    hint = skill.argument_hint or "what the skill should work on (optional)"
    return Command(skill.name, _clip(skill.description), run, hint=hint, turn=True)


def invocation(skill: Skill, files: list[Path], arg: str) -> str:
    """What the model is sent for `/name args`: the skill as `skill_read` gives it, and what
    the user asked."""
    asked = arg or "(no arguments: apply the skill to the current work)"
    intro = (
        f"The user invoked the skill `{skill.name}` (`/{skill.name}`). Follow its instructions "
        "for the request below."
    )
    return "\n\n".join([intro, activation(skill, files), f"The user's request: {asked}"])


def _skills_command(taken: frozenset[str]) -> Command:
    async def skills(ctx: CommandContext, arg: str) -> str:
        if not ctx.manager.deps.skills.enabled:
            return "Skills are off (`[skills] enabled = false` in the config file)."
        word, _, rest = arg.partition(" ")
        if word == "search":
            return await search(ctx, rest.strip())
        return report(discover(roots(ctx)), roots(ctx), taken)

    return Command(
        "skills",
        "List the Agent Skills this session can use, and any problems; `search PATTERN` greps "
        "their files",
        skills,
        hint="search PATTERN (optional)",
    )


async def search(ctx: CommandContext, pattern: str) -> str:
    """`/skills search PATTERN`: the `skill_search` tool's handler, run on a tool context the
    command binds itself (the session's, with its skills roots)."""
    if not pattern:
        return "Usage: `/skills search PATTERN` (a Python regular expression)."
    s = ctx.session
    tool = ctx.manager.runtime(s.id).registry().get("skill_search")
    if tool is None:
        return "The skill tools are off in this session."
    caps = ctx.manager.front.capabilities(s, ctx.manager.model(s))
    caps.skills = tuple(roots(ctx))
    try:
        out = await tool.invoke(caps, tool.decode(msgspec.json.encode({"pattern": pattern})))
    except TetherError as exc:
        return f"error [{exc.code}]: {exc.message}"
    return f"```\n{out.text}\n```"


def report(found: Discovery, where: list[SkillRoot], taken: frozenset[str] = frozenset()) -> str:
    """`/skills`: the skills, then what was left out and why, then where tether looked."""
    home = str(Path.home())
    lines = ["Skills:" if found.skills else "No skills found."]
    lines += [_listed(s, home, taken) for s in found.skills]
    if found.shadowed:
        lines += ["", "Shadowed (a root searched earlier has a skill of the same name):"]
        lines += [
            f"- {_short(lost.file, home)}: shadowed by {_short(won.file, home)}"
            for lost, won in found.shadowed
        ]
    if found.problems:
        lines += ["", "Problems (these skills are left out):"]
        lines += [f"- {_short(p.path, home)}: {p.message}" for p in found.problems]
    lines += ["", f"Searched, in this order (each skill is a directory with a {SKILL_FILE}):"]
    lines += [
        f"- {_short(r.path, home)} ({r.source}{'' if r.path.is_dir() else ', absent'})"
        for r in where
    ]
    return "\n".join(lines)


def _listed(skill: Skill, home: str, taken: frozenset[str]) -> str:
    line = f"- **/{skill.name}**: {_clip(skill.description)} ({_short(skill.directory, home)})"
    if skill.name in taken:  # the fixed command wins the name; the model can still use it
        line += f"; no command of its own (tether's `/{skill.name}` has the name)"
    return line


def _clip(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= HELP_MAX else flat[: HELP_MAX - 1] + "…"


def _short(path: Path, home: str) -> str:
    text = str(path)
    return "~" + text[len(home) :] if text.startswith(home + os.sep) else text
