"""An MCP tool result as the model and the user's card see it: one text.

Text blocks are kept as they are; a resource's text is kept under its URI; what the model
cannot take from a tool (images, audio, binary resources) is named with its type and size, so
the model knows it was returned. Structured content is added as JSON when no text block
carries it. `isError` makes the call a failure told in the server's own words.
"""

from __future__ import annotations

import base64
import json

import mcp.types as mt

from tether.engine.events import TextOut
from tether.engine.registry import ToolOutput


def to_output(result: mt.CallToolResult) -> ToolOutput:
    parts = [_block(b) for b in result.content]
    has_text = any(isinstance(b, mt.TextContent) and b.text.strip() for b in result.content)
    if result.structured_content is not None and not has_text:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False, indent=2))
    text = "\n".join(p for p in parts if p)
    if not text:
        text = "(the tool failed without a message)" if result.is_error else "(no output)"
    return ToolOutput(
        text,
        [TextOut(text)],
        raw_output=result.structured_content,
        is_error=result.is_error,
    )


def _block(block: mt.ContentBlock) -> str:
    if isinstance(block, mt.TextContent):
        return block.text
    if isinstance(block, mt.ImageContent | mt.AudioContent):
        what = "an image" if isinstance(block, mt.ImageContent) else "audio"
        return (
            f"[the tool returned {what} ({block.mime_type}, {_size(block.data)}), "
            "which tether cannot show to the model]"
        )
    if isinstance(block, mt.ResourceLink):
        about = f": {block.description}" if block.description else ""
        return f"[resource {block.name}]({block.uri}){about}"
    resource = block.resource
    if isinstance(resource, mt.TextResourceContents):
        return f"Resource {resource.uri}:\n{resource.text}"
    kind = resource.mime_type or "binary data"
    return f"[the tool returned the resource {resource.uri} ({kind}, {_size(resource.blob)})]"


def _size(data: str) -> str:
    """The decoded size of base64 `data`, for a person."""
    try:
        n = len(base64.b64decode(data, validate=False))
    except ValueError:
        n = len(data) * 3 // 4
    return f"{n} bytes" if n < 1024 else f"{n / 1024:.1f} KiB"
