"""wait: the model pauses for a bounded time (a build finishing, a server coming up) before it
looks again. The wait is shown on its card with its reason and a countdown; the user ends it
early by cancelling the turn, and the result then says how long it ran."""

from __future__ import annotations

import math
from typing import Annotated, Any

import anyio
import msgspec

from tether.engine.events import TextOut
from tether.engine.registry import CallPlan, ToolArgs, ToolOutput, tool
from tether.engine.seam import Capabilities
from tether.errors import ToolError

MAX_WAIT = 300.0  # seconds: longer, and the model should look at what it waits for instead
TICK = 1.0  # the countdown's step


class WaitArgs(ToolArgs):
    # Any JSON value is taken, so a wrong one gets an explanation instead of a type error;
    # the model is told it is a number.
    seconds: Annotated[Any, msgspec.Meta(extra_json_schema={"type": "number"})]
    reason: str | None = None


def _cancelled(ran: float) -> str:
    return f"the wait was cancelled by the user after {ran:.1f} s"


@tool(kind="other", read_only=True, timeout=MAX_WAIT + 30, aborted=_cancelled)
async def wait(ctx: Capabilities, args: WaitArgs) -> ToolOutput:
    """Pause before looking again, e.g. while a build runs or a server comes up; the user
    sees the wait and its reason and can end it. At most 300 s; prefer read_pty with `until`
    or a command that waits for the condition itself when there is one.

    Args:
        seconds: How long to wait, in seconds, e.g. 5 (at most 300).
        reason: What you are waiting for, as the user will read it.
    """
    seconds = wait_seconds(args.seconds)
    end = anyio.current_time() + seconds
    while (left := end - anyio.current_time()) > 0:
        if ctx.report is not None:
            await ctx.report([TextOut(f"{math.ceil(left - 0.05):d} s left of {seconds:g} s")])
        await anyio.sleep(min(TICK, left))
    text = f"waited {seconds:g} s"
    return ToolOutput(text, [TextOut(text)])


def wait_seconds(value: object) -> float:
    """`seconds` as a number: a number or a numeric string ("5"); anything else, and a value
    out of range, is refused with what was wrong."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ToolError("INVALID_ARGS", f"seconds must be a number such as 5; got {_what(value)}")
    try:
        number = float(value.strip() if isinstance(value, str) else value)
    except ValueError:
        number = math.nan
    if not math.isfinite(number):  # "soon", "", "nan", "inf"
        raise ToolError(
            "INVALID_ARGS", f"seconds must be a number such as 5; got the text {value!r}"
        )
    if number <= 0:
        raise ToolError("INVALID_ARGS", f"seconds must be more than 0; got {value!r}")
    if number > MAX_WAIT:
        raise ToolError(
            "INVALID_ARGS",
            f"seconds may be at most {MAX_WAIT:g}; wait again afterwards if you must, or "
            "look at what you are waiting for",
        )
    return number


def _what(value: object) -> str:
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if value is None:
        return "null"
    if isinstance(value, list):
        return "a list"
    return "an object" if isinstance(value, dict) else type(value).__name__


@wait.planned_by
async def _plan(ctx: Capabilities, args: WaitArgs, mode: str) -> CallPlan:
    wait_seconds(args.seconds)  # refused before the card is shown
    return _describe(ctx, args)


@wait.described_by
def _describe(ctx: Capabilities, args: WaitArgs) -> CallPlan:
    try:
        title = f"Wait {wait_seconds(args.seconds):g} s"
    except ToolError:
        title = "Wait"
    reason = " ".join((args.reason or "").split())
    return CallPlan(title=f"{title}: {reason[:80]}" if reason else title, kind="other")
