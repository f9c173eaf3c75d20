"""What a model takes from the layers above it: its wire API (a model may use another kind of
its provider's), the provider's hosted tools, and its thinking strength, layered model >
provider > `[agent]` and clamped to the levels the model has."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from tether.engine.config.model_kinds import KINDS
from tether.schemas.config import REASONING_LEVELS, ModelConfig

_RANK = {level: i for i, level in enumerate(REASONING_LEVELS)}


def clamp_level(level: str, levels: Sequence[str]) -> str | None:
    """`level` as the model has it: itself, else the strongest level below it, else the
    weakest the model has ("max" becomes "xhigh" on a model that stops there). None for a
    model without levels."""
    if not levels or level in levels:
        return level if levels else None
    below = [lvl for lvl in levels if _RANK.get(lvl, 0) < _RANK.get(level, 0)]
    return below[-1] if below else levels[0]


def layered_reasoning(
    spec: ModelConfig, own: str | None, provider: str | None, agent: str | None
) -> str | None:
    """The model's default level: its own entry's (`own`, as the file sets it), else the
    provider's, else `[agent]`'s, each clamped; else the built-in default in `spec`."""
    chosen = own or provider or agent
    if chosen is None:
        return spec.default_reasoning
    return clamp_level(chosen, spec.reasoning or [])


def hosted_issues(kind: str, tools: Sequence[str]) -> Iterator[str]:
    """Why `kind` cannot offer `tools` (nothing when it can)."""
    if tools and not KINDS[kind].hosted_tools:
        hosts = ", ".join(k.name for k in KINDS.values() if k.hosted_tools)
        yield f"kind {kind!r} runs no hosted tools (these do: {hosts})"
