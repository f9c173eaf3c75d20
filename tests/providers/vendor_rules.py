"""What the real APIs refuse beyond their schemas, as their documentation states it.

The mock server answers each with a 400 carrying the vendor's own words, so a test sees what a
user would see from the real service:

* OpenAI chat completions: reasoning models (o-series, gpt-5 and later) refuse `max_tokens`.
* OpenAI Responses: a model that does not reason refuses reasoning input items and the
  `reasoning.encrypted_content` include.
* Anthropic: Claude 5 models refuse a thinking budget (`thinking.type: enabled`).
* DeepSeek, thinking mode (on unless `thinking.type` is `disabled`): every earlier assistant
  round must carry its reasoning back (`reasoning_content` on chat completions, a `thinking`
  block on its anthropic endpoint, which also has no `redacted_thinking`).
"""

from __future__ import annotations

import re
from typing import Any

from .vendor_schema import API, Dialect

REASONING_MODEL = re.compile(r"^(?:o[1-9]|gpt-[5-9])")
EFFORT_ONLY_CLAUDE = re.compile(r"^claude-(?:opus|sonnet|haiku|fable|mythos)-[5-9]")


def refusal(api: API, body: dict[str, Any], dialect: Dialect) -> str | None:
    """The API's error message for a schema-valid body it still refuses, or None."""
    if dialect == "deepseek":
        return _deepseek(api, body)
    if api == "chat":
        return _openai_chat(body)
    if api == "responses":
        return _openai_responses(body)
    if api == "anthropic":
        return _anthropic(body)
    return None


def _openai_chat(body: dict[str, Any]) -> str | None:
    if "max_tokens" in body and REASONING_MODEL.match(body["model"]):
        return (
            "Unsupported parameter: 'max_tokens' is not supported with this model. "
            "Use 'max_completion_tokens' instead."
        )
    return None


def _openai_responses(body: dict[str, Any]) -> str | None:
    if REASONING_MODEL.match(body["model"]):
        return None
    if any(isinstance(i, dict) and i.get("type") == "reasoning" for i in body["input"]):
        return (
            "Reasoning input items can only be provided to a reasoning or computer use model. "
            "Remove reasoning items from your input and try again."
        )
    if "reasoning.encrypted_content" in body.get("include", []):
        return "Encrypted content is not supported with this model."
    return None


def _anthropic(body: dict[str, Any]) -> str | None:
    thinking = body.get("thinking") or {}
    if thinking.get("type") == "enabled" and EFFORT_ONLY_CLAUDE.match(body["model"]):
        return (
            "thinking.type.enabled is not supported for this model. Use thinking.type.adaptive "
            "and output_config.effort to control thinking behavior."
        )
    return None


def _deepseek(api: API, body: dict[str, Any]) -> str | None:
    if (body.get("thinking") or {}).get("type") == "disabled":
        return None
    if api == "chat":
        for m in body["messages"]:
            if m["role"] == "assistant" and m.get("tool_calls") and "reasoning_content" not in m:
                return (
                    "The `reasoning_content` in the thinking mode must be passed back to the API."
                )
    if api == "anthropic":
        for m in body["messages"]:
            if m["role"] != "assistant":
                continue
            kinds = [b.get("type") for b in m["content"]]
            if "redacted_thinking" in kinds:
                return "content[].redacted_thinking is not supported."
            if "thinking" not in kinds:
                return (
                    "The `content[].thinking` in the thinking mode must be passed back to the API."
                )
    return None
