"""What a model takes from the layers above it, read from a real config file: its thinking
strength (model > provider > [agent], clamped to the levels it has), another wire API of its
provider (`kind` on a model), and the provider's hosted tools, each reaching the request body
a loopback stand-in receives; mistakes named with their line, as `tether doctor` shows them."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.providers import wire
from tests.support.providers.helpers import READ_FILE, collect, request
from tests.support.providers.mock_llm_server import MockLLMServer, Reply
from tether.engine.config.file import parse_config
from tether.engine.config.load import build_catalog
from tether.engine.config.resolve import clamp_level
from tether.engine.providers.common import HTTPProvider
from tether.engine.sessions.settings import reasoning_for
from tether.errors import ConfigError

LAYERS = """\
[agent]
default_reasoning = "max"

[providers.claude]
kind = "anthropic"
api_key = "k"

[providers.oa]
kind = "openai"
api_key = "k"

[providers.ds]
kind = "deepseek"
api_key = "k"
default_reasoning = "minimal"

[models."ds:deepseek-v4-pro"]
default_reasoning = "none"
"""


def test_reasoning_is_layered_model_over_provider_over_agent_and_clamped() -> None:
    catalog = build_catalog(parse_config(LAYERS), env={})
    new_session = {m: reasoning_for(m, None, catalog) for m in catalog.infos}
    assert new_session["claude:claude-opus-5-5"] == "max"  # [agent], the model has it
    assert new_session["oa:gpt-5.5"] == "xhigh"  # [agent]'s max, clamped to OpenAI's top
    assert new_session["ds:deepseek-flash"] == "none"  # the provider's minimal, clamped down
    assert new_session["ds:deepseek-v4-pro"] == "none"  # the model's own entry wins


def test_without_layers_the_built_in_defaults_stand() -> None:
    catalog = build_catalog(
        parse_config('[providers.oa]\nkind = "openai"\napi_key = "k"\n'), env={}
    )
    assert catalog.infos["oa:gpt-5.5"].default_reasoning == "medium"


@pytest.mark.parametrize(
    ("level", "levels", "expected"),
    [
        ("max", ("none", "low", "medium", "high", "xhigh"), "xhigh"),
        ("minimal", ("none", "low", "high", "max"), "none"),
        ("minimal", ("low", "high"), "low"),  # nothing below: the weakest it has
        ("high", ("low", "high"), "high"),
        ("high", (), None),
    ],
)
def test_clamping(level: str, levels: tuple[str, ...], expected: str | None) -> None:
    assert clamp_level(level, levels) == expected


@pytest.mark.anyio
async def test_a_model_of_another_kind_and_hosted_tools_reach_the_wire() -> None:
    with MockLLMServer() as server:
        server.script("/v1/responses", Reply(chunks=wire.responses_text(["ok"])))
        text = f"""\
[providers.oa]
kind = "openai"
api_key = "k"
base_url = "{server.url}/v1"
provider_tools = []

[models."oa:gpt-5.5"]
kind = "openai-responses"
provider_tools = ["web_search"]
"""
        catalog = build_catalog(parse_config(text), env={})
        llm = catalog.open("oa:gpt-5.5")
        assert isinstance(llm, HTTPProvider)
        try:
            await collect(llm, request(tools=[READ_FILE]))
        finally:
            await catalog.aclose()
        (post,) = server.posts
        assert post.path == "/v1/responses"  # not /chat/completions, on the provider's URL
        assert [t["type"] for t in post.json()["tools"]] == ["web_search", "function"]


def test_a_model_kind_on_a_default_url_goes_to_that_kind_s_api() -> None:
    text = '[providers.ds]\nkind = "deepseek"\napi_key = "k"\n\n'
    text += '[models."ds:deepseek-v4-pro"]\nkind = "deepseek-anthropic"\n'
    llm = build_catalog(parse_config(text), env={}).open("ds:deepseek-v4-pro")
    assert isinstance(llm, HTTPProvider)
    assert llm.base_url == "https://api.deepseek.com/anthropic"


def _errors(text: str) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        build_catalog(parse_config(text, Path("/cfg/config.toml")), env={})
    return str(caught.value).splitlines()


def test_mistakes_are_named_with_their_line() -> None:
    text = """\
[providers.oa]
kind = "openai"
api_key = "k"

[models."oa:gpt-5.4"]
kind = "openai-chat"

[agent]
default_reasoning = "extreme"
"""
    assert _errors(text) == [
        "/cfg/config.toml:6: models.\"oa:gpt-5.4\".kind: invalid value 'openai-chat' (expected "
        "one of: openai, openai-responses, anthropic, deepseek, deepseek-responses, "
        "deepseek-anthropic)",
        "/cfg/config.toml:9: agent.default_reasoning: invalid value 'extreme' (expected one of: "
        "none, minimal, low, medium, high, xhigh, max)",
    ]


def test_hosted_tools_on_an_api_without_them_are_named_with_their_line() -> None:
    text = """\
[providers.oa]
kind = "openai"
api_key = "k"
provider_tools = ["web_search"]

[providers.ds]
kind = "deepseek"
api_key = "k"

[models."ds:deepseek-flash"]
provider_tools = ["web_search"]
"""
    hosts = "these do: openai-responses, anthropic, deepseek-anthropic"
    assert _errors(text) == [
        f"/cfg/config.toml:4: providers.oa.provider_tools: kind 'openai' runs no hosted tools ({hosts})",
        f"/cfg/config.toml:11: models.\"ds:deepseek-flash\".provider_tools: kind 'deepseek' runs "
        f"no hosted tools ({hosts})",
    ]
