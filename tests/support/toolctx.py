"""Running one tool the way the pipeline does (plan, then invoke) on a real directory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from tether.engine.local.fallbacks import NoAsk, NoWeb, PolicyApproval
from tether.engine.local.file_system import LocalFileSystem
from tether.engine.local.processes import LocalTerminal
from tether.engine.local.spill import LocalSpill
from tether.engine.registry import CallPlan, ToolDef, ToolOutput
from tether.engine.sandbox.detect import detect
from tether.engine.sandbox.session_sandbox import Sandbox
from tether.engine.seam import Capabilities, FileSystem


def make_ctx(root: Path, spill: Path, fs: FileSystem | None = None, **kw: Any) -> Capabilities:
    """`sandbox`: this machine's unless given (None: no sandbox)."""
    kw.setdefault("sandbox", Sandbox(detect(), base=spill.parent))
    kw.setdefault("approval", PolicyApproval(True))
    return Capabilities(
        session_id="s",
        cwd=root,
        roots=[root],
        fs=fs or LocalFileSystem(),
        terminal=LocalTerminal(),
        ask=NoAsk(),
        spill=LocalSpill(spill),
        web=NoWeb(),
        **kw,
    )


async def plan(ctx: Capabilities, t: ToolDef, mode: str = "ask", **args: Any) -> CallPlan:
    return await t.plan(ctx, t.decode(msgspec.json.encode(args)), mode)


async def run(ctx: Capabilities, t: ToolDef, **args: Any) -> ToolOutput:
    """Plan, then invoke: what the pipeline does for an allowed call."""
    decoded = t.decode(msgspec.json.encode(args))
    await t.plan(ctx, decoded, "ask")
    return await t.invoke(ctx, decoded)


async def text(ctx: Capabilities, t: ToolDef, **args: Any) -> str:
    return (await run(ctx, t, **args)).text
