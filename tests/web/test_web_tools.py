"""The web tools through the real tool pipeline (decode, plan, confirm, run, spill): every
model-facing string of the web tool suite asserted literally, the permission flow for loopback
targets, and `fetch_local`'s raw HTTP. Servers are loopback; the user is a recorded answer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from tests.support.web_servers import Page, PageServer
from tests.web.conftest import RecordingNetwork, StubResolver
from tether.engine.events import Event
from tether.engine.grants import Grants
from tether.engine.history import ToolCall, ToolResultMessage
from tether.engine.local.fallbacks import NoAsk, NoWeb
from tether.engine.local.file_system import LocalFileSystem
from tether.engine.local.processes import LocalTerminal
from tether.engine.local.spill import LocalSpill
from tether.engine.pipeline import Batch
from tether.engine.registry import Registry
from tether.engine.round_card import round_title
from tether.engine.seam import Capabilities, ConfirmDecision, ConfirmRequest, RoundCard, Web
from tether.engine.web.build import build_web
from tether.schemas.web import LocalFetchConfig, WebConfig
from tether.tools.web_guidance import (
    WEB_FETCH_GUIDANCE,
    WEB_GUIDANCE,
    WEB_SEARCH_GUIDANCE,
    web_guidance,
)
from tether.tools.web_tools import web_tools

pytestmark = pytest.mark.anyio


class User:
    """The person answering permission requests: records each batch, answers as told."""

    def __init__(self, verdict: str = "allow", remember: bool = False) -> None:
        self.verdict = verdict
        self.remember = remember
        self.asked: list[ConfirmRequest] = []

    async def confirm(
        self, batch: list[ConfirmRequest], card: RoundCard | None = None
    ) -> list[ConfirmDecision]:
        self.asked.extend(batch)
        by = "user (always)" if self.remember else "user (once)"
        return [ConfirmDecision(self.verdict, by=by, remember=self.remember) for _ in batch]  # type: ignore[arg-type]


class Harness:
    def __init__(self, tmp: Path, web: Web, config: WebConfig | None = None) -> None:
        self.user = User()
        self.grants = Grants()
        self.events: list[Event] = []
        self.registry = Registry(web_tools(config))
        self.mode = "ask"
        self.ctx = Capabilities(
            session_id="s",
            cwd=tmp,
            roots=[tmp],
            fs=LocalFileSystem(),
            terminal=LocalTerminal(),
            approval=self.user,
            ask=NoAsk(),
            spill=LocalSpill(tmp / "spill"),
            web=web,
        )

    async def run(self, *calls: tuple[str, dict[str, Any]]) -> list[ToolResultMessage]:
        batch = [ToolCall(f"c{i}", name, json.dumps(args)) for i, (name, args) in enumerate(calls)]

        async def emit(event: Event) -> None:
            self.events.append(event)

        return await Batch(
            batch,
            registry=self.registry,
            ctx=self.ctx,
            grants=self.grants,
            mode=self.mode,
            emit=emit,
        ).run()

    async def one(self, name: str, **args: Any) -> str:
        [result] = await self.run((name, args))
        return result.content


def searx(site: PageServer, data: dict[str, Any]) -> None:
    site.route("/search", Page(json.dumps(data).encode(), type="application/json"))


def harness(tmp_path: Path, site: PageServer, **config: Any) -> Harness:
    cfg = WebConfig(**config)
    return Harness(tmp_path, build_web(cfg, {"TETHER_SEARXNG_URL": site.url("/")}), cfg)


# --- the model-facing contract ----------------------------------------------------------------


def test_guidance_paragraphs_are_verbatim() -> None:
    assert WEB_SEARCH_GUIDANCE == (
        "Use the web_search tool to discover current information on the web. It returns an optional answer plus a list of source URLs. Follow up with web_fetch when you need the full content of a specific result, and cite the relevant URLs as markdown links."
    )
    assert WEB_FETCH_GUIDANCE == (
        "Use the web_fetch tool to retrieve the content of a specific HTTP(S) URL (for example a result from web_search). It returns the page content decoded to text. Cite the URL as a markdown link when you use its content."
    )
    assert f"{WEB_SEARCH_GUIDANCE}\n\n{WEB_FETCH_GUIDANCE}" == WEB_GUIDANCE
    assert web_guidance(WebConfig(search=False)) == WEB_FETCH_GUIDANCE


def test_schemas_take_only_query_and_url_and_budgets_come_from_config() -> None:
    tools = {t.name: t for t in web_tools(WebConfig(search_timeout_ms=1500, fetch_timeout_ms=2500))}
    assert list(tools["web_search"].parameters["properties"]) == ["query"]
    assert tools["web_search"].parameters["required"] == ["query"]
    assert list(tools["web_fetch"].parameters["properties"]) == ["url"]
    assert tools["web_fetch"].parameters["required"] == ["url"]
    assert (tools["web_search"].timeout, tools["web_fetch"].timeout) == (1.5, 2.5)
    assert tools["web_search"].read_only and tools["web_fetch"].read_only
    assert [t.name for t in web_tools(WebConfig(search=False, fetch_local=False))] == ["web_fetch"]
    assert [t.name for t in web_tools(WebConfig(fetch=False, fetch_local=False))] == ["web_search"]


async def test_blank_arguments(tmp_path: Path) -> None:
    h = Harness(tmp_path, NoWeb())
    assert await h.one("web_search", query="  ") == "Error: query must be a non-empty string"
    assert await h.one("web_fetch", url="") == "Error: url must be a non-empty string"


async def test_no_provider_still_offers_both_tools(tmp_path: Path) -> None:
    h = Harness(tmp_path, build_web(WebConfig(fetch_provider="none"), {}))
    assert {"web_search", "web_fetch"} <= {t.name for t in h.registry}
    search = await h.one("web_search", query="anything")
    assert search.startswith(
        "Error: WEB_PROVIDER_UNAVAILABLE: no web search provider is configured; set TETHER_SEARXNG_URL"
    )
    fetch = await h.one("web_fetch", url="https://example.com/")
    assert fetch == (
        "Error: WEB_PROVIDER_UNAVAILABLE: no web fetch provider is configured; "
        'set [web] fetch_provider = "local" (or "deepseek") in the config file'
    )


async def test_search_result_shape(tmp_path: Path, site: PageServer) -> None:
    searx(
        site,
        {
            "answers": ["Paris."],
            "results": [
                {
                    "url": "https://a.example/paris",
                    "title": "Paris [city]",
                    "content": "Capital\nof France",
                    "publishedDate": "2024-05-01",
                },
                {"url": "https://b.example/x (y)", "title": "", "content": ""},
                {"url": "https://c.example/", "title": "C", "content": "only a snippet"},
            ],
        },
    )
    text = await harness(tmp_path, site).one("web_search", query="capital of france")
    assert text == (
        "Paris.\n"
        "\n"
        "Sources:\n"
        "- [Paris \\[city\\]](https://a.example/paris) — Capital of France (2024-05-01)\n"
        "- [https://b.example/x (y)](https://b.example/x%20%28y%29)\n"
        "- [C](https://c.example/) — only a snippet\n"
        "\n"
        "Cite the relevant URLs above as markdown links in your answer."
    )


async def test_capped_search_result(tmp_path: Path, site: PageServer) -> None:
    searx(site, {"results": [{"url": f"https://e.com/{i}", "title": f"R{i}"} for i in range(5)]})
    text = await harness(tmp_path, site, search_max_results=3).one("web_search", query="many")
    assert text == (
        "Sources:\n- [R0](https://e.com/0)\n- [R1](https://e.com/1)\n- [R2](https://e.com/2)\n\n"
        "(Showing the first 3 sources. Refine the query for more.)\n"
        "Cite the relevant URLs above as markdown links in your answer."
    )


async def test_no_results(tmp_path: Path, site: PageServer) -> None:
    searx(site, {"results": []})
    assert await harness(tmp_path, site).one("web_search", query="zzz") == "No results found."


async def test_answer_without_sources(tmp_path: Path, site: PageServer) -> None:
    searx(site, {"answers": [{"answer": "42"}], "results": []})
    text = await harness(tmp_path, site).one("web_search", query="meaning")
    assert text == "42\n\nCite the relevant URLs above as markdown links in your answer."


async def test_search_errors_name_the_code(tmp_path: Path, site: PageServer) -> None:
    site.route("/search", Page(b"boom", status=500))
    text = await harness(tmp_path, site).one("web_search", query="q")
    assert text == "Error: WEB_PROVIDER_ERROR: searxng HTTP 500: boom"


# --- web_fetch ------------------------------------------------------------------------------


async def test_fetch_result_shape_and_consent_for_loopback(
    tmp_path: Path, site: PageServer
) -> None:
    site.route("/doc", Page(b"<h1>Doc</h1><p>Body <b>text</b>.</p>", type="text/html"))
    h = harness(tmp_path, site)
    text = await h.one("web_fetch", url=site.url("/doc"))
    assert text == (
        f"[approval] user (once)\nFetched {site.url('/doc')} (HTTP 200)\n\n# Doc\n\nBody **text**."
    )
    [asked] = h.user.asked
    assert asked.title == f"Fetch {site.url('/doc')} (loopback host {site.host_port})"
    assert asked.scope == site.host_port and asked.kind == "fetch"


async def test_odd_spellings_of_hosts_and_charsets_get_clear_errors(
    tmp_path: Path, site: PageServer
) -> None:
    """`localhost.` is `localhost` (asked, then fetched); an IPv4 address in octal or hex is
    refused in words; a charset naming one of Python's transform codecs is not used."""
    site.route("/doc", Page(b"plain words", type="text/plain"))
    port = site.host_port.rsplit(":", 1)[1]
    h = harness(tmp_path, site)
    dotted = await h.one("web_fetch", url=f"http://localhost.:{port}/doc")
    assert dotted.startswith("[approval] user (once)\nFetched") and "plain words" in dotted
    for odd in ("0177.0.0.1", "0x7f.0.0.1", "2130706433", "127.1"):
        refused = await h.one("web_fetch", url=f"http://{odd}:{port}/doc")
        assert refused.startswith(
            f"Error: WEB_INVALID_URL: {odd} is an address written in a form"
        ), refused
    for charset in ("rot13", "zlib", "idna", "base64"):
        site.route(f"/{charset}", Page(b"caf\xc3\xa9 ok", type=f"text/plain; charset={charset}"))
        text = await h.one("web_fetch", url=site.url(f"/{charset}"))
        assert "café ok" in text, text  # the body's own UTF-8, not a Python exception


