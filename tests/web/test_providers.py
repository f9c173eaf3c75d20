"""Search and fetch providers against loopback servers speaking their wire formats (DeepSeek's
Search/Fetch APIs, SearXNG's JSON, Bing's RSS), and provider selection by configured name."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support.web_servers import Page, PageServer, Seen
from tether.engine.config.file import parse_config
from tether.engine.web.build import build_web
from tether.engine.web.capability import WebCapability
from tether.engine.web.deepseek import DeepSeekWeb, api_base_url
from tether.engine.web.local_fetch import LocalFetcher
from tether.engine.web.provider_registry import ProviderRegistry
from tether.engine.web.searxng import SearxngSearch
from tether.engine.web.types import SearchHit
from tether.errors import ConfigError, WebError
from tether.schemas.web import WebConfig

pytestmark = pytest.mark.anyio


def as_json(data: Any, status: int = 200) -> Page:
    return Page(json.dumps(data).encode(), status=status, type="application/json")


def deepseek(site: PageServer) -> DeepSeekWeb:
    return DeepSeekWeb("sk-test", site.url("/anthropic"), retry_delays=(0.0, 0.0))


# --- DeepSeek -------------------------------------------------------------------------------


async def test_deepseek_search_posts_the_query_and_maps_hits(site: PageServer) -> None:
    site.route(
        "/v1/tools/search",
        as_json(
            {
                "results": [
                    {
                        "title": " DeepSeek V4 released ",
                        "url": " https://example.com/v4 ",
                        "snippet": "Tool calling and\nlong context.",
                        "summary": "A longer summary.",
                        "rerank_score": 2.4,
                    },
                    {
                        "title": "Only a summary",
                        "url": "https://example.com/s",
                        "summary": "x" * 500,
                    },
                    {"title": "Unusable", "url": ""},
                ]
            }
        ),
    )
    found = await deepseek(site).search("DeepSeek V4", 5)
    assert found.hits[0] == SearchHit(
        url="https://example.com/v4",
        title="DeepSeek V4 released",
        snippet="Tool calling and long context.",
    )
    assert len(found.hits) == 2 and len(found.hits[1].snippet) == 200
    assert found.hits[1].snippet.endswith("…")
    [req] = site.requests
    assert (req.method, req.path) == ("POST", "/v1/tools/search")  # /anthropic was dropped
    assert req.headers["authorization"] == "Bearer sk-test"
    assert json.loads(req.body) == {"query": "DeepSeek V4", "count": 5}


def test_the_api_base_drops_convention_suffixes() -> None:
    assert api_base_url("https://api.deepseek.com/anthropic/") == "https://api.deepseek.com"
    assert api_base_url("https://api.deepseek.com/v1") == "https://api.deepseek.com"


async def test_deepseek_retries_429_and_5xx_then_succeeds(site: PageServer) -> None:
    statuses = [429, 503, 200]

    def reply(seen: Seen) -> Page:
        return as_json({"results": [{"title": "T", "url": "https://e.com/1"}]}, statuses.pop(0))

    site.route("/v1/tools/search", reply)
    found = await deepseek(site).search("q", 8)
    assert [h.url for h in found.hits] == ["https://e.com/1"] and statuses == []


async def test_deepseek_gives_up_after_two_retries(site: PageServer) -> None:
    site.route("/v1/tools/search", as_json({"error": {"message": "busy"}}, 408))
    with pytest.raises(WebError) as info:
        await deepseek(site).search("q", 8)
    assert info.value.code == "WEB_PROVIDER_ERROR" and "HTTP 408: busy" in info.value.message
    assert len(site.requests) == 3


async def test_deepseek_does_not_retry_a_balance_error(site: PageServer) -> None:
    site.route("/v1/tools/search", as_json({"error": {"message": "Insufficient Balance"}}, 402))
    with pytest.raises(WebError) as info:
        await deepseek(site).search("q", 8)
    assert "Insufficient Balance" in info.value.message and len(site.requests) == 1


async def test_deepseek_refuses_a_long_query_before_asking(site: PageServer) -> None:
    with pytest.raises(WebError) as info:
        await deepseek(site).search("x" * 129, 8)
    assert info.value.code == "WEB_INVALID_QUERY" and site.requests == []


async def test_deepseek_count_is_clamped(site: PageServer) -> None:
    site.route("/v1/tools/search", as_json({"results": []}))
    await deepseek(site).search("q", 99)
    assert json.loads(site.requests[0].body)["count"] == 50


async def test_deepseek_malformed_answers_are_provider_errors(site: PageServer) -> None:
    site.route("/v1/tools/search", as_json({"results": "nope"}))
    with pytest.raises(WebError) as info:
        await deepseek(site).search("q", 8)
    assert info.value.code == "WEB_PROVIDER_ERROR"


async def test_deepseek_fetch_returns_markdown(site: PageServer) -> None:
    site.route("/v1/tools/fetch", as_json({"title": "Article", "content": "# Article\n\nBody."}))
    page = await deepseek(site).fetch("https://example.com/article")
    assert (page.final_url, page.status, page.body) == (
        "https://example.com/article",
        200,
        "# Article\n\nBody.",
    )
    assert json.loads(site.requests[0].body) == {"url": "https://example.com/article"}


async def test_deepseek_fetch_refuses_bad_urls_unsent(site: PageServer) -> None:
    for url in ("file:///etc/passwd", "https://user:pw@example.com/", "https:///x"):
        with pytest.raises(WebError):
            await deepseek(site).fetch(url)
    assert site.requests == []


async def test_deepseek_fetch_reports_a_policy_rejection(site: PageServer) -> None:
    site.route(
        "/v1/tools/fetch",
        as_json({"error": {"message": "target rejected by security policy"}}, 403),
    )
    with pytest.raises(WebError) as info:
        await deepseek(site).fetch("https://example.com/blocked")
    assert "security policy" in info.value.message and len(site.requests) == 1


# --- SearXNG and Bing -----------------------------------------------------------------------

SEARX = {
    "query": "q",
    "answers": [{"answer": "Paris is the capital of France."}],
    "results": [
        {
            "url": "https://a.example/1",
            "title": "First",
            "content": "one",
            "publishedDate": "2024-05-01",
        },
        {"url": "https://a.example/2", "title": "", "content": ""},
        {"title": "no url"},
    ],
}


async def test_searxng_json(site: PageServer) -> None:
    site.route("/search", as_json(SEARX))
    found = await SearxngSearch(site.url("/")).search("capital of france", 8)
    assert found.answer == "Paris is the capital of France."
    assert found.hits == [
        SearchHit("https://a.example/1", "First", "one", "2024-05-01"),
        SearchHit("https://a.example/2"),
    ]
    assert site.requests[0].query == {"q": ["capital of france"], "format": ["json"]}


async def test_searxng_without_the_json_format(site: PageServer) -> None:
    site.route("/search", Page(b"Forbidden", status=403, type="text/html"))
    with pytest.raises(WebError) as info:
        await SearxngSearch(site.url("/")).search("q", 8)
    assert "json" in info.value.message and "settings.yml" in info.value.message


RSS = b"""<?xml version="1.0" encoding="utf-8" ?><rss version="2.0"><channel><title>Bing</title>
<item><title>Python docs</title><link>https://docs.python.org/3/</link>
<description>The official documentation.</description><pubDate>Tue, 04 Mar 2025 10:00:00 GMT</pubDate></item>
<item><title>No link</title></item></channel></rss>"""


async def test_bing_rss_only_when_listed(site: PageServer) -> None:
    site.route("/search", Page(RSS, type="application/rss+xml"))
    config = WebConfig(search_providers=["bing"], bing=msgspec_bing(site.url("/search")))
    found = await build_web(config, {}).search("python docs", max_results=8)
    assert found.hits == [
        SearchHit(
            "https://docs.python.org/3/", "Python docs", "The official documentation.", "2025-03-04"
        )
    ]
    assert site.requests[0].query["format"] == ["rss"]
    with pytest.raises(WebError) as info:  # not listed: never asked, even as a last resort
        await build_web(WebConfig(), {}).search("python docs", max_results=8)
    assert info.value.code == "WEB_PROVIDER_UNAVAILABLE" and len(site.requests) == 1


def msgspec_bing(url: str) -> Any:
    from tether.schemas.web import BingConfig

    return BingConfig(url=url)


# --- selection and fallback -----------------------------------------------------------------


def capability(registry: ProviderRegistry, search: list[str] | None) -> WebCapability:
    return WebCapability(registry, LocalFetcher(), search=search, fetch=None)


@pytest.mark.parametrize("reverse", [False, True])
async def test_selection_does_not_depend_on_registration_order(
    site: PageServer, reverse: bool
) -> None:
    site.route("/search", as_json(SEARX))
    providers = [deepseek(site), SearxngSearch(site.url("/"))]
    registry = ProviderRegistry()
    for p in reversed(providers) if reverse else providers:
        registry.add_search(p)
    found = await capability(registry, ["searxng"]).search("q", max_results=8)
    assert found.provider == "searxng"
    with pytest.raises(WebError) as info:
        await capability(registry, None).search("q", max_results=8)
    assert info.value.code == "WEB_PROVIDER_AMBIGUOUS"
    assert "deepseek, searxng" in info.value.message


async def test_one_registered_provider_needs_no_name(site: PageServer) -> None:
    site.route("/search", as_json(SEARX))
    registry = ProviderRegistry()
    registry.add_search(SearxngSearch(site.url("/")))
    assert (await capability(registry, None).search("q", max_results=8)).provider == "searxng"


async def test_fallback_order_skips_a_failing_provider(site: PageServer) -> None:
    site.route("/v1/tools/search", as_json({"error": {"message": "Insufficient Balance"}}, 402))
    site.route("/search", as_json(SEARX))
    config = WebConfig(search_providers=["deepseek", "searxng"])
    env = {
        "DEEPSEEK_API_KEY": "sk",
        "DEEPSEEK_BASE_URL": site.url("/"),
        "TETHER_SEARXNG_URL": site.url("/"),
    }
    found = await build_web(config, env).search("q", max_results=8)
    assert found.provider == "searxng"
    assert [r.path for r in site.requests] == ["/v1/tools/search", "/search"]


async def test_an_empty_answer_falls_through_too(site: PageServer) -> None:
    site.route("/v1/tools/search", as_json({"results": []}))
    site.route("/search", as_json(SEARX))
    env = {
        "DEEPSEEK_API_KEY": "sk",
        "DEEPSEEK_BASE_URL": site.url("/"),
        "TETHER_SEARXNG_URL": site.url("/"),
    }
    config = WebConfig(search_providers=["deepseek", "searxng"])
    assert (await build_web(config, env).search("q", max_results=8)).provider == "searxng"


async def test_every_provider_failing_names_each_failure(site: PageServer) -> None:
    site.route("/v1/tools/search", as_json({"error": {"message": "Insufficient Balance"}}, 402))
    site.route("/search", Page(b"down", status=500))
    env = {
        "DEEPSEEK_API_KEY": "sk",
        "DEEPSEEK_BASE_URL": site.url("/"),
        "TETHER_SEARXNG_URL": site.url("/"),
    }
    config = WebConfig(search_providers=["deepseek", "searxng"])
    with pytest.raises(WebError) as info:
        await build_web(config, env).search("q", max_results=8)
    assert info.value.code == "WEB_PROVIDER_ERROR"
    assert "deepseek:" in info.value.message and "searxng:" in info.value.message


async def test_a_longer_list_is_capped_and_flagged(site: PageServer) -> None:
    results = [{"url": f"https://e.com/{i}", "title": f"R{i}"} for i in range(12)]
    site.route("/search", as_json({"results": results}))
    found = await build_web(WebConfig(), {"TETHER_SEARXNG_URL": site.url("/")}).search(
        "q", max_results=8
    )
    assert len(found.hits) == 8 and found.capped
    exact = await build_web(WebConfig(), {"TETHER_SEARXNG_URL": site.url("/")}).search(
        "q", max_results=12
    )
    assert len(exact.hits) == 12 and not exact.capped


# --- configuration --------------------------------------------------------------------------


async def test_nothing_configured_is_unavailable_with_how_to() -> None:
    with pytest.raises(WebError) as info:
        await build_web(WebConfig(), {}).search("q", max_results=8)
    assert info.value.code == "WEB_PROVIDER_UNAVAILABLE"
    assert "TETHER_SEARXNG_URL" in info.value.message and "DEEPSEEK_API_KEY" in info.value.message
    with pytest.raises(WebError) as fetch:
        await build_web(WebConfig(fetch_provider="none"), {}).fetch("https://example.com/")
    assert (
        fetch.value.code == "WEB_PROVIDER_UNAVAILABLE" and "fetch_provider" in fetch.value.message
    )


async def test_a_configured_provider_that_cannot_work_says_why() -> None:
    config = WebConfig(search_providers=["deepseek"], fetch_provider="deepseek")
    w = build_web(config, {})
    with pytest.raises(WebError) as info:
        await w.search("q", max_results=8)
    assert info.value.code == "WEB_PROVIDER_CONFIGURED_MISSING"
    assert "DEEPSEEK_API_KEY is not set" in info.value.message
    with pytest.raises(WebError) as fetch:
        await w.fetch("https://example.com/")
    assert fetch.value.code == "WEB_PROVIDER_CONFIGURED_MISSING"
    assert await w.fetch_target("https://example.com/") is None  # no local check to plan


async def test_the_deepseek_fetch_provider_is_selected_by_name(site: PageServer) -> None:
    site.route("/v1/tools/fetch", as_json({"title": "T", "content": "remote markdown"}))
    env = {"DEEPSEEK_API_KEY": "sk", "DEEPSEEK_BASE_URL": site.url("/v1")}
    w = build_web(WebConfig(fetch_provider="deepseek"), env)
    assert await w.fetch_target("http://10.0.0.1/") is None  # fetched from DeepSeek's network
    page = await w.fetch("https://example.com/a")
    assert (page.body, page.provider) == ("remote markdown", "deepseek")


def test_the_config_table_decodes_and_rejects_typos() -> None:
    import msgspec

    raw = {
        "search_providers": ["searxng", "bing"],
        "fetch_provider": "local",
        "search_max_results": 5,
        "searxng": {"url": "http://localhost:8888"},
        "local": {"max_body_chars": 5000, "max_redirects": 0},
    }
    config = msgspec.convert(raw, WebConfig)
    assert config.local.max_body_chars == 5000 and config.search_providers == ["searxng", "bing"]
    for bad in (
        {"serch": True},
        {"search_max_results": 0},
        {"search_providers": ["bing", "bing"]},
        {"fetch_timeout_ms": 0},
    ):
        with pytest.raises(msgspec.ValidationError):
            msgspec.convert(bad, WebConfig)
    # Provider names are the registry's: checked when the config file is read.
    with pytest.raises(ConfigError) as info:
        parse_config('[web]\nsearch_providers = ["google"]\n')
    assert ":2: web.search_providers: invalid value 'google'" in str(info.value)
