"""The local fetch provider (seed 003) through `ctx.web`, against loopback servers: pages,
redirects, caps, slow and binary bodies, charsets, abort, limits validated at construction."""

from __future__ import annotations

import codecs

import anyio
import msgspec
import pytest

from tests.support.web_servers import Page, PageServer
from tests.web.conftest import RecordingNetwork
from tether.engine.web.build import build_web
from tether.engine.web.capability import WebCapability
from tether.engine.web.types import FetchResult
from tether.errors import WebError
from tether.schemas.web import LocalFetchConfig, WebConfig

pytestmark = pytest.mark.anyio


def web(network: RecordingNetwork | None = None, **local: object) -> WebCapability:
    config = WebConfig(local=LocalFetchConfig(**local))  # type: ignore[arg-type]
    return build_web(config, {}, network=network)


async def fetch(w: WebCapability, url: str) -> FetchResult:
    """As the tool does it: check the destination (the plan), then fetch that target."""
    return await w.fetch(url, target=await w.fetch_target(url))


async def code_of(w: WebCapability, url: str) -> str:
    with pytest.raises(WebError) as info:
        await fetch(w, url)
    return info.value.code


HTML = (
    b"<!doctype html><html><head><title>Guide</title><script>track()</script></head><body>"
    b"<nav><a href='/'>Home</a></nav><main><h1>Install</h1><p>Run <code>pip install x</code>"
    b" then read <a href='/next'>the next page</a>.</p></main><footer>(c)</footer></body></html>"
)


async def test_html_is_rendered_to_markdown_with_absolute_links(site: PageServer) -> None:
    site.route("/guide", Page(HTML, type="text/html; charset=utf-8"))
    page = await fetch(web(), site.url("/guide"))
    assert page.status == 200 and page.final_url == site.url("/guide")
    assert page.body == (
        f"# Install\n\nRun `pip install x` then read [the next page]({site.url('/next')})."
    )
    assert page.media_type == "text/markdown" and not page.truncated
    ua = site.requests[0].headers["user-agent"]
    assert ua.startswith("tether/") and "Mozilla" not in ua  # a product UA, no disguise


async def test_text_and_json_pass_through_and_a_404_is_a_result(site: PageServer) -> None:
    site.route("/t", Page(b"plain *text*\n"))
    site.route("/j", Page(b'{"a": 1}', type="application/json"))
    site.route("/gone", Page(b"no such page", status=404, type="text/plain"))
    w = web()
    assert (await fetch(w, site.url("/t"))).body == "plain *text*\n"
    assert (await fetch(w, site.url("/j"))).body == '{"a": 1}'
    gone = await fetch(w, site.url("/gone"))
    assert (gone.status, gone.body) == (404, "no such page")


async def test_same_origin_redirects_are_followed(site: PageServer) -> None:
    site.route("/old", Page(status=301, headers={"Location": "/mid"}))
    site.route("/mid", Page(status=302, headers={"Location": site.url("/new")}))
    site.route("/new", Page(b"arrived"))
    page = await fetch(web(), site.url("/old"))
    assert (page.final_url, page.body) == (site.url("/new"), "arrived")


async def test_a_cross_origin_redirect_is_blocked(site: PageServer) -> None:
    with PageServer() as other:
        other.route("/x", Page(b"elsewhere"))
        site.route("/jump", Page(status=302, headers={"Location": other.url("/x")}))
        with pytest.raises(WebError) as info:
            await fetch(web(), site.url("/jump"))
        assert other.requests == []
    assert info.value.code == "WEB_REDIRECT_BLOCKED"
    assert other.url("/x") in info.value.message


async def test_a_redirect_loop_stops_at_the_hop_cap(site: PageServer) -> None:
    site.route("/loop", Page(status=302, headers={"Location": "/loop"}))
    with pytest.raises(WebError) as info:
        await fetch(web(max_redirects=3), site.url("/loop"))
    assert info.value.code == "WEB_REDIRECT_BLOCKED"
    assert "maximum of 3" in info.value.message
    assert len(site.requests) == 4  # the first request and exactly three redirects