async def test_a_round_of_fetches_is_titled_once(tmp_path: Path, site: PageServer) -> None:
    for name in ("/a", "/b"):
        site.route(name, Page(b"page", type="text/plain"))
    h = harness(tmp_path, site)
    await h.run(("web_fetch", {"url": site.url("/a")}), ("web_fetch", {"url": site.url("/b")}))
    requests = h.user.asked
    assert round_title(requests, "fetch") == f"Fetch {site.url('/a')}, {site.url('/b')}"


async def test_a_non_2xx_fetch_is_a_result(tmp_path: Path, site: PageServer) -> None:
    site.route("/missing", Page(b"nothing here", status=404))
    text = await harness(tmp_path, site).one("web_fetch", url=site.url("/missing"))
    assert text.startswith(
        f"[approval] user (once)\nFetched {site.url('/missing')} (HTTP 404)\n\nnothing here"
    )


async def test_truncation_sentence(tmp_path: Path, site: PageServer) -> None:
    site.route("/long", Page(b"a" * 300))
    h = harness(tmp_path, site, local=LocalFetchConfig(max_body_chars=100))
    text = await h.one("web_fetch", url=site.url("/long"))
    assert text == (
        f"[approval] user (once)\nFetched {site.url('/long')} (HTTP 200)\n\n{'a' * 100}\n\n"
        "(Content truncated. Fetch a more specific URL or section for the full text.)"
    )


