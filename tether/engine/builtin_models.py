"""The models each provider kind offers without any configuration.

Ids are the vendors' own; windows, limits and list prices (USD per million tokens) are from
their public model pages as of late 2025. A `[models."provider:model"]` entry in the config file
overrides any field, so a price change needs no release.

OpenAI's reasoning models (gpt-5 and friends) are listed for the Responses API only: on chat
completions they refuse the `max_tokens` parameter. deepseek-reasoner always thinks, so it has
no levels to choose from; its reasoning streams as thoughts either way.
"""

from __future__ import annotations

from tether.schemas.config import ModelConfig, ReasoningLevel

_GPT_4_1 = ModelConfig(
    context_window=1_047_576,
    max_output_tokens=32_768,
    images=True,
    input_price=2.0,
    cached_input_price=0.5,
    output_price=8.0,
)
_GPT_4_1_MINI = ModelConfig(
    context_window=1_047_576,
    max_output_tokens=32_768,
    images=True,
    input_price=0.4,
    cached_input_price=0.1,
    output_price=1.6,
)
_GPT_5_LEVELS: list[ReasoningLevel] = ["minimal", "low", "medium", "high"]


def _gpt5(input_price: float, cached: float, output: float) -> ModelConfig:
    return ModelConfig(
        context_window=400_000,
        max_output_tokens=128_000,
        images=True,
        reasoning=list(_GPT_5_LEVELS),
        default_reasoning="medium",
        input_price=input_price,
        cached_input_price=cached,
        output_price=output,
    )


def _claude(input_price: float, output: float, max_output: int) -> ModelConfig:
    # Extended thinking is opt-in: "none" (the default) sends no thinking block.
    return ModelConfig(
        context_window=200_000,
        max_output_tokens=max_output,
        images=True,
        reasoning=["none", "low", "medium", "high"],
        default_reasoning="none",
        input_price=input_price,
        cached_input_price=input_price / 10,  # a cache read costs a tenth of fresh input
        output_price=output,
    )


def _deepseek(max_output: int) -> ModelConfig:
    return ModelConfig(
        context_window=128_000,
        max_output_tokens=max_output,
        input_price=0.28,
        cached_input_price=0.028,
        output_price=0.42,
    )


_OPENAI_CHAT = {"gpt-4.1": _GPT_4_1, "gpt-4.1-mini": _GPT_4_1_MINI}
_OPENAI_RESPONSES = {
    **_OPENAI_CHAT,
    "gpt-5": _gpt5(1.25, 0.125, 10.0),
    "gpt-5-mini": _gpt5(0.25, 0.025, 2.0),
}
_ANTHROPIC = {
    "claude-sonnet-4-5": _claude(3.0, 15.0, 64_000),
    "claude-haiku-4-5": _claude(1.0, 5.0, 64_000),
    "claude-opus-4-1": _claude(15.0, 75.0, 32_000),
}
_DEEPSEEK = {"deepseek-chat": _deepseek(8_192), "deepseek-reasoner": _deepseek(65_536)}

BUILTIN_MODELS: dict[str, dict[str, ModelConfig]] = {
    "openai": _OPENAI_CHAT,
    "openai-responses": _OPENAI_RESPONSES,
    "anthropic": _ANTHROPIC,
    "deepseek": _DEEPSEEK,
    "deepseek-responses": _DEEPSEEK,
    "deepseek-anthropic": _DEEPSEEK,
}
