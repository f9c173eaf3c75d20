"""Asking the user to raise a PTY limit the session reached (how many PTYs may be open, how much
one may print), on the call's own card, like the round limit: allow (as much again), always
allow (no limit), reject (the call fails as before)."""

from __future__ import annotations

from typing import Any, Literal

from tether.engine.events import TextOut
from tether.engine.seam import Capabilities, ConfirmRequest

Raise = Literal["once", "always", "no"]


async def ask_to_raise(
    ctx: Capabilities, title: str, note: str, raw: dict[str, Any], label: str
) -> Raise:
    """The user's answer; "no" when nobody can be asked or the request was cancelled."""
    request = ConfirmRequest(
        call_id=ctx.call_id or "limit",
        tool="continue",
        title=title,
        kind="other",
        raw_input=raw,
        scope="",
        content=[TextOut(note)],
        grant_label=label,
    )
    [decision] = await ctx.approval.confirm([request], None)
    if decision.verdict != "allow":
        return "no"
    return "always" if decision.remember else "once"