async def test_max_redirects_zero_follows_none(site: PageServer) -> None:
    site.route("/a", Page(status=302, headers={"Location": "/b"}))
    assert await code_of(web(max_redirects=0), site.url("/a")) == "WEB_REDIRECT_BLOCKED"
    assert len(site.requests) == 1


async def test_a_declared_huge_body_is_refused_before_reading(site: PageServer) -> None:
    site.route("/big", Page(b"x" * 100, length=10_000_000))
    assert await code_of(web(), site.url("/big")) == "WEB_FETCH_TOO_LARGE"


async def test_a_streamed_body_over_the_byte_cap_is_refused(site: PageServer) -> None:
    site.route("/stream", Page(chunks=[b"y" * 4096] * 40))
    assert await code_of(web(max_response_bytes=100_000), site.url("/stream")) == (
        "WEB_FETCH_TOO_LARGE"
    )


async def test_the_character_cap_truncates_and_says_so(site: PageServer) -> None:
    site.route("/long", Page(b"z" * 5000))
    page = await fetch(web(max_body_chars=1000), site.url("/long"))
    assert page.body == "z" * 1000 and page.truncated


async def test_a_slow_body_hits_the_timeout_backstop(site: PageServer) -> None:
    site.route("/slow", Page(chunks=[b"first", b"never"], stall=True))
    assert await code_of(web(timeout_ms=300), site.url("/slow")) == "WEB_FETCH_TIMEOUT"
    assert site.closed.wait(5)  # the connection was closed, not left dangling


async def test_cancelling_aborts_the_read_and_closes_the_connection(site: PageServer) -> None:
    site.route("/slow", Page(chunks=[b"first", b"never"], stall=True))
    w = web()
    target = await w.fetch_target(site.url("/slow"))
    with anyio.move_on_after(0.3) as scope:
        await w.fetch(site.url("/slow"), target=target)
    assert scope.cancelled_caught
    assert site.closed.wait(5)


async def test_closing_the_capability_aborts_running_fetches(site: PageServer) -> None:
    site.route("/slow", Page(chunks=[b"first", b"never"], stall=True))
    w = web()
    target = await w.fetch_target(site.url("/slow"))
    errors: list[WebError] = []

    async def run() -> None:
        try:
            await w.fetch(site.url("/slow"), target=target)
        except WebError as exc:
            errors.append(exc)

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        while not site.requests:
            await anyio.sleep(0.01)
        await w.aclose()
    assert [e.code for e in errors] == ["WEB_ABORTED"]
    with pytest.raises(WebError) as info:
        await w.fetch(site.url("/slow"), target=target)
    assert info.value.code == "WEB_ABORTED"


@pytest.mark.parametrize(
    ("content_type", "body"),
    [("image/png", b"\x89PNG\r\n\x1a\n"), ("application/octet-stream", b"\x00\x01"), (None, b"?")],
)
async def test_binary_and_untyped_bodies_are_refused(
    site: PageServer, content_type: str | None, body: bytes
) -> None:
    site.route("/bin", Page(body, type=content_type))
    assert await code_of(web(), site.url("/bin")) == "WEB_UNSUPPORTED_CONTENT_TYPE"


async def test_an_empty_204_is_a_result(site: PageServer) -> None:
    site.route("/none", Page(b"", status=204, type=None))
    page = await fetch(web(), site.url("/none"))
    assert (page.status, page.body) == (204, "")


CAFE = "Café crème, naïve résumé"


