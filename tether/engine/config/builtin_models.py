"""The models the provider kinds offer without any configuration (`kinds.py` says which kind
offers which list).

Ids are the vendors' own; windows, output limits, effort levels and list prices (USD per million
tokens) are as the vendors' model and pricing pages state them, checked on 2026-11-30:

- OpenAI: developers.openai.com/api/docs/models and /pricing (standard tier, short context).
- Anthropic: platform.claude.com/docs models overview and each model's page. Claude 4.6 and later
  think adaptively, with `output_config.effort`; Opus 5.5 cannot turn thinking off.
- DeepSeek: api-docs.deepseek.com/quick_start/pricing and the thinking-mode guide. deepseek-chat and
  deepseek-reasoner were retired on 2026-07-24, and the pricing page now names `deepseek-flash`
  (image input; `deepseek-v4-flash` still answers but is retired); thinking is on by default,
  effort low, high or max.

They drift: a `[models."provider:model"]` entry in the config file overrides any field, and the
models a provider's `/models` endpoint lists are offered too (`tether.engine.providers.discovery`).
"""

from __future__ import annotations

from tether.schemas.config import ModelConfig, ReasoningLevel

# OpenAI's GPT-5.x models take effort "none" through "xhigh" on both APIs.
_OPENAI_LEVELS: list[ReasoningLevel] = ["none", "low", "medium", "high", "xhigh"]
# Claude's effort levels (the API's default differs per model).
_CLAUDE_LEVELS: list[ReasoningLevel] = ["low", "medium", "high", "xhigh", "max"]
# DeepSeek's thinking guide: effort low, high or max; "none" turns thinking off.
_DEEPSEEK_LEVELS: list[ReasoningLevel] = ["none", "low", "high", "max"]


def _gpt(window: int, input_price: float, cached: float, output: float) -> ModelConfig:
    return ModelConfig(
        context_window=window,
        max_output_tokens=128_000,
        images=True,
        reasoning=list(_OPENAI_LEVELS),
        default_reasoning="medium",
        input_price=input_price,
        cached_input_price=cached,
        output_price=output,
        reasons=True,
    )


def _claude(
    input_price: float, cached: float, output: float, default: ReasoningLevel
) -> ModelConfig:
    return ModelConfig(
        context_window=1_000_000,
        max_output_tokens=128_000,
        images=True,
        reasoning=list(_CLAUDE_LEVELS),
        default_reasoning=default,
        input_price=input_price,
        cached_input_price=cached,
        output_price=output,
        thinking="effort",
    )


def _deepseek(input_price: float, cached: float, output: float, images: bool) -> ModelConfig:
    return ModelConfig(
        context_window=1_000_000,
        max_output_tokens=384_000,
        images=images,
        reasoning=list(_DEEPSEEK_LEVELS),
        default_reasoning="high",
        input_price=input_price,
        cached_input_price=cached,
        output_price=output,
    )


# The first model of a kind is a provider's default when nothing else is chosen.
OPENAI: dict[str, ModelConfig] = {
    "gpt-5.5": _gpt(1_050_000, 5.0, 0.5, 30.0),
    "gpt-5.4": _gpt(1_050_000, 2.5, 0.25, 15.0),
    "gpt-5.4-mini": _gpt(400_000, 0.75, 0.075, 4.5),
}
ANTHROPIC: dict[str, ModelConfig] = {
    "claude-sonnet-5-5": _claude(2.0, 0.2, 10.0, "high"),
    "claude-opus-5-5": _claude(4.0, 0.2, 20.0, "medium"),
    # Haiku 5.5's prices are for prompts up to 100k tokens; longer prompts cost five times more.
    "claude-haiku-5-5": _claude(0.1, 0.01, 0.5, "medium"),
}
DEEPSEEK: dict[str, ModelConfig] = {
    "deepseek-flash": _deepseek(0.14, 0.0028, 0.28, images=True),
    "deepseek-v4-pro": _deepseek(0.435, 0.003625, 0.87, images=False),
}
