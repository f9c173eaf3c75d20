"""The pieces of `tether lsp` that need no client: the fast path's imports, the position
encoding the answer and pygls agree on, and edits as the editor applies them."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.workspace import PositionCodec, TextDocument

from tests.support.harness import REPO
from tether.engine import events as ev
from tether.engine.events import DiffOut
from tether.engine.seam import ConfirmRequest
from tether.rpc.lsp.approval_text import diffs_of, review_text, title_line
from tether.rpc.lsp.edits import fill_empty, line_edit, lines_of
from tether.rpc.lsp.lsp_handshake import LspHandshake, clean_params
from tether.rpc.lsp.server import make_server
from tether.rpc.lsp.view import TurnView
from tether.rpc.lsp.wire import Connection, prime
from tether.rpc.startup import initialize_request
from tether.tools.text import fence
from tether.transports.framing import ContentLengthFramer
from tether.transports.memory import memory_pair
from tether.transports.streams import FramedStream

ENCODINGS = ["utf-8", "utf-16", "utf-32"]


@pytest.mark.slow
def test_the_fast_path_loads_no_pygls_lsprotocol_anyio_or_msgspec() -> None:
    code = (
        "import sys, json\n"
        "from tether.cli.main import _fast_lsp_args\n"
        "from tether.rpc.lsp import lsp_serve\n"
        "from tether.rpc.lsp.lsp_handshake import LspHandshake, clean_params\n"
        "from tether.rpc.startup import initialize_request\n"
        "frame = json.dumps({'jsonrpc': '2.0', 'id': 1, 'method': 'initialize',"
        " 'params': {'processId': None, 'capabilities': {}}}).encode()\n"
        "rid, params = initialize_request(frame, clean_params)\n"
        "LspHandshake().answer(params)\n"
        "heavy = [m for m in ('pygls', 'lsprotocol', 'cattrs', 'anyio', 'msgspec', 'tether.engine')"
        " if m in sys.modules]\n"
        "print(json.dumps(heavy))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
    )
    assert out.stdout.strip() == "[]", out


@pytest.mark.parametrize(
    ("offered", "chosen"),
    [
        (None, "utf-16"),
        (["utf-8", "utf-16"], "utf-8"),
        (["utf-32"], "utf-32"),
        (["latin-1", "utf-16"], "utf-16"),
        (["latin-1"], "utf-16"),
    ],
)
@pytest.mark.anyio
async def test_the_answer_and_pygls_use_one_position_encoding(
    offered: list[str] | None, chosen: str
) -> None:
    caps: dict[str, Any] = {"general": {"positionEncodings": offered}} if offered else {}
    params = json.dumps({"processId": None, "capabilities": caps}).encode()
    frame = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":%s}' % params
    clean = initialize_request(frame, clean_params)
    assert clean is not None
    handshake = LspHandshake()
    answer = handshake.answer(clean[1])
    assert answer["capabilities"]["positionEncoding"] == chosen
    server = await _primed(handshake, clean[1])
    assert server.workspace.position_encoding == chosen


@pytest.mark.anyio
async def test_capabilities_that_do_not_fit_count_as_none() -> None:
    params = {"processId": None, "capabilities": {"window": {"showMessage": 5}}}
    handshake = LspHandshake()
    handshake.answer(params)
    server = await _primed(handshake, params)
    assert server.client_capabilities.window is None
    assert server.workspace.position_encoding == "utf-16"


async def _primed(handshake: LspHandshake, params: dict[str, Any]) -> LanguageServer:
    """A server given the `initialize` the handshake answered, as the connection does."""
    server, converter = make_server()
    a, b = memory_pair()
    try:
        Connection(FramedStream(a, ContentLengthFramer()), server, handshake, converter)
        prime(server.protocol, converter, handshake.encoding, params)
    finally:
        await a.aclose()
        await b.aclose()
    return server


def test_fast_answer_leaves_odd_initializes_to_the_connection() -> None:
    for body in [
        b"{",
        b'{"jsonrpc":"2.0","id":1,"method":"initialize"}',
        b'{"jsonrpc":"2.0","id":true,"method":"initialize","params":{"capabilities":{}}}',
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":[]}}',
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{},"rootUri":5}}',
        b'{"jsonrpc":"2.0","id":1,"method":"shutdown"}',
    ]:
        assert initialize_request(body, clean_params) is None, body


text_lines = st.lists(
    st.sampled_from(["", "a", "bc", "é", "😀x", "  x"]).flatmap(
        lambda t: st.sampled_from([t + "\n", t + "\r\n", t])
    ),
    max_size=6,
).map("".join)


def _apply(old: str, edit: types.TextEdit, encoding: str) -> str:
    doc = TextDocument("file:///x", source=old, position_codec=PositionCodec(encoding))
    doc.apply_change(types.TextDocumentContentChangePartial(range=edit.range, text=edit.new_text))
    return doc.source


@given(old=text_lines, new=text_lines, encoding=st.sampled_from(ENCODINGS))
def test_a_line_edit_turns_the_old_text_into_the_new(old: str, new: str, encoding: str) -> None:
    edit = line_edit(old, new, PositionCodec(encoding).client_num_units)
    if old == new:
        assert edit is None
        return
    assert edit is not None
    assert _apply(old, edit, encoding) == new


def test_a_line_edit_leaves_the_common_lines_alone() -> None:
    old = "one\ntwo\nthree\nfour\n"
    edit = line_edit(old, "one\nTWO\nthree\nfour\n", PositionCodec("utf-16").client_num_units)
    assert edit is not None
    assert (edit.range.start.line, edit.range.end.line, edit.new_text) == (1, 2, "TWO\n")
    end = line_edit("x😀", "x😀y", PositionCodec("utf-16").client_num_units)
    assert end is not None and end.range.end == types.Position(line=0, character=3)


def test_lines_break_only_where_lsp_breaks_them() -> None:
    assert lines_of("a\u2028b\x0cc\r\nd\re\n") == ["a\u2028b\x0cc\r\n", "d\r", "e\n"]
    assert lines_of("") == []


def test_filling_a_new_document() -> None:
    edit = fill_empty("Notes\n")
    assert _apply("", edit, "utf-16") == "Notes\n"


def test_the_helix_setup_names_the_server_and_a_valid_mode() -> None:
    from tether.engine.sessions.state import MODES

    doc = tomllib.loads((REPO / "editors" / "lsp" / "helix-languages.toml").read_text())
    server = doc["language-server"]["tether"]
    assert [server["command"], *server["args"]] == ["tether", "lsp"]
    assert server["config"]["mode"] in MODES
    assert "tether" in doc["language"][0]["language-servers"]


def test_a_running_calls_report_is_its_last_line() -> None:
    """What a running call reports (a command's live output in a fence, wait's countdown)
    shows as its last line after the call's title; nothing once the call finished."""
    shown: list[str] = []
    view = TurnView(shown.append)
    view.take(ev.ToolStarted("c1", "run_argv", "Run " + "x" * 60, "execute", {}))
    view.take(ev.ToolUpdated("c1", status="in_progress"))
    view.take(ev.ToolUpdated("c1", content=[ev.TextOut(fence("compiling\n3 passed\n"))]))
    view.take(ev.ToolFinished("c1", "completed", [ev.TextOut("done")]))
    view.take(ev.ToolUpdated("c1", content=[ev.TextOut("late")]))
    assert shown == [f"Running: Run {'x' * 60}", f"Running: Run {'x' * 35}… — 3 passed"]


def test_a_diff_line_that_looks_like_a_header_counts_and_no_change_shows_nothing() -> None:
    """A removed line `-- x` reads `--- x` in the diff: it is a change, not a header. A call
    whose diff changes nothing adds no line to the question and nothing to the review."""
    lua = DiffOut("/p/a.lua", "x = 1\n", "-- x\nx = 1\n")
    same = DiffOut("/p/b.txt", "b\n", "b\n")
    calls = [
        ConfirmRequest("c1", "edit_replace", "Edit a.lua", "edit", {}, "", content=[lua]),
        ConfirmRequest("c2", "write_file", "Replace b.txt", "edit", {}, "", content=[same]),
    ]
    first, second = diffs_of(calls)
    assert first.hunks == ["@@ -1,2 +1 @@", "--- x", " x = 1"]
    assert title_line(calls[0], first) == "Edit a.lua (+0 -1)"
    assert second.hunks == [] and title_line(calls[1], second) == "Replace b.txt"
    assert review_text([first, second]).splitlines() == [
        "--- /p/a.lua",
        "+++ /p/a.lua",
        *first.hunks,
    ]