@pytest.mark.parametrize(
    ("content_type", "body", "expected"),
    [
        ("text/plain; charset=iso-8859-1", CAFE.encode("latin-1"), CAFE),
        ("text/plain; charset=windows-1251", "Привет, мир".encode("cp1251"), "Привет, мир"),
        (
            "text/html",
            b'<meta charset="shift_jis"><p>' + "日本語のページ".encode("shift_jis"),
            "日本語のページ",
        ),
        (
            "text/html",
            b'<meta http-equiv="Content-Type" content="text/html; charset=koi8-r"><p>'
            + "Кириллица".encode("koi8-r"),
            "Кириллица",
        ),
        (  # an unknown header label is skipped: the document's own declaration decides
            "text/html; charset=no-such-charset",
            b"<meta charset='iso-8859-15'><p>" + "prix: 5 €".encode("iso-8859-15"),
            "prix: 5 €",
        ),
        ("text/plain", codecs.BOM_UTF16_LE + "bom wins".encode("utf-16-le"), "bom wins"),
        ("text/plain", "undeclared UTF-8: ☃".encode(), "undeclared UTF-8: ☃"),
        (  # nothing declared, not UTF-8: detected
            "text/plain",
            ("Съешь же ещё этих мягких французских булок, да выпей чаю. " * 4).encode("cp1251"),
            "Съешь же ещё этих мягких французских булок, да выпей чаю.",
        ),
    ],
    ids=[
        "header",
        "header-cp1251",
        "meta",
        "meta-http-equiv",
        "bad-label",
        "bom",
        "utf8",
        "detect",
    ],
)
async def test_charsets(site: PageServer, content_type: str, body: bytes, expected: str) -> None:
    site.route("/c", Page(body, type=content_type))
    page = await fetch(web(), site.url("/c"))
    assert expected in page.body


@pytest.mark.parametrize(
    ("url", "code"),
    [
        ("ftp://example.com/file", "WEB_INVALID_URL"),
        ("file:///etc/passwd", "WEB_INVALID_URL"),
        ("https://user:secret@example.com/", "WEB_BLOCKED_URL"),
        ("https:///no-host", "WEB_INVALID_URL"),
        ("http://example.com:99999/", "WEB_INVALID_URL"),
        ("https://example.com/" + "a" * 2100, "WEB_INVALID_URL"),
    ],
)
async def test_urls_are_validated_before_any_lookup(
    url: str, code: str, network: RecordingNetwork
) -> None:
    w = web(network)
    with pytest.raises(WebError) as info:
        await w.fetch(url)
    assert info.value.code == code
    assert network.connects == []


async def test_loopback_without_an_approved_target_is_refused_unsent(
    site: PageServer, network: RecordingNetwork
) -> None:
    site.route("/p", Page(b"private"))
    with pytest.raises(WebError) as info:
        await web(network).fetch(site.url("/p"))  # no target: nobody approved it
    assert info.value.code == "WEB_BLOCKED_URL" and site.host_port in info.value.message
    assert network.connects == [] and site.connections == 0


async def test_a_target_for_another_host_approves_nothing(
    site: PageServer, network: RecordingNetwork
) -> None:
    w = web(network)
    with PageServer() as other:
        approved = await w.fetch_target(other.url("/"))
        with pytest.raises(WebError) as info:
            await w.fetch(site.url("/p"), target=approved)
    assert info.value.code == "WEB_BLOCKED_URL"
    assert network.connects == []


@pytest.mark.parametrize(
    "bad",
    [
        {"max_url_length": 0},
        {"max_response_bytes": -1},
        {"max_body_chars": float("inf")},
        {"timeout_ms": float("nan")},
        {"timeout_ms": 2**31},
        {"max_redirects": -1},
        {"max_redirects": 1.5},
        {"max_redirects": True},
    ],
)
def test_limits_are_validated_at_construction(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        LocalFetchConfig(**bad)  # type: ignore[arg-type]
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert({"local": bad}, WebConfig)


def test_seed_defaults() -> None:
    limits = LocalFetchConfig()
    assert (
        limits.max_url_length,
        limits.max_response_bytes,
        limits.max_body_chars,
        limits.timeout_ms,
        limits.max_redirects,
    ) == (2048, 5_000_000, 100_000, 30_000, 5)
    assert (WebConfig().search_max_results, WebConfig().fetch_timeout_ms) == (8, 30_000)
    assert WebConfig().search_timeout_ms == 30_000
