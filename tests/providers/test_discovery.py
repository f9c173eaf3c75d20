"""Model lists (`GET /models`, Anthropic's paginated `GET /v1/models`) and their merge into the
catalog, against the loopback server; `tether doctor --probe` lists them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.harness import REPO
from tests.support.providers import wire
from tests.support.providers.helpers import model_info
from tests.support.providers.mock_llm_server import MockLLMServer, Reply, error_reply
from tether.engine.config.catalog import ModelCatalog
from tether.engine.config.file import parse_config
from tether.engine.config.load import build_catalog
from tether.engine.providers.anthropic_adapter import AnthropicMessages
from tether.engine.providers.common import HTTPProvider
from tether.engine.providers.discovery import DISK_TTL, Discovery
from tether.engine.providers.model_list import RemoteModel
from tether.engine.providers.openai_chat_adapter import OpenAIChat
from tether.errors import ProviderError

pytestmark = pytest.mark.anyio


def listing(*ids: str, **extra: Any) -> Reply:
    data = [{"id": i, "object": "model", "created": 1, "owned_by": "x", **extra} for i in ids]
    return Reply(body=json.dumps({"object": "list", "data": data}).encode())


def anthropic_page(models: list[dict[str, Any]], more: bool) -> Reply:
    page = {
        "data": models,
        "has_more": more,
        "first_id": models[0]["id"],
        "last_id": models[-1]["id"],
    }
    return Reply(body=json.dumps(page).encode())


def claude(model_id: str, *, effort: bool) -> dict[str, Any]:
    yes, no = {"supported": True}, {"supported": False}
    levels = {k: yes for k in ("low", "medium", "high", "xhigh", "max")}
    return {
        "type": "model",
        "id": model_id,
        "display_name": model_id.replace("-", " ").title(),
        "created_at": "2026-09-22T00:00:00Z",
        "max_input_tokens": 1_000_000,
        "max_tokens": 128_000,
        "capabilities": {
            "effort": {"supported": effort, **levels},
            "thinking": {"supported": True, "types": {"adaptive": yes, "enabled": no}},
            "image_input": yes,
        },
    }


async def test_openai_listing_keeps_chat_models(
    server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    server.script(
        "/v1/models",
        listing("gpt-5.5", "text-embedding-3-large", "whisper-1", "gpt-image-1", "o4-mini"),
    )
    llm = OpenAIChat(server.url + "/v1", "sk-test", "", model_info(), client=client)
    models = await llm.list_models()
    assert [m.id for m in models] == ["gpt-5.5", "o4-mini"]
    sent = server.requests[0]
    assert (sent.method, sent.path) == ("GET", "/v1/models")
    assert sent.headers["authorization"] == "Bearer sk-test"


async def test_vllm_states_the_context_window(
    server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    server.script("/v1/models", listing("Qwen/Qwen3-32B", max_model_len=40960))
    llm = OpenAIChat(server.url + "/v1", "", "", model_info(), client=client)
    assert await llm.list_models() == [RemoteModel("Qwen/Qwen3-32B", context_window=40960)]
    assert "authorization" not in server.requests[0].headers  # keyless


async def test_anthropic_listing_follows_every_page(
    server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    server.script(
        "/v1/models?limit=1000",
        anthropic_page([claude("claude-opus-5-5", effort=True)], more=True),
    )
    server.script(
        "/v1/models?limit=1000&after_id=claude-opus-5-5",
        anthropic_page([claude("claude-sonnet-4-5", effort=False)], more=False),
    )
    llm = AnthropicMessages(server.url, "sk-ant", "", model_info(), client=client)
    opus, sonnet = await llm.list_models()
    assert opus == RemoteModel(
        "claude-opus-5-5",
        name="Claude Opus 5 5",
        context_window=1_000_000,
        max_output_tokens=128_000,
        images=True,
        reasoning_levels=("low", "medium", "high", "xhigh", "max"),
        thinking="effort",
    )
    assert sonnet.thinking == "budget" and sonnet.reasoning_levels[0] == "none"
    for sent in server.requests:
        assert sent.headers["x-api-key"] == "sk-ant"
        assert sent.headers["anthropic-version"] == "2023-06-01"
    assert [r.path for r in server.requests] == [
        "/v1/models?limit=1000",
        "/v1/models?limit=1000&after_id=claude-opus-5-5",
    ]


async def test_a_failed_listing_says_why(server: MockLLMServer, client: httpx.AsyncClient) -> None:
    server.script("/v1/models", error_reply(401, "invalid api key"))
    llm: HTTPProvider = OpenAIChat(server.url + "/v1", "bad", "", model_info(), client=client)
    with pytest.raises(ProviderError, match="HTTP 401: invalid api key"):
        await llm.list_models()


# --- discovery: the merge into the catalog ----------------------------------------------------


@pytest.fixture
async def catalogs() -> AsyncIterator[list[ModelCatalog]]:
    """Catalogs made by a test; their providers' shared HTTP clients are closed after it."""
    made: list[ModelCatalog] = []
    yield made
    for cat in made:
        for handle in cat.providers.values():
            adapter = handle.open("", model_info())
            assert isinstance(adapter, HTTPProvider)
            await adapter._get_client().aclose()


