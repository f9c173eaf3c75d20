"""Images in a prompt, through `tether acp` to the loopback server (which refuses what the
vendors refuse: Anthropic's media types and 5 MB per image, OpenAI's formats, a media type
that does not match the bytes).

Checked before anything is stored: a type no provider takes, a body over the smallest
provider's limit, bytes that are no image are a clear `-32602` and leave the session as it was;
a mislabelled image goes out under its real type. An image a provider still refuses fails that
prompt only: it is left out of the session, so the next prompt goes through.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.harness import AgentProcess, spawn_agent
from tests.support.providers import wire
from tests.support.providers.mock_llm_server import MockLLMServer, Reply, error_reply
from tether.engine.images import IMAGE_MAX_BYTES

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
KEY = "sk-test-0123456789abcdef"
PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 64
JPEG = b"\xff\xd8\xff\xe0" + b"\0" * 64
SVG = b'<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"/>'


def anthropic_env(server: MockLLMServer) -> dict[str, str]:
    model = "anthropic:claude-sonnet-5-5"
    return {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": server.url, "TETHER_MODEL": model}


def openai_env(server: MockLLMServer) -> dict[str, str]:
    url = server.url + "/v1"
    return {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": url, "TETHER_MODEL": "openai:gpt-5.5"}


def image(data: bytes, mime: str) -> dict[str, Any]:
    return {"type": "image", "data": base64.b64encode(data).decode(), "mimeType": mime}


async def prompt(agent: AgentProcess, sid: str, *blocks: dict[str, Any]) -> dict[str, Any]:
    return await agent.request("session/prompt", {"sessionId": sid, "prompt": list(blocks)})


def sent_images(body: dict[str, Any]) -> list[str]:
    """The media types of the images in a request body (Anthropic blocks, OpenAI data URLs)."""
    found: list[str] = []
    text = json.dumps(body)
    for marker in ('"media_type": "', '"url": "data:'):
        for piece in text.split(marker)[1:]:
            found.append(piece.split('"')[0].split(";")[0])
    return found


@pytest.mark.parametrize("env", [anthropic_env, openai_env], ids=["anthropic", "openai"])
async def test_a_type_no_provider_takes_is_refused_before_it_is_stored(
    home: Path, project: Path, env: Any
) -> None:
    with MockLLMServer() as server:
        server.script("/v1/messages", Reply(chunks=wire.anthropic_text(["fine"])))
        server.script("/v1/chat/completions", Reply(chunks=wire.chat_text(["fine"])))
        async with spawn_agent(home, env=env(server)) as agent:
            await agent.initialize()
            sid = await agent.new_session(project)
            text = {"type": "text", "text": "what is this?"}
            refused = await prompt(agent, sid, text, image(SVG, "image/svg+xml"))
            assert refused["error"]["code"] == -32602
            assert refused["error"]["message"] == (
                "Invalid params: prompt[1]: image/svg+xml images are not accepted: PNG, JPEG, GIF or WebP only"
            )
            assert server.posts == []  # nothing went out
            assert (await prompt(agent, sid, text))["result"] == {"stopReason": "end_turn"}
        [post] = server.posts
        assert sent_images(post.json()) == []  # the refused image is not in the session
        assert json.dumps(post.json()).count("what is this?") == 1


async def test_an_image_over_the_smallest_limit_is_refused(home: Path, project: Path) -> None:
    big = PNG + b"\0" * (IMAGE_MAX_BYTES + 1)  # about 5 MB: over Anthropic's limit once encoded
    with MockLLMServer() as server:
        async with spawn_agent(home, env=anthropic_env(server)) as agent:
            await agent.initialize()
            sid = await agent.new_session(project)
            refused = await prompt(agent, sid, image(big, "image/png"))
            assert refused["error"]["code"] == -32602
            assert refused["error"]["message"] == (
                f"Invalid params: prompt[0]: the image has {len(big)} bytes; images over {IMAGE_MAX_BYTES} "
                "bytes are not sent (the smallest provider limit)"
            )
        assert server.posts == []


async def test_bytes_that_are_no_image_are_refused(home: Path, project: Path) -> None:
    with MockLLMServer() as server:
        async with spawn_agent(home, env=anthropic_env(server)) as agent:
            await agent.initialize()
            sid = await agent.new_session(project)
            refused = await prompt(agent, sid, image(b"hello, world", "image/png"))
            assert refused["error"]["message"] == (
                "Invalid params: prompt[0]: the image/png block is not a PNG, JPEG, GIF or WebP image"
            )
            bad = {"type": "image", "data": "not base64!", "mimeType": "image/png"}
            refused = await prompt(agent, sid, bad)
            assert refused["error"]["message"] == (
                "Invalid params: prompt[0]: the image's data is not base64"
            )
        assert server.posts == []


async def test_a_mislabelled_image_goes_out_under_its_real_type(home: Path, project: Path) -> None:
    with MockLLMServer() as server:
        server.script("/v1/messages", Reply(chunks=wire.anthropic_text(["a photo"])))
        async with spawn_agent(home, env=anthropic_env(server)) as agent:
            await agent.initialize()
            sid = await agent.new_session(project)
            answer = await prompt(agent, sid, image(JPEG, "image/png"))
            assert answer["result"] == {"stopReason": "end_turn"}
        assert sent_images(server.posts[0].json()) == ["image/jpeg"]
        assert server.rule_errors == []


async def test_an_image_the_provider_refuses_does_not_poison_the_session(
    home: Path, project: Path
) -> None:
    with MockLLMServer() as server:
        server.script(
            "/v1/messages",
            error_reply(400, "messages.0.content.0.image.source.base64: Could not process image"),
            Reply(chunks=wire.anthropic_text(["hello"])),
        )
        async with spawn_agent(home, env=anthropic_env(server)) as agent:
            await agent.initialize()
            sid = await agent.new_session(project)
            failed = await prompt(
                agent, sid, {"type": "text", "text": "see"}, image(PNG, "image/png")
            )
            message = failed["error"]["message"]
            assert "Could not process image" in message
            assert "this turn's image is left out of the session" in message
            again = await prompt(agent, sid, {"type": "text", "text": "and now?"})
            assert again["result"] == {"stopReason": "end_turn"}
        first, second = (p.json() for p in server.posts)
        assert sent_images(first) == ["image/png"] and sent_images(second) == []
        # After a restart too: the stored session no longer has it.
        server.script("/v1/messages", Reply(chunks=wire.anthropic_text(["still fine"])))
        async with spawn_agent(home, env=anthropic_env(server)) as agent:
            await agent.initialize()
            params = {"sessionId": sid, "cwd": str(project), "mcpServers": []}
            assert "result" in await agent.request("session/load", params)
            assert (await prompt(agent, sid, {"type": "text", "text": "ok?"}))["result"]
        assert sent_images(server.posts[-1].json()) == []
