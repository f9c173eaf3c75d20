"""An MCP tool result as the model and the user's card see it: one text, and the pictures a
model that takes images is shown; an MCP prompt as the text a turn is run on.

Text blocks are kept as they are; a resource's text is kept under its URI; an image goes to a
model that takes images (checked as every image tether sends: type, size, real bytes) and is
named in the text either way, so the model knows it was returned; what the model cannot take
(audio, binary resources, an image for a model without images) is named with its type and
size. Structured content is added as JSON when no text block carries it. `isError` makes the
call a failure told in the server's own words.
"""

from __future__ import annotations

import base64
import binascii
import json

import mcp.types as mt

from tether.engine.events import TextOut
from tether.engine.history import ImagePart
from tether.engine.images import ImageRefused, checked_image
from tether.engine.registry import ToolOutput

NO_IMAGES = "this model does not take images"


def to_output(result: mt.CallToolResult, *, images: bool) -> ToolOutput:
    """`images`: the session's model takes images (else each is a placeholder)."""
    pictures: list[ImagePart] = []
    parts = [_block(b, pictures if images else None) for b in result.content]
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
        images=pictures,
        is_error=result.is_error,
    )


def prompt_parts(result: mt.GetPromptResult, *, images: bool) -> tuple[str, list[ImagePart]]:
    """A prompt's messages as one prompt: each message's content in order, an assistant's
    marked as such (a turn is sent as the user's words), and its pictures (`images`: the
    session's model takes images)."""
    pictures: list[ImagePart] = []
    parts: list[str] = []
    for m in result.messages:
        text = _block(m.content, pictures if images else None)
        parts.append(f"[assistant]\n{text}" if m.role == "assistant" else text)
    return "\n\n".join(p for p in parts if p), pictures


def _block(block: mt.ContentBlock, pictures: list[ImagePart] | None) -> str:
    """The block as text; an image added to `pictures` (None: the model takes none)."""
    if isinstance(block, mt.TextContent):
        return block.text
    if isinstance(block, mt.ImageContent):
        return _image(block, pictures)
    if isinstance(block, mt.AudioContent):
        return (
            f"[the tool returned audio ({block.mime_type}, {_size(block.data)}), "
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


def _image(block: mt.ImageContent, pictures: list[ImagePart] | None) -> str:
    what = f"image: {block.mime_type}, {_bytes(block.data)} bytes"
    if pictures is None:
        return f"[{what} — {NO_IMAGES}]"
    try:
        data, mime = checked_image(block.data, block.mime_type)
    except ImageRefused as exc:
        return f"[{what} — not shown: {exc.message}]"
    pictures.append(ImagePart(data=data, mime_type=mime))
    return f"[{what} — shown after this text]"


def _bytes(data: str) -> int:
    """The decoded size of base64 `data`."""
    try:
        return len(base64.b64decode(data, validate=False))
    except (ValueError, binascii.Error):
        return len(data) * 3 // 4


def _size(data: str) -> str:
    """The decoded size of base64 `data`, for a person."""
    n = _bytes(data)
    return f"{n} bytes" if n < 1024 else f"{n / 1024:.1f} KiB"