@pytest.fixture
def catalog(catalogs: list[ModelCatalog], server: MockLLMServer) -> Callable[..., ModelCatalog]:
    def make(*, key: bool = True, extra: str = "") -> ModelCatalog:
        auth = 'api_key = "sk-test-0123456789"\n' if key else ""
        text = (
            f'[providers.p]\nkind = "openai"\nbase_url = "{server.url}/v1"\n{auth}'
            'builtin_models = false\n\n[models."p:mine"]\ncontext_window = 64000\n' + extra
        )
        catalogs.append(build_catalog(parse_config(text), env={}))
        return catalogs[-1]

    return make


Catalog = Callable[..., ModelCatalog]


async def test_listed_models_join_the_catalog_with_known_limits(
    server: MockLLMServer, catalog: Catalog
) -> None:
    server.script("/v1/models", listing("mine", "gpt-5.4", "brand-new", "text-embedding-3-small"))
    cat = catalog()
    discovery = Discovery(cat)
    assert await discovery.refresh() is True
    assert [i for i in cat.infos if i.startswith("p:")] == ["p:mine", "p:gpt-5.4", "p:brand-new"]
    assert cat.infos["p:mine"].context_window == 64000  # the config file's entry stays
    assert cat.infos["p:gpt-5.4"].context_window == 1_050_000  # the built-in table knows it
    assert cat.infos["p:gpt-5.4"].reasoning_levels[-1] == "xhigh"
    assert cat.infos["p:brand-new"].context_window == 128_000  # the catalog's default
    opened = cat.open("p:brand-new")
    assert isinstance(opened, OpenAIChat) and opened.model == "brand-new"
    assert await discovery.refresh() is False  # once per process
    assert len(server.requests) == 1


async def test_listed_models_take_the_agent_s_thinking_strength_clamped(
    server: MockLLMServer, catalog: Catalog
) -> None:
    server.script("/v1/models", listing("gpt-5.4"))
    cat = catalog(extra='\n[agent]\ndefault_reasoning = "max"\n')
    assert await Discovery(cat).refresh() is True
    assert cat.infos["p:gpt-5.4"].default_reasoning == "xhigh"  # its strongest, not "max"


async def test_a_provider_that_cannot_list_is_left_as_it_was(
    server: MockLLMServer, catalog: Catalog
) -> None:
    server.script("/v1/models", error_reply(404, "no such route"))
    cat = catalog()
    before = list(cat.infos)
    discovery = Discovery(cat)
    assert await discovery.refresh() is False
    assert list(cat.infos) == before
    assert "HTTP 404: no such route" in discovery.errors["p"]


