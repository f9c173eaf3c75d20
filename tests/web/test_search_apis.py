"""The Exa and Perplexity search providers (seed `dsh-web-search-exa`, `dsh-web-search-
perplexity`; issue 32, item 8) against loopback stand-ins of their documented APIs, which refuse
a request the real service would refuse: through `web_search` in the tool pipeline, through
`tether acp` under a config file, and the `[web.exa]` / `[web.perplexity]` tables."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.harness import configured_turn
from tests.support.search_apis import ExaStandIn, PerplexityStandIn
from tests.web.test_web_tools import Harness
from tether.engine.config.command_env import secret_variables
from tether.engine.config.file import parse_config
from tether.engine.config.resolve import resolve
from tether.engine.web.build import build_web, plan_web
from tether.errors import ConfigError
from tether.schemas.config import ConfigFile
from tether.schemas.web import ExaConfig, PerplexityConfig, WebConfig

pytestmark = pytest.mark.anyio

CITE = "Cite the relevant URLs above as markdown links in your answer."

EXA_REPLY = {
    "requestId": "b5947044c4b78efa9552a7c89b306d95",
    "resolvedSearchType": "neural",
    "results": [
        {
            "id": "https://docs.example/install",
            "url": "https://docs.example/install",
            "title": "Installing  tether",
            "publishedDate": "2026-03-01T00:00:00.000Z",
            "author": None,
            "score": 0.41,
            "highlights": ["  ", "Run pip install tether-acp."],
            "highlightScores": [0.1, 0.8],
        },
        {  # no highlight: nothing true to show, left out (the seed's rule)
            "id": "https://empty.example/",
            "url": "https://empty.example/",
            "title": "Empty",
            "highlights": [],
        },
        {
            "id": "https://blog.example/post",
            "url": "https://blog.example/post",
            "title": None,
            "highlights": ["A post about it."],
        },
    ],
    "costDollars": {"total": 0.005},
}

PPLX_REPLY = {
    "id": "3c90c3cc-0d44-4b50-8888-8dd25736052a",
    "model": "sonar",
    "created": 1764900000,
    "object": "chat.completion",
    "usage": {"prompt_tokens": 6, "completion_tokens": 20, "total_tokens": 26},
    "choices": [
        {
            "index": 0,
            "finish_reason": "stop",
            "message": {"role": "assistant", "content": "Paris is the capital of France [1]."},
        }
    ],
    "citations": ["https://a.example/paris"],
    "search_results": [
        {
            "title": "Paris",
            "url": "https://a.example/paris",
            "date": "2026-01-02",
            "last_updated": "2026-02-03",
            "snippet": "Capital of France.",
        }
    ],
}


def harness(tmp_path: Path, config: WebConfig) -> Harness:
    return Harness(tmp_path, build_web(config, {}), config)


# --- Exa ----------------------------------------------------------------------------------------


async def test_exa_results_through_web_search(tmp_path: Path) -> None:
    with ExaStandIn("exa-key") as exa:
        exa.reply = EXA_REPLY
        config = WebConfig(
            search_providers=["exa"], exa=ExaConfig(api_key="exa-key", base_url=exa.base_url)
        )
        text = await harness(tmp_path, config).one("web_search", query="install tether")
    assert text == (
        "Sources:\n"
        "- [Installing tether](https://docs.example/install) — Run pip install tether-acp. "
        "(2026-03-01T00:00:00.000Z)\n"
        "- [https://blog.example/post](https://blog.example/post) — A post about it.\n\n" + CITE
    )
    assert exa.accepted == [
        {
            "query": "install tether",
            "type": "auto",
            "numResults": 9,  # the tool's bound (8) and one more, to know the list was capped
            "contents": {"highlights": {"highlightsPerUrl": 1}},
        }
    ]
    [seen] = exa.requests
    assert seen.headers["x-api-key"] == "exa-key" and "authorization" not in seen.headers


async def test_exa_settings_reach_the_request(tmp_path: Path) -> None:
    with ExaStandIn("k") as exa:
        exa.reply = {"requestId": "r", "results": []}
        settings = ExaConfig(
            api_key="k", base_url=exa.base_url, search_type="keyword", highlights_per_result=3
        )
        config = WebConfig(search_providers=["exa"], search_max_results=20, exa=settings)
        text = await harness(tmp_path, config).one("web_search", query="q")
    assert text == "No results found."
    [body] = exa.accepted
    assert (body["type"], body["numResults"], body["contents"]) == (
        "keyword",
        21,
        {"highlights": {"highlightsPerUrl": 3}},
    )


async def test_exa_failures_in_the_seeds_words(tmp_path: Path) -> None:
    with ExaStandIn("right") as exa:
        wrong = WebConfig(
            search_providers=["exa"], exa=ExaConfig(api_key="wrong", base_url=exa.base_url)
        )
        assert await harness(tmp_path, wrong).one("web_search", query="q") == (
            "Error: WEB_PROVIDER_ERROR: Invalid or missing API key"
        )
        exa.reply = {"requestId": "r", "results": "none"}
        right = WebConfig(
            search_providers=["exa"], exa=ExaConfig(api_key="right", base_url=exa.base_url)
        )
        shape = await harness(tmp_path, right).one("web_search", query="q")
    assert shape.startswith(
        "Error: WEB_PROVIDER_ERROR: Exa returned an unprocessable response body: Expected `array`"
    )
    gone = WebConfig(
        search_providers=["exa"], exa=ExaConfig(api_key="k", base_url="http://127.0.0.1:9")
    )
    down = await harness(tmp_path, gone).one("web_search", query="q")
    assert down.startswith(
        "Error: WEB_PROVIDER_ERROR: Exa search request failed: exa is unreachable"
    )


# --- Perplexity ---------------------------------------------------------------------------------


async def test_perplexity_answer_and_sources_through_web_search(tmp_path: Path) -> None:
    with PerplexityStandIn("pplx-key") as pplx:
        pplx.reply = PPLX_REPLY
        settings = PerplexityConfig(
            api_key="pplx-key", base_url=pplx.base_url, search_recency="week"
        )
        config = WebConfig(search_providers=["perplexity"], perplexity=settings)
        text = await harness(tmp_path, config).one("web_search", query="capital of France")
    assert text == (
        "Paris is the capital of France [1].\n\n"
        "Sources:\n- [Paris](https://a.example/paris) — Capital of France. (2026-01-02)\n\n" + CITE
    )
    assert pplx.accepted == [
        {
            "model": "sonar",
            "max_tokens": 1024,
            "messages": [{"role": "user", "content": "capital of France"}],
            "search_recency_filter": "week",
        }
    ]
    assert pplx.requests[0].headers["authorization"] == "Bearer pplx-key"


async def test_perplexity_without_search_results_cites_urls_only(tmp_path: Path) -> None:
    with PerplexityStandIn("k") as pplx:
        pplx.reply = {**PPLX_REPLY, "citations": ["https://c.example/1", "https://c.example/2"]}
        del pplx.reply["search_results"]
        settings = PerplexityConfig(api_key="k", base_url=pplx.base_url, model="sonar-pro")
        config = WebConfig(search_providers=["perplexity"], perplexity=settings)
        text = await harness(tmp_path, config).one("web_search", query="q")
    assert "Sources:\n- [https://c.example/1](https://c.example/1)\n" in text
    assert "- [https://c.example/2](https://c.example/2)\n" in text
    assert "max_tokens" in pplx.accepted[0] and pplx.accepted[0]["model"] == "sonar-pro"
    assert "search_recency_filter" not in pplx.accepted[0]  # unset: no filter sent


async def test_perplexity_refusals_keep_the_services_message(tmp_path: Path) -> None:
    with PerplexityStandIn("k") as pplx:
        settings = PerplexityConfig(api_key="k", base_url=pplx.base_url, model="gpt-4o")
        config = WebConfig(search_providers=["perplexity"], perplexity=settings)
        text = await harness(tmp_path, config).one("web_search", query="q")
    assert text.startswith("Error: WEB_PROVIDER_ERROR: Invalid model 'gpt-4o'. Permitted models:")
    assert pplx.accepted == []


@pytest.mark.parametrize(
    ("stand_in", "headers", "body"),
    [
        ("exa", {"x-api-key": "k"}, {"type": "auto"}),  # no query
        ("exa", {"x-api-key": "k"}, {"query": "q", "numResults": 0}),
        ("exa", {"x-api-key": "k"}, {"query": "q", "num_results": 5}),  # snake_case: unknown
        ("exa", {"x-api-key": "k"}, {"query": "q", "contents": {"highlights": {"perUrl": 1}}}),
        ("exa", {}, {"query": "q"}),  # no key
        ("pplx", {"authorization": "Bearer k"}, {"model": "sonar"}),  # no messages
        ("pplx", {"authorization": "Bearer k"}, {"model": "sonar", "messages": [], "n": 1}),
        (
            "pplx",
            {"authorization": "Bearer k"},
            {"model": "sonar", "messages": [{"role": "assistant", "content": "hi"}]},
        ),
        ("pplx", {"x-api-key": "k"}, {"model": "sonar", "messages": []}),  # wrong header
    ],
)
def test_the_stand_ins_refuse_what_the_services_refuse(
    stand_in: str, headers: dict[str, str], body: dict[str, Any]
) -> None:
    """So a request that passes them is one the real service would take."""
    server = ExaStandIn("k") if stand_in == "exa" else PerplexityStandIn("k")
    with server:
        resp = httpx.post(
            server.url(server.path),
            content=json.dumps(body),
            headers={**headers, "Content-Type": "application/json"},
        )
    assert resp.status_code in (400, 401) and server.accepted == []


# --- configuration ------------------------------------------------------------------------------


def test_the_tables_are_read_and_checked_with_lines() -> None:
    text = (
        "[web]\nsearch_providers = ['perplexity', 'exa']\n"
        "[web.exa]\napi_key_env = 'TEAM_EXA'\nbase_url = 'https://exa.internal'\n"
        "search_type = 'neural'\nhighlights_per_result = 2\n"
        "[web.perplexity]\napi_key = 'p'\nmodel = 'sonar-pro'\nmax_tokens = 300\n"
        "search_recency = 'month'\n"
    )
    web = resolve(parse_config(text), env={}).web
    assert web.exa == ExaConfig(
        api_key_env="TEAM_EXA",
        base_url="https://exa.internal",
        search_type="neural",
        highlights_per_result=2,
    )
    assert web.perplexity == PerplexityConfig(
        api_key="p", model="sonar-pro", max_tokens=300, search_recency="month"
    )
    for bad, expected in (
        ("[web.exa]\nsearch_type = 'deep-ish'\n", ":2: web.exa.search_type: invalid value"),
        ("[web.exa]\nbase_url = 'api.exa.ai'\n", ":2: web.exa.base_url: expected an http://"),
        (
            "[web.perplexity]\napi_key = 'k'\napi_key_env = 'K'\n",
            ":3: web.perplexity.api_key_env: set api_key or api_key_env, not both",
        ),
        ("[web.perplexity]\nmax_tokens = 0\n", ":2: web.perplexity.max_tokens: must be >= 1"),
        ("[web]\nsearch_providers = ['exa.ai']\n", ":2: web.search_providers: invalid value"),
    ):
        with pytest.raises(ConfigError) as caught:
            parse_config(bad, Path("/cfg/config.toml"))
        lines = str(caught.value).splitlines()
        assert any(line.startswith("/cfg/config.toml" + expected) for line in lines), lines


def test_keys_from_the_environment_make_them_usable_and_stay_secret() -> None:
    plan = plan_web(WebConfig(), {"EXA_API_KEY": "e", "PERPLEXITY_API_KEY": "p"})
    assert plan.search == ["exa", "perplexity"]  # unconfigured: the registry's order
    bare = plan_web(WebConfig(), {})
    assert bare.why_not("search", "exa") == "EXA_API_KEY is not set"
    assert bare.why_not("search", "perplexity") == "PERPLEXITY_API_KEY is not set"
    secret = secret_variables(ConfigFile())
    assert {"EXA_API_KEY", "PERPLEXITY_API_KEY"} <= secret  # commands never see them


@pytest.mark.slow
async def test_perplexity_serves_tether_acp_from_the_config_file(
    home: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEST_PPLX_KEY", "from-env")  # the agent's environment
    with PerplexityStandIn("from-env") as pplx:
        pplx.reply = PPLX_REPLY
        config = (
            "[web]\nsearch_providers = ['perplexity']\n"
            f"[web.perplexity]\napi_key_env = 'TEST_PPLX_KEY'\nbase_url = '{pplx.base_url}'\n"
        )
        calls = [{"name": "web_search", "arguments": {"query": "capital of France"}}]
        _, frames = await configured_turn(home, project, config, calls)
    assert [b["messages"][0]["content"] for b in pplx.accepted] == ["capital of France"]
    shown = json.dumps(frames)
    assert "Paris is the capital of France [1]." in shown