async def test_fetch_errors(tmp_path: Path, site: PageServer) -> None:
    site.route("/img", Page(b"\x89PNG", type="image/png"))
    h = harness(tmp_path, site)
    assert (await h.one("web_fetch", url="ftp://example.com/x")).startswith(
        "Error: WEB_INVALID_URL: only http and https URLs can be fetched"
    )
    assert (await h.one("web_fetch", url=site.url("/img"))).startswith(
        f"Error: WEB_UNSUPPORTED_CONTENT_TYPE: {site.url('/img')} answered image/png"
    )


async def test_a_rejected_loopback_fetch_sends_nothing(tmp_path: Path, site: PageServer) -> None:
    site.route("/p", Page(b"secret"))
    h = harness(tmp_path, site)
    h.user.verdict = "reject"
    [result] = await h.run(("web_fetch", {"url": site.url("/p")}))
    assert result.is_error and "REJECTED" in result.content
    assert site.connections == 0


async def test_allow_all_still_asks_before_reaching_a_loopback_host(
    tmp_path: Path, site: PageServer
) -> None:
    site.route("/p", Page(b"secret"))
    h = harness(tmp_path, site)
    h.mode, h.user.verdict = "allow-all", "reject"
    results = await h.run(
        ("web_fetch", {"url": site.url("/p")}), ("fetch_local", {"url": site.url("/p")})
    )
    assert all(r.is_error and "REJECTED" in r.content for r in results)
    assert site.connections == 0  # nothing reached the user's network
    # The user's own "always" answer covers that host and port, in allow-all too.
    h.user.verdict, h.user.remember = "allow", True
    await h.one("web_fetch", url=site.url("/p"))
    asked = len(h.user.asked)
    assert (await h.one("web_fetch", url=site.url("/p"))).startswith("[approval] grant (session)")
    assert len(h.user.asked) == asked