async def test_a_keyed_providers_list_is_kept_on_disk_for_a_day(
    server: MockLLMServer, catalog: Catalog, tmp_path: Path
) -> None:
    server.script("/v1/models", listing("brand-new"), listing("newer"))
    now = 1_800_000_000.0
    await Discovery(catalog(), tmp_path, clock=lambda: now).refresh()
    [saved] = tmp_path.iterdir()
    assert saved.name.startswith("p-") and saved.suffix == ".json"

    later = catalog()  # the next `tether acp`
    await Discovery(later, tmp_path, clock=lambda: now + 3600).refresh()
    assert "p:brand-new" in later and len(server.requests) == 1  # from disk

    stale = catalog()
    await Discovery(stale, tmp_path, clock=lambda: now + DISK_TTL + 1).refresh()
    assert "p:newer" in stale and len(server.requests) == 2  # fetched again


async def test_a_keyless_server_without_the_default_uses_its_first_model(
    server: MockLLMServer, catalog: Catalog, tmp_path: Path
) -> None:
    server.script("/v1/models", listing("qwen2.5-coder:32b", "llama3.1:8b"))
    cat = catalog(key=False, extra='\n[defaults]\nmodel = "p:mine"\n')
    assert cat.default == "p:mine"
    discovery = Discovery(cat, tmp_path)
    assert await discovery.refresh() is True
    assert cat.default == "p:qwen2.5-coder:32b"
    assert discovery.replacement("p:mine") == "p:qwen2.5-coder:32b"
    assert discovery.replacement("p:llama3.1:8b") is None
    assert discovery.notice == (
        f"Using qwen2.5-coder:32b, the first model the server at {server.url}/v1 lists "
        "(it does not list mine)"
    )
    assert list(tmp_path.iterdir()) == []  # a local server's list is not kept on disk


async def test_a_keyed_provider_keeps_its_default(server: MockLLMServer, catalog: Catalog) -> None:
    server.script("/v1/models", listing("qwen2.5-coder:32b"))
    cat = catalog(extra='\n[defaults]\nmodel = "p:mine"\n')
    await Discovery(cat).refresh()
    assert cat.default == "p:mine"  # a cloud API may serve models it does not list


@pytest.mark.slow
def test_doctor_probe_lists_each_providers_models(server: MockLLMServer, tmp_path: Path) -> None:
    server.script("/v1/models", listing("mine", "brand-new"))
    server.script("/v1/chat/completions", error_reply(500, "down", {"x-should-retry": "false"}))
    path = tmp_path / "config.toml"
    path.write_text(
        f'[providers.p]\nkind = "openai"\nbase_url = "{server.url}/v1"\nbuiltin_models = false\n'
        '[models."p:mine"]\n'
    )
    env = {**os.environ, "PYTHONPATH": str(REPO), "TETHER_CONFIG": str(path)}
    done = subprocess.run(
        [sys.executable, "-m", "tether", "doctor", "--probe"],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=60,
    )
    lines = done.stdout.splitlines()
    at = lines.index("listed by the providers (GET /models)")
    assert lines[at + 1].split() == ["p", "2", "models", "mine,", "brand-new"]


@pytest.mark.slow
def test_doctor_probe_tries_a_model_a_keyless_server_lists(
    server: MockLLMServer, tmp_path: Path
) -> None:
    """A local server from the environment: tether's guessed default is unknown there, so the
    probe tries the model a session would run on, the first one it lists."""
    server.script("/v1/models", listing("llama3.1:8b"))
    server.script("/v1/chat/completions", Reply(chunks=wire.chat_text(["ok"])))
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "TETHER_CONFIG": str(tmp_path / "none.toml"),
        "OPENAI_BASE_URL": server.url + "/v1",
        "OPENAI_API_KEY": "",
        "ANTHROPIC_API_KEY": "",
        "TETHER_MODEL": "",
    }
    done = subprocess.run(
        [sys.executable, "-m", "tether", "doctor", "--probe", "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=60,
        check=False,
    )
    [probe] = json.loads(done.stdout)["probes"]
    assert (probe["model"], probe["status"]) == ("openai:llama3.1:8b", "ok"), probe
    assert [p.json()["model"] for p in server.posts] == ["llama3.1:8b"]
