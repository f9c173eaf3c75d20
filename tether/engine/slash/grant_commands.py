"""/grants: the "always" answers that hold in a session (its own, its project's, the
directories opened to it, and the skills it may change), numbered, and `/grants revoke N|all`
to take them back."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tether.engine.grants import Grant
from tether.engine.sessions.state import AccessGrant
from tether.engine.slash.slash_command import CommandContext


@dataclass(frozen=True)
class _Listed:
    where: str  # "session", "project", "directory", "skill"
    grant: Grant | AccessGrant | str  # a skill: its directory

    def describe(self) -> str:
        g = self.grant
        if isinstance(g, str):
            return f"changes to the skill {Path(g).name} (`{g}`, this session)"
        if isinstance(g, AccessGrant):
            return f"{g.access} access to `{g.path}` (this session)"
        return f"{g.describe()} (this {self.where})"


async def _listed(ctx: CommandContext) -> list[_Listed]:
    s = ctx.session
    project = await ctx.manager.deps.store.grants.listed(s.cwd)
    return [
        *(_Listed("session", g) for g in s.state.grants.items),
        *(_Listed("project", g) for g in project),
        *(_Listed("directory", g) for g in s.state.dir_grants),
        *(_Listed("skill", d) for d in s.state.skill_writes),
    ]


async def grants(ctx: CommandContext, arg: str) -> str:
    listed = await _listed(ctx)
    verb, _, which = arg.partition(" ")
    if verb == "revoke":
        return await _revoke(ctx, listed, which.strip())
    if arg:
        return "Use `/grants` to list them, `/grants revoke N` or `/grants revoke all`."
    if not listed:
        return "No grants: every call that needs approval asks."
    lines = [f"{i}. {g.describe()}" for i, g in enumerate(listed, 1)]
    return "\n".join(["Grants:", *lines, "", "Take one back with `/grants revoke N` (or `all`)."])


async def _revoke(ctx: CommandContext, listed: list[_Listed], which: str) -> str:
    if which == "all":
        chosen = listed
    elif which.isdigit() and 1 <= int(which) <= len(listed):
        chosen = [listed[int(which) - 1]]
    else:
        return f"Say which: `/grants revoke N` (1 to {len(listed)}) or `/grants revoke all`."
    if not chosen:
        return "No grants to revoke."
    s = ctx.session
    state = s.state
    state.grants.items = [g for g in state.grants.items if _Listed("session", g) not in chosen]
    state.dir_grants = [g for g in state.dir_grants if _Listed("directory", g) not in chosen]
    state.skill_writes[:] = [d for d in state.skill_writes if _Listed("skill", d) not in chosen]
    project = [c.grant for c in chosen if c.where == "project" and isinstance(c.grant, Grant)]
    await ctx.manager.deps.store.grants.revoke(s.cwd, project)
    await ctx.manager.persist(s)
    gone = "\n".join(f"- {c.describe()}" for c in chosen)
    return f"Revoked (those calls ask again):\n{gone}"
