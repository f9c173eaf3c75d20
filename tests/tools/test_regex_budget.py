"""A model's regex can never stall tether: on the Python engine (where ripgrep is missing, or
for the patterns ripgrep's dialect cannot run) `regex_files` matches within a time budget, off
the event loop, stops when its call is cancelled, and matches exactly what Python's `re`
matches."""

from __future__ import annotations

import re
import threading
import warnings
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.toolctx import make_ctx, run
from tether.engine.local import line_regex
from tether.engine.local.line_regex import LineRegex, RegexTooSlow, regex_source
from tether.engine.local.local_search import LocalSearch
from tether.engine.seam import Capabilities
from tether.errors import ToolError
from tether.tools import search
from tether.tools.search import regex_files

pytestmark = pytest.mark.anyio

CATASTROPHIC = "(a+)+$"  # against many `a`s and a `b`: 2**n ways to fail in `re`
# The same with a look-ahead: ripgrep's dialect has none, so even with ripgrep installed it runs
# on the Python engine.
CATASTROPHIC_LOOKAHEAD = "(?=a)(a+)+$"
SLOW_LINE = "a" * 50_000 + "b"


@pytest.fixture
def ctx(project: Path, tmp_path: Path) -> Capabilities:
    return make_ctx(project, tmp_path / "spill", search=LocalSearch(use_rg=False))


# --- the budget -----------------------------------------------------------------------------