async def test_always_allow_covers_exactly_that_host_and_port(
    tmp_path: Path, site: PageServer
) -> None:
    site.route("/p", Page(b"one"))
    h = harness(tmp_path, site)
    h.user.remember = True
    await h.one("web_fetch", url=site.url("/p"))
    h.user.remember = False
    assert (await h.one("web_fetch", url=site.url("/p?again"))).startswith(
        "[approval] grant (session)\n"
    )
    assert len(h.user.asked) == 1
    with PageServer() as other:
        other.route("/p", Page(b"two"))
        await h.one("web_fetch", url=other.url("/p"))  # another port: asked again
    assert [a.scope for a in h.user.asked] == [site.host_port, other.host_port]


async def test_a_public_fetch_asks_nobody(tmp_path: Path, network: RecordingNetwork) -> None:
    resolver = StubResolver({"docs.example": [["93.184.216.34"]]})
    h = Harness(tmp_path, build_web(WebConfig(), {}, resolver=resolver, network=network))
    text = await h.one("web_fetch", url="https://docs.example/page")
    assert h.user.asked == []
    assert text.startswith("Error: WEB_PROVIDER_ERROR")  # the test network reaches no one
    assert network.connects == [("93.184.216.34", 443)]  # the address the plan checked


async def test_a_big_page_spills_with_a_preview_and_path(tmp_path: Path, site: PageServer) -> None:
    body = "".join(f"line {i}: " + "w" * 60 + "\n" for i in range(900))
    site.route("/big", Page(body.encode()))
    text = await harness(tmp_path, site).one("web_fetch", url=site.url("/big"))
    assert text.startswith(
        f"[approval] user (once)\nFetched {site.url('/big')} (HTTP 200)\n\nline 0: "
    )
    assert "read it with read_file" in text and len(text) < 6000
    [spilled] = list((tmp_path / "spill").iterdir())
    assert spilled.read_text() == f"Fetched {site.url('/big')} (HTTP 200)\n\n{body}"
    assert str(spilled) in text


# --- fetch_local ----------------------------------------------------------------------------


async def test_fetch_local_methods_headers_and_body(tmp_path: Path, site: PageServer) -> None:
    def echo(seen: Any) -> Page:
        doc = {"method": seen.method, "body": seen.body.decode(), "x": seen.headers.get("x-token")}
        return Page(
            json.dumps(doc).encode(),
            status=201,
            type="application/json",
            headers={"X-Reply": "yes"},
        )

    site.route("/api", echo)
    h = harness(tmp_path, site)
    text = await h.one(
        "fetch_local", url=site.url("/api"), method="POST", headers={"X-Token": "t1"}, body="hi"
    )
    assert text.startswith(
        f"[approval] user (once)\nHTTP 201 Created\nURL: {site.url('/api')}\n\nHeaders:\n"
    )
    assert "\nx-reply: yes\n" in text.lower()
    assert '{"method": "POST", "body": "hi", "x": "t1"}' in text
    [asked] = h.user.asked
    assert (
        asked.title == f"POST {site.url('/api')} (loopback host {site.host_port}, cleartext HTTP)"
    )
    assert asked.scope == f"POST {site.host_port}"
    for method in ("PUT", "DELETE"):
        assert f'"method": "{method}"' in await h.one(
            "fetch_local", url=site.url("/api"), method=method
        )


async def test_fetch_local_binary_and_errors(tmp_path: Path, site: PageServer) -> None:
    site.route("/img", Page(b"\x89PNG\r\n\x1a\n" + bytes(100), type="image/png"))
    h = harness(tmp_path, site)
    assert "Body: 108 bytes of image/png (binary, not shown)" in await h.one(
        "fetch_local", url=site.url("/img")
    )
    [bad] = await h.run(("fetch_local", {"url": "http://169.254.169.254/latest/"}))
    assert bad.is_error and bad.content.startswith("error [WEB_BLOCKED_URL]")


async def test_fetch_local_consent_rules(tmp_path: Path, network: RecordingNetwork) -> None:
    """Planning only (nothing runs): which calls ask, and what an "always" answer covers."""
    resolver = StubResolver({"api.example": [["93.184.216.34"]]})
    h = Harness(tmp_path, build_web(WebConfig(), {}, resolver=resolver, network=network))
    tool = h.registry.get("fetch_local")
    assert tool is not None

    async def plan(**args: Any) -> tuple[bool, str, str]:
        p = await tool.plan(h.ctx, tool.decode(msgspec.json.encode(args)), "code")
        return p.confirm, p.title, p.scope

    assert await plan(url="https://api.example/v1") == (
        False,
        "GET https://api.example/v1",
        "api.example:443",
    )
    assert await plan(url="http://api.example/v1") == (
        True,
        "GET http://api.example/v1 (cleartext HTTP)",
        "api.example:80",
    )
    assert await plan(url="https://api.example/v1", method="DELETE") == (
        True,
        "DELETE https://api.example/v1",
        "DELETE api.example:443",
    )
    assert network.connects == []
