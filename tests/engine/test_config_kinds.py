"""The provider-kind registry: one entry is everything a kind needs. A test kind registered as
one entry is accepted by the file, added by its environment variables with its base URL and
built-in models, opened with its adapter (which talks to a loopback server), and shown by
`tether doctor`; a web search kind registered the same way is named in `[web]` and asked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.providers.mock_llm_server import MockLLMServer, Reply
from tests.support.providers.wire import chat_text
from tests.support.web_servers import Page, PageServer
from tether.cli.doctor import render_text
from tether.engine.config import model_kinds
from tether.engine.config.file import parse_config
from tether.engine.config.load import build_catalog
from tether.engine.config.model_kinds import EnvVars, ProviderKind
from tether.engine.config.resolve import resolve
from tether.engine.diagnostics import check, key_description
from tether.engine.history import TextPart, UserMessage
from tether.engine.providers.base import ChatRequest, TextDelta
from tether.engine.providers.common import HTTPProvider
from tether.engine.providers.openai_chat_adapter import OpenAIChat
from tether.engine.web import web_kinds
from tether.engine.web.build import build_web, plan_web
from tether.engine.web.provider_registry import SearchProvider
from tether.engine.web.searxng import SearxngSearch
from tether.engine.web.web_kinds import WebKind, WebSources
from tether.errors import ConfigError
from tether.schemas.config import ModelConfig

ACME = ProviderKind(
    "acme",
    adapter=lambda: OpenAIChat,
    base_url="https://api.acme.test/v1",
    models={
        "acme-large": ModelConfig(context_window=200_000, max_output_tokens=16_000, images=True),
        "acme-small": ModelConfig(context_window=32_000),
    },
    env=EnvVars("ACME_API_KEY", "ACME_BASE_URL"),
)


@pytest.fixture
def acme(monkeypatch: pytest.MonkeyPatch) -> ProviderKind:
    monkeypatch.setitem(model_kinds.KINDS, ACME.name, ACME)
    return ACME


def test_the_entry_adds_an_env_provider_with_its_base_url_and_models(acme: ProviderKind) -> None:
    setup = resolve(None, env={"ACME_API_KEY": "sk-acme"})
    [provider] = setup.providers.values()
    assert (provider.name, provider.kind, provider.base_url) == ("acme", "acme", acme.base_url)
    assert (provider.api_key, provider.key_source) == ("sk-acme", "env ACME_API_KEY")
    assert list(setup.models) == ["acme:acme-large", "acme:acme-small"]
    large = setup.models["acme:acme-large"]
    assert (large.context_window, large.max_output_tokens, large.images) == (200_000, 16_000, True)
    catalog = build_catalog(None, env={"ACME_API_KEY": "sk-acme"})
    assert catalog.default == "acme:acme-large"  # the kind's first built-in model
    assert key_description(provider) == "env ACME_API_KEY (set)"


def test_the_file_accepts_the_kind_and_lists_it_in_errors(acme: ProviderKind) -> None:
    config = parse_config('[providers.work]\nkind = "acme"\napi_key = "k"\n')
    catalog = build_catalog(config, env={})
    model = catalog.open("work:acme-small")
    assert isinstance(model, OpenAIChat) and not model.deepseek
    assert (model.base_url, model.api_key, model.name) == (acme.base_url, "k", "work")
    with pytest.raises(ConfigError) as info:
        parse_config('[providers.work]\nkind = "acme2"\n')
    assert "invalid value 'acme2' (expected one of: openai," in str(info.value)
    assert str(info.value).endswith(", deepseek-anthropic, acme)")


@pytest.mark.anyio
async def test_the_adapter_talks_to_the_kinds_server(acme: ProviderKind) -> None:
    with MockLLMServer() as server:
        server.script("/v1/chat/completions", Reply(chunks=chat_text(["Hello", " from acme"])))
        catalog = build_catalog(None, env={"ACME_BASE_URL": f"{server.url}/v1"})
        model = catalog.open("acme:acme-large")
        assert isinstance(model, HTTPProvider)
        request = ChatRequest(system="", messages=[UserMessage([TextPart("Hi")])], tools=[])
        text = [e.text async for e in model.stream(request) if isinstance(e, TextDelta)]
        await catalog.aclose()
    assert "".join(text) == "Hello from acme"
    [sent] = server.posts
    assert sent.json()["model"] == "acme-large" and "authorization" not in sent.headers


def test_doctor_lists_the_kinds_variables(acme: ProviderKind, tmp_path: Path) -> None:
    report = check(env={"TETHER_CONFIG": str(tmp_path / "none.toml")})
    assert "ACME_API_KEY" in render_text(report)  # "none: set one of ..., ACME_API_KEY"


# --- a web search kind --------------------------------------------------------------------------


class MirrorSearch(SearxngSearch):
    """A second SearXNG-speaking provider under its own name."""

    name = "mirror"


def make_mirror(src: WebSources) -> SearchProvider | str:
    url = src.env.get("MIRROR_URL")
    return MirrorSearch(url) if url else "MIRROR_URL is not set"


@pytest.mark.anyio
async def test_a_web_kind_is_one_entry(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(
        web_kinds.WEB_KINDS, ("search", "mirror"), WebKind("mirror", "search", make_mirror)
    )
    web = resolve(parse_config('[web]\nsearch_providers = ["mirror", "searxng"]\n'), env={}).web
    with PageServer() as site:
        results = {"results": [{"url": "https://m.example/", "title": "M", "content": "c"}]}
        site.route("/search", Page(json.dumps(results).encode(), type="application/json"))
        found = await build_web(web, {"MIRROR_URL": site.url("/")}).search("q", max_results=8)
    assert found.provider == "mirror" and [h.url for h in found.hits] == ["https://m.example/"]
    # Unconfigured, a usable kind joins the order derived from the environment, after the
    # registry's earlier kinds; `tether doctor` shows it.
    env = {"MIRROR_URL": "http://127.0.0.1:9/", "TETHER_SEARXNG_URL": "http://127.0.0.1:8/"}
    assert plan_web(None, env).search == ["searxng", "mirror"]
    report = check(env={**env, "TETHER_CONFIG": str(tmp_path / "none.toml")})
    assert [(s.name, s.usable) for s in report.web.search or []] == [
        ("searxng", True),
        ("mirror", True),
    ]