async def test_a_catastrophic_regex_returns_an_error_with_what_it_found(
    ctx: Capabilities, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(search, "MATCH_BUDGET", 0.3)
    (project / "a_hits.txt").write_text("aaa\nbbb\naa\n")
    (project / "b_slow.txt").write_text(f"a\n{SLOW_LINE}\naaaa\n")
    with pytest.raises(ToolError) as e:
        await run(ctx, regex_files, pattern=CATASTROPHIC, glob="*.txt")
    assert e.value.code == "TOOL_TIMEOUT"
    lines = e.value.message.splitlines()
    assert lines[0] == (
        "regex /(a+)+$/ is too slow: it used up the 0.3 s one search may spend matching "
        "(stopped in b_slow.txt; 2 files searched). Simplify it: avoid nested quantifiers such "
        "as `(a+)+` and alternatives that can match the same text such as `(a|aa)*`; or search "
        "fewer files with `path` or `glob`."
    )
    assert lines[1:] == [
        "3 matching lines found before it stopped:",
        "a_hits.txt:1: aaa",
        "a_hits.txt:3: aa",
        "b_slow.txt:1: a",
    ]


async def test_the_budget_is_for_the_whole_call() -> None:
    with LineRegex(CATASTROPHIC, budget=0.2) as rx:
        with pytest.raises(RegexTooSlow):
            await rx.grep(SLOW_LINE.encode(), 10)
        assert rx.left <= 0
        with pytest.raises(RegexTooSlow) as e:  # the next file is easy, but nothing is left
            await rx.grep(b"aaa\n", 10)
        assert e.value.hits == []


async def test_a_slow_match_leaves_the_event_loop_serving_and_stops_on_cancel(
    ctx: Capabilities, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(search, "MATCH_BUDGET", 120.0)
    (project / "slow.txt").write_text(SLOW_LINE + "\n")
    started = threading.Event()
    threads: list[threading.Thread] = []
    original = LineRegex._search

    def observed(self: LineRegex, job: Any) -> None:
        threads.append(threading.current_thread())
        started.set()
        original(self, job)

    monkeypatch.setattr(LineRegex, "_search", observed)
    finished: list[object] = []

    async def call() -> None:
        finished.append(await run(ctx, regex_files, pattern=CATASTROPHIC, path="slow.txt"))

    async with anyio.create_task_group() as tg:
        tg.start_soon(call)
        await anyio.to_thread.run_sync(started.wait, 30)
        for _ in range(20):  # with `re` the loop would get no turn until the match ended
            await anyio.sleep(0.01)
        assert finished == [] and threads[0].is_alive()
        tg.cancel_scope.cancel()
    assert finished == []
    # The matching itself stops too (within its time slice), not after the 120 s budget.
    await anyio.to_thread.run_sync(threads[0].join, 30)
    assert not threads[0].is_alive()


async def test_the_matching_thread_ends_with_the_call(ctx: Capabilities, project: Path) -> None:
    (project / "a.txt").write_text("hit\n")
    before = set(threading.enumerate())
    got = await run(ctx, regex_files, pattern="hit")
    assert got.text.startswith("a.txt:1: hit")
    for t in set(threading.enumerate()) - before:
        if t.name == "tether-regex":
            await anyio.to_thread.run_sync(t.join, 30)
            assert not t.is_alive()


# --- the same matches as re -----------------------------------------------------------------


def re_grep(pattern: str, text: str) -> list[tuple[int, str]]:
    rx = re.compile(pattern)
    return [(n, line) for n, line in enumerate(text.split("\n"), 1) if rx.search(line)]


def compiles(pattern: str) -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Possible nested set": what re makes of it is the spec
        try:
            re.compile(pattern)
        except re.error:
            return False
    return True


_PIECES = [
    "a", "b", ".", "*", "+", "?", "^", "$", "|", "(", ")", r"\b", r"\s", r"\d", r"\w", "[ab]",
    "[^a]", "{2}", "{,}", "{}", "{e<=1}", "{1,2}", "[[:alpha:]]", "[:]", "(?i)", "(?x)", " ",
    "#", "\n", "(?=a)", "(?<!b)", "(?>a)", "a*+", r"\Z", r"\A", "(?:", "(?P<g>a)", "(?P=g)",
    r"\{", r"\[", "(?#[{)", r"\N{DIGIT ONE}", "(?m)", "(?s:.)",
]  # fmt: skip
_patterns = st.lists(st.sampled_from(_PIECES), min_size=1, max_size=7).map("".join)
_texts = st.text(alphabet="ab :[]{}#1A\n", max_size=60)


@settings(max_examples=300, deadline=None)
@given(pattern=_patterns.filter(compiles), text=_texts)
def test_matches_are_what_re_matches(pattern: str, text: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = re_grep(pattern, text)
        with LineRegex(pattern) as rx:
            assert anyio.run(rx.grep, text.encode(), 10_000) == want, pattern


@settings(max_examples=100, deadline=None)
@given(pattern=_patterns.filter(compiles), lines=st.lists(_texts, max_size=40))
def test_lines_tried_in_blocks_match_what_re_matches(pattern: str, lines: list[str]) -> None:
    text = "\n".join(lines)
    with warnings.catch_warnings(), pytest.MonkeyPatch.context() as mp:
        warnings.simplefilter("ignore")
        mp.setattr(line_regex, "BLOCK_CHARS", 16)  # many blocks, of a few lines each
        with LineRegex(pattern) as rx:
            assert anyio.run(rx.grep, text.encode(), 10_000) == re_grep(pattern, text), pattern


def test_limit_and_line_numbers() -> None:
    text = b"x\nhit 1\n\nhit 2\r\nhit 3\n"
    with LineRegex("hit") as hit, LineRegex("^$") as empty:
        assert anyio.run(hit.grep, text, 2) == [(2, "hit 1"), (4, "hit 2\r")]
        assert anyio.run(empty.grep, text, 9) == [(3, ""), (6, "")]


@pytest.mark.parametrize(
    ("pattern", "source"),
    [
        ("a{2}b{,3}c{1,}", "a{2}b{,3}c{1,}"),  # repeats stay
        ("a{e<=1}", r"a\{e<=1}"),  # `re` reads a literal `{`; `regex` would match fuzzily
        ("a{}b{ 1}", r"a\{}b\{ 1}"),
        ("[[:alpha:]]", r"[\[:alpha:]]"),  # `regex` would read a POSIX class
        ("[]{[]", r"[]{\[]"),
        (r"\[[\]]{e}", r"\[[\]]\{e}"),
        (r"\N{DIGIT ONE}{2}", r"\N{DIGIT ONE}{2}"),
        ("(?x) a # [x{e}\n{2}", "(?x) a # [x{e}\n{2}"),  # a comment is copied as is
        ("(?x:#[\n)[[]", "(?x:#[\n)[\\[]"),
        ("(?#[{)[[]", "(?#[{)[\\[]"),
        ("(?(1)[[]|{e})", r"(?(1)[\[]|\{e})"),
    ],
)
def test_regex_source(pattern: str, source: str) -> None:
    assert regex_source(pattern) == source


# --- through the real agent -----------------------------------------------------------------


@pytest.mark.slow
async def test_tether_acp_serves_and_cancels_while_a_regex_runs(
    home: Path, project: Path, tmp_path: Path
) -> None:
    from tests.support.harness import script, spawn_agent

    (project / "slow.txt").write_text(SLOW_LINE + "\n")
    (project / "more.txt").write_text(SLOW_LINE + "\n")
    args = {"pattern": CATASTROPHIC_LOOKAHEAD}
    call = {"tool_call": {"id": "r1", "name": "regex_files", "arguments": args}}
    turn = script(tmp_path / "s.json", [[call], [{"text": "done"}]])

    def r1(status: str) -> bool:
        return any(
            u.get("toolCallId") == "r1" and u.get("status") == status for u in agent.updates(sid)
        )

    async with spawn_agent(home, "--script", str(turn)) as agent:
        await agent.initialize()
        sid = await agent.new_session(project)
        params = {"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]}
        prompt = await agent.start_request("session/prompt", params)
        while not r1("in_progress"):
            await agent.recv()
        for _ in range(10):  # the search (10 s budget) runs on; the agent answers meanwhile
            listed = await agent.request("session/list", {})
            assert [s["sessionId"] for s in listed["result"]["sessions"]] == [sid]
            assert not r1("completed") and not r1("failed")
        await agent.notify("session/cancel", {"sessionId": sid})
        done = await agent.until_response(prompt, timeout=8)  # less than the budget
        assert done["result"] == {"stopReason": "cancelled"}
        assert not r1("completed")
