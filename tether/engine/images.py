"""Images the model is shown (a prompt's, `view_image`'s): the types and the size every
provider takes, the type the bytes really are (Anthropic refuses a mislabelled image), and
what leaves the session when a provider refuses one anyway."""

from __future__ import annotations

import base64
import binascii
import re

import msgspec

from tether.engine.history import (
    ImagePart,
    Message,
    TextPart,
    ToolResultMessage,
    UserMessage,
    UserPart,
)
from tether.errors import TetherError

IMAGE_MAX_BYTES = 3_750_000  # 5 MB once base64-encoded: the smallest provider limit (Anthropic)
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
TYPE_NAMES = "PNG, JPEG, GIF or WebP"

_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)
_SPACE = re.compile(r"\s+")


class ImageRefused(TetherError, ValueError):
    """An image no provider would take; the message says why, for the user."""

    def __init__(self, message: str) -> None:
        super().__init__("IMAGE_REFUSED", message)


def image_type(head: bytes) -> str | None:
    """The MIME type of a PNG, JPEG, GIF or WebP from its first bytes."""
    for magic, mime in _MAGIC:
        if head.startswith(magic):
            return mime
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def checked_image(data: str, declared: str) -> tuple[str, str]:
    """A base64 image as it may be sent: (data, the type its bytes are). ImageRefused for a
    type no provider takes, a body over IMAGE_MAX_BYTES, or bytes that are no such image."""
    if declared.lower() not in IMAGE_TYPES:
        raise ImageRefused(f"{declared} images are not accepted: {TYPE_NAMES} only")
    size = len(data) * 3 // 4 - data[-2:].count("=")
    if size > IMAGE_MAX_BYTES:
        raise ImageRefused(
            f"the image has {size} bytes; images over {IMAGE_MAX_BYTES} bytes are not sent "
            "(the smallest provider limit)"
        )
    try:
        raw = base64.b64decode(data, validate=True)
    except binascii.Error:
        data = _SPACE.sub("", data)  # some clients wrap the lines
        try:
            raw = base64.b64decode(data, validate=True)
        except binascii.Error:
            raise ImageRefused("the image's data is not base64") from None
    real = image_type(raw[:16])
    if real is None:
        raise ImageRefused(f"the {declared} block is not a {TYPE_NAMES} image")
    return data, real


LEFT_OUT = "[an image was here; left out: the model provider refused the request with it]"


def leave_out(history: list[Message], start: int) -> tuple[int, list[int]]:
    """Replace the images of history[start:] with a note: after a provider refused a request
    with them, every later request of the session would be refused too. (How many images,
    the indices of the messages changed.)"""
    count, changed = 0, []
    for i in range(start, len(history)):
        m = history[i]
        if isinstance(m, UserMessage) and any(isinstance(p, ImagePart) for p in m.parts):
            count += sum(isinstance(p, ImagePart) for p in m.parts)
            parts: list[UserPart] = [
                TextPart(LEFT_OUT) if isinstance(p, ImagePart) else p for p in m.parts
            ]
            history[i] = UserMessage(parts)
        elif isinstance(m, ToolResultMessage) and m.images:
            count += len(m.images)
            history[i] = msgspec.structs.replace(m, images=[], content=f"{m.content}\n{LEFT_OUT}")
        else:
            continue
        changed.append(i)
    return count, changed
