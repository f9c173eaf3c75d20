"""A tool result's images (view_image) in each wire format, read by a loopback server."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.support.providers.helpers import KITS, Kit, collect, model_info, request
from tests.support.providers.mock_llm_server import MockLLMServer, Reply
from tether.engine.history import (
    AssistantMessage,
    ImagePart,
    Message,
    TextPart,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

pytestmark = pytest.mark.anyio

IMAGE = ImagePart(data="iVBORw0KGgo=", mime_type="image/png", detail="low")
HISTORY: list[Message] = [
    UserMessage([TextPart("what is in logo.png?")]),
    AssistantMessage(tool_calls=[ToolCall("c1", "view_image", '{"path": "logo.png"}')]),
    ToolResultMessage("c1", "view_image", "logo.png: image/png image, 8 bytes", images=[IMAGE]),
]


async def _sent(kit: Kit, server: MockLLMServer, client: httpx.AsyncClient, images: bool) -> Any:
    server.script(kit.path, Reply(chunks=kit.text(["a logo"])))
    await collect(kit.adapter(server, client, info=model_info(images=images)), request(HISTORY))
    return server.requests[0].json()


async def test_openai_chat_sends_tool_images_after_the_tool_messages(
    server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    body = await _sent(KITS[0], server, client, images=True)
    *_, tool, follow = body["messages"]
    assert tool == {
        "role": "tool",
        "tool_call_id": "c1",
        "content": "logo.png: image/png image, 8 bytes",
    }
    assert follow == {
        "role": "user",
        "content": [
            {"type": "text", "text": "The image returned by view_image (call c1):"},
            {
                "type": "image_url",
                "image_url": {"url": "data:image/png;base64,iVBORw0KGgo=", "detail": "low"},
            },
        ],
    }


async def test_responses_sends_tool_images_in_the_call_output(
    server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    body = await _sent(KITS[1], server, client, images=True)
    assert body["input"][-1] == {
        "type": "function_call_output",
        "call_id": "c1",
        "output": [
            {"type": "input_text", "text": "logo.png: image/png image, 8 bytes"},
            {
                "type": "input_image",
                "image_url": "data:image/png;base64,iVBORw0KGgo=",
                "detail": "low",
            },
        ],
    }


async def test_anthropic_sends_tool_images_in_the_tool_result(
    server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    body = await _sent(KITS[2], server, client, images=True)
    [block] = body["messages"][-1]["content"]
    assert (block["type"], block["tool_use_id"]) == ("tool_result", "c1")
    assert block["content"] == [
        {"type": "text", "text": "logo.png: image/png image, 8 bytes"},
        {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": IMAGE.data},
        },
    ]


async def test_a_model_without_images_gets_the_text_only(
    kit: Kit, server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    body = await _sent(kit, server, client, images=False)
    raw = str(body)
    assert IMAGE.data not in raw and "logo.png: image/png image, 8 bytes" in raw
