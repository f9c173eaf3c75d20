"""ACP prompt content blocks as the engine's user message parts."""

from __future__ import annotations

from tether.engine.history import ImagePart, TextPart, UserPart
from tether.engine.images import ImageRefused, checked_image
from tether.engine.providers.base import ModelInfo
from tether.rpc.rpc_error import RpcError
from tether.schemas import acp


def user_parts(blocks: list[acp.ContentBlock], model: ModelInfo) -> list[UserPart]:
    parts: list[UserPart] = []
    for i, b in enumerate(blocks):
        if isinstance(b, acp.TextContent):
            parts.append(TextPart(b.text))
        elif isinstance(b, acp.ResourceLink):
            parts.append(TextPart(f"[{b.name}]({b.uri})"))
        elif isinstance(b, acp.EmbeddedResource):
            parts.append(TextPart(_resource_text(b.resource)))
        elif isinstance(b, acp.ImageContent):
            if not model.images:
                raise RpcError.invalid_params(
                    f"prompt[{i}]: the model {model.id} does not accept images; "
                    "pick an image-capable model (`images = true` in its config)"
                )
            try:
                data, mime = checked_image(b.data, b.mime_type)
            except ImageRefused as exc:
                raise RpcError.invalid_params(f"prompt[{i}]: {exc}") from None
            parts.append(ImagePart(data, mime))
        else:
            raise RpcError.invalid_params(f"prompt[{i}]: this agent does not accept audio content")
    return parts


def _resource_text(r: acp.ResourceContents) -> str:
    if isinstance(r.text, str):
        return f"Context from {r.uri}:\n```\n{r.text}\n```"
    if isinstance(r.blob, str):
        return f"Context from {r.uri}: binary content ({len(r.blob) * 3 // 4} bytes) not shown"
    raise RpcError.invalid_params(f"resource {r.uri} has neither text nor blob")
