"""ask_user: a question to the user mid-turn, answered with a choice, a small form, or both."""

from __future__ import annotations

from typing import Literal

import msgspec

from tether.engine.registry import CallPlan, ToolArgs, ToolOutput, tool
from tether.engine.seam import AskField, Capabilities
from tether.errors import ToolError

ASK_TIMEOUT = 1800.0  # seconds: a person answers, not a program
MAX_OPTIONS = 10
MAX_FIELDS = 8


class Field(msgspec.Struct, forbid_unknown_fields=True):
    name: str
    label: str = ""
    type: Literal["text", "number", "integer", "boolean"] = "text"
    required: bool = True


class AskUserArgs(ToolArgs):
    question: str
    options: list[str] | None = None
    fields: list[Field] | None = None


@tool(kind="other", read_only=True, timeout=ASK_TIMEOUT)
async def ask_user(ctx: Capabilities, args: AskUserArgs) -> ToolOutput:
    """Ask the user a question and wait for the answer. Use it when you cannot go on without
    the user's decision; otherwise decide yourself and say what you chose.

    Args:
        question: The question, as the user will read it.
        options: Choices the user picks one of (at most 10).
        fields: Values to fill in, each with name, label, type (text, number, integer,
            boolean) and required (default true); at most 8.
    """
    question = args.question
    options, fields = _check(question, args.options or [], args.fields or [])
    specs = [AskField(f.name, f.label or f.name, f.type, f.required) for f in fields]
    answer = await ctx.ask.ask(question.strip(), options, specs, ctx.call_id)
    if not answer.accepted:
        text = (
            "The user dismissed the question without answering."
            if answer.dismissed
            else "The user declined to answer."
        )
        return ToolOutput(text)
    lines = [f"- {k}: {v}" for k, v in answer.values.items()]
    return ToolOutput("The user answered:\n" + "\n".join(lines))


def _check(question: str, options: list[str], fields: list[Field]) -> tuple[list[str], list[Field]]:
    if not question.strip():
        raise ToolError("INVALID_ARGS", "question must not be empty")
    options = [o.strip() for o in options if o.strip()]
    if len(options) > MAX_OPTIONS or len(fields) > MAX_FIELDS:
        raise ToolError("INVALID_ARGS", f"at most {MAX_OPTIONS} options and {MAX_FIELDS} fields")
    names = [f.name for f in fields]
    if len(set(names)) != len(names) or "choice" in names:
        raise ToolError("INVALID_ARGS", "field names must be unique and not 'choice'")
    return options, fields


@ask_user.described_by
def _describe(ctx: Capabilities, args: AskUserArgs) -> CallPlan:
    question = " ".join(args.question.split())
    return CallPlan(title=f"Ask: {question[:80]}", kind="other")
