"""/status: where the session stands: its model and mode, how full its context is, what it
has cost, the grants, MCP servers and skills it has, and where it is kept."""

from __future__ import annotations

import anyio

from tether.engine.sessions.state import MODES, UsageTotals
from tether.engine.skills.skill_discovery import discover
from tether.engine.slash import skill_commands
from tether.engine.slash.slash_command import CommandContext


async def status(ctx: CommandContext, arg: str) -> str:
    s = ctx.session
    manager = ctx.manager
    runtime = manager.runtime(s.id)
    await manager.turns.snapshot(runtime)  # what the first prompt reads, read now if not yet
    used, window = await manager.turns.context_used(runtime)
    project = await manager.deps.store.grants.listed(s.cwd)
    box = manager.sandbox(s).info
    network = "on" if manager.settings.network(s) else "off"
    reasoning = f" (reasoning: {s.state.reasoning})" if s.state.reasoning else ""
    return "\n".join(
        [
            f"- Model: **{s.state.model}**{reasoning}",
            f"- Mode: **{s.state.mode}**: {MODES[s.state.mode][1]}",
            f"- Context: **{used:,}** of {window:,} tokens ({100 * used / max(window, 1):.0f}%)",
            f"- Cost so far: {_cost(s.state.cost)}",
            f"- Last turn: {usage_line(s.state.last_turn)}",
            f"- This session: {usage_line(s.state.usage)}",
            f"- Grants: {len(s.state.grants.items)} for this session, {len(project)} for this "
            f"project, {len(s.state.dir_grants)} directories (`/grants`)",
            f"- MCP servers: {_servers(ctx)}",
            f"- Skills: {await _skills(ctx)}",
            f"- Instruction files: {_instruction_files(s.state.instruction_files)}",
            f"- Sandbox: **{box.mechanism}**: {box.summary} ({box.why})",
            f"- Network for confined commands: **{network}** (the Command network option)",
            f"- Session: `{s.id}` in `{s.cwd}`, kept in `{manager.deps.store.path}`",
        ]
    )


def usage_line(u: UsageTotals) -> str:
    """`3 rounds, 1,234 tokens in (1,000 cached), 56 out, $0.0012` (billed sums)."""
    if u.rounds == 0:
        return "no requests yet"
    rounds = f"{u.rounds} round{'s' if u.rounds != 1 else ''}"
    cached = f" ({u.cached_tokens:,} cached)" if u.cached_tokens else ""
    about = "~" if u.estimated else ""
    tokens = f"{about}{u.input_tokens:,} tokens in{cached}, {about}{u.output_tokens:,} out"
    cost = f", ${u.cost:.4f}" if u.cost is not None else ""
    return f"{rounds}, {tokens}{cost}"


def _cost(cost: float) -> str:
    return f"${cost:.4f}" if cost else "nothing counted (no prices configured, or no requests)"


async def _skills(ctx: CommandContext) -> str:
    if not ctx.manager.deps.skills.enabled:
        return "off (`[skills] enabled = false`)"
    found = await anyio.to_thread.run_sync(discover, skill_commands.roots(ctx))
    trouble = len(found.problems) + len(found.shadowed)
    more = f", {trouble} left out" if trouble else ""
    return f"{len(found.skills)}{more} (`/skills` lists them)"


def _instruction_files(names: list[str]) -> str:
    """In the order they were read: the user's, the project's from its root down, the
    configured ones (a later file has the last word)."""
    if not names:
        return "none"
    return ", ".join(f"`{n}`" for n in names)


def _servers(ctx: CommandContext) -> str:
    host = ctx.manager.runtime(ctx.session.id).mcp
    servers = host.statuses() if host is not None else []
    if not servers:
        return "none"
    each = ", ".join(f"{s.name} ({s.state}, {len(s.tools)} tools)" for s in servers)
    return f"{each} (`/mcp` has more)"
