"""Hostile HTML: markup built to make a parser quadratic converts in time linear in its size (a
ratio against an ordinary page of the same size, converted in the same run), keeps the text
after the trap, and a fetch that times out stops its conversion instead of leaving a thread
busy."""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import cache

import anyio
import pytest

from tests.support.web_servers import Page, PageServer
from tether.engine.web.build import build_web
from tether.engine.web.html_markdown import html_to_markdown
from tether.engine.web.html_tree import NESTING, bound_nesting
from tether.schemas.web import LocalFetchConfig, WebConfig

SIZE = 300_000  # characters per page: the old parser took 25 s on `</a` repeated at 600,000

# Each repeats a piece to SIZE characters, then says "the end".
TRAPS: dict[str, str] = {
    "stray </a": "</a",
    "unclosed <em> and stray </b>": "<em></b>",
    "unclosed <div>": "<div>",
    "self-closing <div/>": "<div/>",
    "<a><p> misnested": "<a><p>x",
    "nested tables": "<table><tr><td>",
    "formatting re-opened at every <p>": "<b class=n><p>x",
    "unclosed <span title=...>": '<span title="a>b">',
}


def ordinary_page(size: int) -> str:
    section = (
        "<h2>Section</h2><p>Some <b>bold</b> and <a href='/x'>a link</a> in a paragraph of text "
        "that goes on for a while.</p><ul><li>one<li>two <code>code</code></ul>"
        "<table><tr><th>a<th>b<tr><td>1<td>2</table><pre><code>x = 1\n</code></pre>"
    )
    return "<html><body>" + section * (size // len(section)) + "</body></html>"


def trap(piece: str, size: int = SIZE) -> str:
    return piece * (size // len(piece)) + "<p>the end</p>"


def fastest(convert: Callable[[], object], runs: int = 3) -> float:
    """The least CPU time of this thread over `runs` conversions: what other processes do (the
    suite runs in parallel) does not count, as wall-clock time would."""
    best = float("inf")
    for _ in range(runs):
        started = time.thread_time()
        convert()
        best = min(best, time.thread_time() - started)
    return best


@cache
def ordinary_floor() -> float:
    """An ordinary page of the traps' size, converted once per process (CPU time does not
    depend on when it is measured)."""
    page = ordinary_page(SIZE)
    return fastest(lambda: html_to_markdown(page))


def timed(html: str) -> tuple[float, str]:
    started = time.thread_time()
    text = html_to_markdown(html)
    return time.thread_time() - started, text


@pytest.mark.parametrize("name", list(TRAPS))
def test_a_trap_converts_in_linear_time_and_keeps_the_text_after_it(name: str) -> None:
    html = trap(TRAPS[name])
    floor = ordinary_floor()
    took, text = timed(html)
    if took >= 8 * floor:  # measured again before it counts
        took = min(took, timed(html)[0])
    assert "the end" in text
    # Quadratic parsing made each of these 20-2000x the ordinary page; linear ones stay near it.
    assert took < 8 * floor, f"{name}: {took:.2f} s against {floor:.2f} s for an ordinary page"


def test_quadrupling_a_trap_does_not_square_its_time() -> None:
    piece = TRAPS["unclosed <em> and stray </b>"]
    small_page, large_page = trap(piece, SIZE // 2), trap(piece, SIZE * 2)
    small = large = float("inf")
    for _ in range(4):  # interleaved, so a busy moment of the machine hits both alike
        small = min(small, fastest(lambda: html_to_markdown(small_page), runs=1))
        large = min(large, fastest(lambda: html_to_markdown(large_page), runs=1))
    assert large < 10 * small  # 4x the input: quadratic would be 16x


def test_ordinary_markup_passes_the_nesting_bound_untouched() -> None:
    page = (
        "<html><head><script>var t = '" + "<div>" * 500 + "';</script>"
        "<style>a > b { }</style><title><div></title></head><body><!-- " + "<div>" * 500 + " -->"
        "<svg>" + "<path d='M0'/>" * 500 + "</svg>"
        "<textarea>" + "<span>" * 500 + "</textarea>" + ordinary_page(20_000) + "</body></html>"
    )
    assert bound_nesting(page) is page


def test_the_nesting_bound_keeps_closing_and_reopening_elements() -> None:
    deep = "<div>" * (NESTING + 50) + "deep" + "</div>" * (NESTING + 50) + "<div><p>after</p></div>"
    bounded = bound_nesting(deep)
    assert bounded.count("<div>") == NESTING + 1
    assert html_to_markdown(deep) == "deep\n\nafter"


@pytest.mark.anyio
async def test_a_fetch_that_times_out_stops_converting_the_page() -> None:
    html = trap("<b class=n><p>x", 2_000_000)
    started = time.process_time()
    html_to_markdown(html)
    whole = time.process_time() - started  # CPU time of the whole conversion, this machine

    with PageServer() as site:
        site.route("/big", Page(body=html.encode(), type="text/html"))
        web = build_web(WebConfig(local=LocalFetchConfig(max_response_bytes=5_000_000)), {})
        url = site.url("/big")
        target = await web.fetch_target(url)
        with anyio.move_on_after(whole / 10) as scope:
            await web.fetch(url, target=target)
        assert scope.cancelled_caught
        await web.aclose()

    await anyio.sleep(0.2)  # the conversion looks at its stop event every few thousand nodes
    before = time.process_time()
    await anyio.sleep(whole / 2)
    spent = time.process_time() - before
    # A conversion left running would spend about all of this interval on a core.
    assert spent < whole / 8, f"{spent:.2f} s of CPU after the timeout (whole page: {whole:.2f} s)"
