"""A thinking setting the model refuses: one retry with the shape it takes, remembered per
model, so a later request (any adapter, any session) sends that shape at once. Judged by the
bodies the stand-in received; it refuses as the API does (vendor_rules.py)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.support.providers import wire
from tests.support.providers.helpers import FAST_RETRY, collect, model_info, of_type, request
from tests.support.providers.mock_llm_server import MockLLMServer, Reply, error_reply
from tether.engine.providers import thinking_refusals
from tether.engine.providers.anthropic_adapter import AnthropicMessages
from tether.engine.providers.base import TextDelta
from tether.errors import ProviderError

pytestmark = pytest.mark.anyio
PATH = "/v1/messages"


@pytest.fixture(autouse=True)
def nothing_learned() -> Iterator[None]:
    thinking_refusals._learned.clear()
    yield
    thinking_refusals._learned.clear()


def make(
    server: MockLLMServer, client: httpx.AsyncClient, model: str, thinking: str | None = None
) -> AnthropicMessages:
    info = model_info(thinking=thinking)
    return AnthropicMessages(server.url, "k", model, info, client=client, retry=FAST_RETRY)


def thinking_sent(server: MockLLMServer) -> list[object]:
    return [r.json().get("thinking") for r in server.posts]


async def test_a_refused_budget_is_retried_as_an_effort_and_remembered(
    server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    # Configured (wrongly) as a budget model: the API refuses the budget before streaming.
    server.script(PATH, Reply(chunks=wire.anthropic_text(["one"])))
    server.script(PATH, Reply(chunks=wire.anthropic_text(["two"])))
    first = await collect(
        make(server, client, "claude-opus-5-5", thinking="budget"), request(reasoning="high")
    )
    assert "".join(e.text for e in of_type(first, TextDelta)) == "one"
    # A new adapter for the same model (another session) sends the shape the model takes.
    await collect(
        make(server, client, "claude-opus-5-5", thinking="budget"), request(reasoning="high")
    )
    assert thinking_sent(server) == [
        {"type": "enabled", "budget_tokens": 24576},
        {"type": "adaptive", "display": "summarized"},
        {"type": "adaptive", "display": "summarized"},
    ]
    assert server.posts[1].json()["output_config"] == {"effort": "high"}
    assert len(server.rule_errors) == 1  # only the first request paid the round trip


async def test_a_refused_adaptive_is_retried_as_a_budget(
    server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    server.script(PATH, Reply(chunks=wire.anthropic_text(["ok"])))
    await collect(
        make(server, client, "claude-3-7-sonnet-x", thinking="effort"), request(reasoning="low")
    )
    assert thinking_sent(server) == [
        {"type": "adaptive", "display": "summarized"},
        {"type": "enabled", "budget_tokens": 2048},
    ]


async def test_always_on_thinking_gets_no_disabled_block(
    server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    server.script(PATH, Reply(chunks=wire.anthropic_text(["a"])))
    server.script(PATH, Reply(chunks=wire.anthropic_text(["b"])))
    llm = make(server, client, "claude-opus-5-5-thinking")
    await collect(llm, request(reasoning="none"))
    await collect(llm, request(reasoning="none"))
    assert thinking_sent(server) == [{"type": "disabled"}, None, None]


async def test_other_refusals_and_refusals_after_output_are_not_retried(
    server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    server.script(PATH, error_reply(400, "max_tokens: must be at most 128000"))
    with pytest.raises(ProviderError):
        await collect(make(server, client, "claude-opus-5-5"), request(reasoning="high"))
    assert len(server.posts) == 1
    assert thinking_refusals.learned(("anthropic", server.url, "claude-opus-5-5")) is None


async def test_a_retry_refused_too_forgets_what_it_learned(
    server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    server.script(PATH, error_reply(400, "thinking: not available on this deployment"))
    server.script(PATH, error_reply(400, "thinking: not available on this deployment"))
    with pytest.raises(ProviderError):
        await collect(make(server, client, "claude-opus-5-5"), request(reasoning="high"))
    assert len(server.posts) == 2  # one retry, no more
    assert thinking_refusals.learned(("anthropic", server.url, "claude-opus-5-5")) is None
