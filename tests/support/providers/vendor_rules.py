"""What the real APIs refuse beyond their schemas, as their documentation states it.

The mock server answers each with a 400 carrying the vendor's own words, so a test sees what a
user would see from the real service:

* OpenAI chat completions: reasoning models (o-series, gpt-5 and later) refuse `max_tokens`.
* OpenAI Responses: a model that does not reason refuses reasoning input items and the
  `reasoning.encrypted_content` include.
* Anthropic: Claude 5 models refuse a thinking budget (`thinking.type: enabled`); Claude 3
  models refuse adaptive thinking; a model served with thinking always on (an id ending in
  `-thinking` here) refuses `thinking.type: disabled`.
* DeepSeek, thinking mode (on unless `thinking.type` is `disabled`): every earlier assistant
  round must carry its reasoning back (`reasoning_content` on chat completions, a `thinking`
  block on its anthropic endpoint, which also has no `redacted_thinking`).
* Images: Anthropic refuses a base64 image over 5 MB and one whose bytes are another type than
  its `media_type` says; OpenAI refuses a data URL of a type other than png, jpeg, gif or webp.
* Tool schemas: see `tool_schema_rules.py` (one refused tool fails the whole request).
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any

from . import tool_schema_rules
from .vendor_schema import API, Dialect

REASONING_MODEL = re.compile(r"^(?:o[1-9]|gpt-[5-9])")
EFFORT_ONLY_CLAUDE = re.compile(r"^claude-(?:opus|sonnet|haiku|fable|mythos)-[5-9]")
BUDGET_ONLY_CLAUDE = re.compile(r"^claude-3")  # before adaptive thinking
ALWAYS_THINKING_CLAUDE = re.compile(r"-thinking$")  # a model served with thinking always on


def refusal(api: API, body: dict[str, Any], dialect: Dialect) -> str | None:
    """The API's error message for a schema-valid body it still refuses, or None."""
    problem = tool_schema_rules.refusal(api, body)
    if problem is not None:
        return problem
    problem = _anthropic_images(body) if api == "anthropic" else _openai_images(body)
    if problem is not None:
        return problem
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
    kind, model = thinking.get("type"), body["model"]
    if kind == "enabled" and EFFORT_ONLY_CLAUDE.match(model):
        return (
            "thinking.type.enabled is not supported for this model. Use thinking.type.adaptive "
            "and output_config.effort to control thinking behavior."
        )
    # The two refusals below are the ones the specification tether was built from describes;
    # their wording is ours (no published message to quote).
    if kind == "adaptive" and BUDGET_ONLY_CLAUDE.match(model):
        return "thinking.type.adaptive is not supported for this model. Use thinking.type.enabled."
    if kind == "disabled" and ALWAYS_THINKING_CLAUDE.search(model):
        return "thinking.type.disabled is not supported for this model: it always thinks."
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


def _nodes(schema: Any) -> list[dict[str, Any]]:
    """Every subschema, the schema itself first."""
    out: list[dict[str, Any]] = []
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            out.append(node)
            stack.extend(v for v in node.values() if isinstance(v, dict | list))
        elif isinstance(node, list):
            stack.extend(node)
    return out


ANTHROPIC_IMAGE_MAX = 5 * 1024 * 1024  # bytes of base64 per image
_MAGIC = {
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/gif": (b"GIF87a", b"GIF89a"),
}


def _real_type(data: bytes) -> str | None:
    for mime, magics in _MAGIC.items():
        if data.startswith(magics):
            return mime
    return "image/webp" if data[:4] == b"RIFF" and data[8:12] == b"WEBP" else None


def _anthropic_images(body: dict[str, Any]) -> str | None:
    for node in _nodes(body):
        source = node.get("source") if node.get("type") == "image" else None
        if not isinstance(source, dict) or source.get("type") != "base64":
            continue
        data, said = str(source.get("data", "")), source.get("media_type")
        where = "messages.0.content.0.image.source.base64"
        if len(data) > ANTHROPIC_IMAGE_MAX:
            return f"{where}: image exceeds 5 MB maximum: {len(data)} bytes > 5242880 bytes"
        try:
            real = _real_type(base64.b64decode(data, validate=True))
        except binascii.Error:
            real = None
        if real is None:
            return f"{where}: Could not process image"
        if real != said:
            return (
                f"{where}: The image was specified using the {said} media type, but the image "
                f"appears to be a {real} image"
            )
    return None


def _openai_images(body: dict[str, Any]) -> str | None:
    for node in _nodes(body):
        url = node.get("url") or node.get("image_url")
        if isinstance(url, str) and url.startswith("data:"):
            mime = url[5:].split(";", 1)[0]
            if mime not in ("image/png", "image/jpeg", "image/gif", "image/webp"):
                return (
                    "You uploaded an unsupported image. Please make sure your image has of one "
                    "the following formats: ['png', 'jpeg', 'gif', 'webp']."
                )
    return None
