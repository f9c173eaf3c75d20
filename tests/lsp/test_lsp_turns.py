"""`tether lsp` driven by pygls's own client, in this process over real pipes: turns, the round's
one question, edits into open buffers, progress, the transcript, the stored session."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from lsprotocol import types

from tests.support.lsp_client import Editor, lsp_in_process, script_file, write_call
from tests.support.stored import stored_messages, tool_results

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def _home(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TETHER_HOME", str(home))


def _two_writes(tmp_path: Path, *more: list[dict[str, Any]]) -> Path:
    """One round writing a.txt (new) and README.md (open in the editor), then an answer."""
    rounds = [
        [
            {"text": "Writing two files.\n"},
            write_call("c1", "a.txt", "A\n"),
            write_call("c2", "README.md", "# Demo project\n\nHello, LSP.\n", overwrite=True),
        ],
        [{"text": "Both written.\nSee README.md."}],
        *more,
    ]
    return script_file(tmp_path / "two.json", rounds)


def _choose(*titles: str) -> Any:
    answers = list(titles)

    def choose(params: types.ShowMessageRequestParams) -> str | None:
        return answers.pop(0) if answers else None

    return choose


def _check_clean(editor: Editor) -> None:
    assert editor.errors == []  # every frame the server sent fit its lsprotocol type


async def test_initialize_announces_commands_code_actions_and_sync(
    project: Path, tmp_path: Path
) -> None:
    async with lsp_in_process(project, _two_writes(tmp_path)) as (editor, _):
        result = await editor.start()
    caps = result.capabilities
    assert caps.execute_command_provider is not None
    commands = list(caps.execute_command_provider.commands)
    assert commands[:2] == ["tether.prompt", "tether.cancel"]
    assert "tether.status" in commands and "tether.grants" in commands
    assert caps.code_action_provider is True
    sync = caps.text_document_sync
    assert isinstance(sync, types.TextDocumentSyncOptions)
    assert sync.open_close and sync.change == types.TextDocumentSyncKind.Incremental
    assert caps.position_encoding == types.PositionEncodingKind.Utf16
    assert result.server_info is not None and result.server_info.name == "tether"
    _check_clean(editor)


@pytest.mark.slow
async def test_a_two_call_round_asks_once_and_edits_land_in_buffers(
    home: Path, project: Path, tmp_path: Path
) -> None:
    async with lsp_in_process(project, _two_writes(tmp_path), _choose("Allow all")) as (
        editor,
        codes,
    ):
        await editor.start()
        readme = editor.open("README.md", "# Demo project\n\nUNSAVED\n")
        result = await editor.prompt("write both")

        assert result["stopReason"] == "end_turn"
        assert result["text"] == "Both written.\nSee README.md."
        # One question for the round, listing both calls, with the round's three actions.
        [asked] = editor.asked
        assert [a.title for a in asked.actions or []] == ["Reject all", "Allow all", "One by one"]
        assert asked.message.splitlines() == [
            "tether asks to Edit a.txt, README.md:",
            "1. Create a.txt (+1 -0)",
            "@@ -0,0 +1 @@",
            "+A",
            "2. Replace README.md (+1 -1)",
            "@@ -1,3 +1,3 @@",
            " # Demo project",
            " ",
            "-UNSAVED",
            "+Hello, LSP.",
            "Allow these changes?",
        ]
        # The open buffer got one versioned edit of the line that differs; its unsaved text was
        # what the agent read (the diff's old side), and the file on disk is untouched.
        by_uri = {_uri_of(e): e for e in editor.edits}
        edit = by_uri[readme].edit.document_changes
        assert edit is not None and len(edit) == 1
        change = edit[0]
        assert isinstance(change, types.TextDocumentEdit)
        assert change.text_document.version == 1
        [text_edit] = change.edits
        assert isinstance(text_edit, types.TextEdit)
        assert text_edit.new_text == "Hello, LSP.\n"
        assert editor.text("README.md") == "# Demo project\n\nHello, LSP.\n"
        assert (project / "README.md").read_text() == "# Demo project\n\nHello.\n"
        # The new file: a create operation, then its text, into a buffer.
        created = by_uri[(project / "a.txt").as_uri()].edit.document_changes
        assert created is not None and isinstance(created[0], types.CreateFile)
        assert editor.text("a.txt") == "A\n"
        # Progress: created, begun, reported, ended.
        [token] = editor.created_tokens
        assert {t for t, _ in editor.progress_log} == {token}
        kinds = [v["kind"] for _, v in editor.progress_log]
        assert kinds[0] == "begin" and kinds[-1] == "end" and "report" in kinds
        assert editor.values("begin")[0]["cancellable"] is True
        assert editor.values("end")[0]["message"] == "Done"
        reports = [v["message"] for v in editor.values("report")]
        assert "Writing two files." in reports
        # The round's diff was shown before the question; the transcript after the turn,
        # both without taking the focus.
        await editor.wait_for(lambda: len(editor.shown) == 2)
        review, shown = editor.shown
        assert review.uri.endswith("/review-1.diff") and review.take_focus is False
        assert shown.uri == result["transcript"] and shown.take_focus is False
        transcript = Path(shown.uri.removeprefix("file://")).read_text()
        assert "## You\n\nwrite both" in transcript and "See README.md." in transcript
        assert "-UNSAVED" in transcript and "+Hello, LSP." in transcript
        _check_clean(editor)
    assert codes == [0]
    sid = result["sessionId"]
    results = tool_results(home, sid)
    assert len(results) == 2 and all(r.startswith("[approval] user (round)\n") for r in results)
    # A normal stored session, in the workspace root.
    listed = await anyio.run_process(
        [sys.executable, "-m", "tether", "sessions", "list"],
        env={**os.environ, "TETHER_HOME": str(home)},
    )
    listing = listed.stdout.decode()
    assert sid in listing and str(project) in listing and "write both" in listing


@pytest.mark.slow
async def test_reject_all_and_one_by_one(home: Path, project: Path, tmp_path: Path) -> None:
    script = _two_writes(
        tmp_path,
        [write_call("c3", "a.txt", "A\n"), write_call("c4", "b.txt", "B\n")],
        [{"text": "One of two."}],
    )
    choose = _choose("Reject all", "One by one", "Allow", "Reject")
    async with lsp_in_process(project, script, choose) as (editor, _):
        await editor.start()
        first = await editor.prompt("write both")
        assert first["stopReason"] == "end_turn"
        assert editor.edits == []  # nothing was written
        second = await editor.prompt("again, one by one")
        assert second["text"] == "One of two."
        assert [a.message.splitlines()[0] for a in editor.asked] == [
            "tether asks to Edit a.txt, README.md:",
            "tether asks to Edit a.txt, b.txt:",
            "tether asks to Create a.txt (+1 -0)",
            "tether asks to Create b.txt (+1 -0)",
        ]
        assert [a.title for a in editor.asked[2].actions or []] == [
            "Reject",
            "Allow",
            "Always allow",
        ]
        assert editor.text("a.txt") == "A\n"
        assert (project / "b.txt").as_uri() not in editor.buffers
        _check_clean(editor)
    results = tool_results(home, first["sessionId"])
    assert all("user declined" in r for r in results[:2])
    assert results[2].startswith("[approval] user (once)\n")
    assert "user declined" in results[3]


@pytest.mark.slow
async def test_always_allow_becomes_a_session_grant(project: Path, tmp_path: Path) -> None:
    script = script_file(
        tmp_path / "grant.json",
        [
            [write_call("c1", "README.md", "A\n", overwrite=True)],
            [{"text": "one"}],
            [write_call("c2", "README.md", "AA\n", overwrite=True)],
            [{"text": "two"}],
        ],
    )
    async with lsp_in_process(project, script, _choose("Always allow")) as (editor, _):
        await editor.start()
        await editor.prompt("first")
        await editor.prompt("second")
        assert len(editor.asked) == 1
        assert "Always allow: replacing README.md" in editor.asked[0].message
        assert editor.asked[0].message.splitlines()[1].endswith(", for this session)")
        assert (project / "README.md").read_text() == "AA\n"
        _check_clean(editor)


@pytest.mark.slow
async def test_reads_see_unsaved_and_typed_text(home: Path, project: Path, tmp_path: Path) -> None:
    script = script_file(
        tmp_path / "read.json",
        [
            [{"tool_call": {"id": "r1", "name": "read_file", "arguments": {"path": "README.md"}}}],
            [{"text": "read it"}],
        ],
    )
    async with lsp_in_process(project, script) as (editor, _):
        await editor.start()
        uri = editor.open("README.md", "line one\nline two\n")
        start = types.Position(line=1, character=5)
        editor.type_text(uri, types.Range(start=start, end=start), "TYPED ")
        result = await editor.prompt("read README.md")
        _check_clean(editor)
    [read] = tool_results(home, result["sessionId"])
    assert "line one\nline TYPED two" in read


@pytest.mark.slow
async def test_a_selection_goes_with_the_prompt(home: Path, project: Path, tmp_path: Path) -> None:
    script = script_file(tmp_path / "sel.json", [[{"text": "It greets."}]])
    async with lsp_in_process(project, script) as (editor, _):
        await editor.start()
        uri = editor.open("app.py", "import os\n\ndef greet(name):\n    return 'hi ' + name\n")
        rng = {"start": {"line": 2, "character": 0}, "end": {"line": 4, "character": 0}}
        result = await editor.prompt("What does this do?", textDocument={"uri": uri}, range=rng)
        assert result["text"] == "It greets."
    user = [m for m in stored_messages(home, result["sessionId"]) if m["type"] == "user"]
    text = user[0]["parts"][0]["text"]
    assert text.startswith("What does this do?\n\nSelected in app.py, lines 3-4:\n```\n")
    assert "def greet(name):\n    return 'hi ' + name\n" in text
    assert "import os" not in text


@pytest.mark.slow
async def test_code_actions_run_the_prompt_on_the_selection(
    home: Path, project: Path, tmp_path: Path
) -> None:
    script = script_file(tmp_path / "fix.json", [[{"text": "Fixed nothing."}]])
    async with lsp_in_process(project, script) as (editor, _):
        await editor.start()
        uri = editor.open("app.py", "x = 1\ny = undefined\n")
        diagnostic = types.Diagnostic(
            range=types.Range(
                start=types.Position(line=1, character=4), end=types.Position(line=1, character=13)
            ),
            message="undefined name 'undefined'",
            source="pyflakes",
        )
        cursor = types.Position(line=1, character=6)
        params = types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(start=cursor, end=cursor),
            context=types.CodeActionContext(diagnostics=[diagnostic]),
        )
        actions = await editor.text_document_code_action_async(params)
        assert actions is not None
        titles = [a.title for a in actions]
        assert titles == ["tether: Ask tether", "tether: Explain", "tether: Fix"]
        fix = actions[2]
        assert isinstance(fix, types.CodeAction) and fix.kind == types.CodeActionKind.QuickFix
        assert fix.command is not None and fix.command.command == "tether.prompt"
        [argument] = fix.command.arguments or []
        assert isinstance(argument, dict)
        assert argument["range"] == {
            "start": {"line": 1, "character": 0},
            "end": {"line": 2, "character": 0},
        }
        result = await editor.command(fix.command.command, *fix.command.arguments or [])
        assert result["stopReason"] == "end_turn"
    user = [m for m in stored_messages(home, result["sessionId"]) if m["type"] == "user"]
    text = user[0]["parts"][0]["text"]
    assert "Fix the selected code." in text
    assert "- line 2: undefined name 'undefined' (pyflakes)" in text
    assert "Selected in app.py, line 2:\n```\ny = undefined\n" in text


@pytest.mark.slow
async def test_progress_reports_are_coalesced(project: Path, tmp_path: Path) -> None:
    """A burst of 500 lines is a handful of reports (the newest line wins), not 500."""
    script = script_file(
        tmp_path / "burst.json", [[{"text": "line\n", "repeat": 500}, {"text": "last line"}]]
    )
    async with lsp_in_process(project, script) as (editor, _):
        await editor.start()
        result = await editor.prompt("talk")
        assert result["text"].endswith("line\nlast line")
        reports = [v["message"] for v in editor.values("report")]
        assert 1 <= len(reports) <= 3, reports
        assert set(reports) <= {"line", "last line"}


@pytest.mark.slow
async def test_a_wait_counts_down_in_the_progress(project: Path, tmp_path: Path) -> None:
    """The `wait` tool's countdown (its card's text over ACP) is the progress line here."""
    wait = {"seconds": 2, "reason": "the build"}
    script = script_file(
        tmp_path / "wait.json",
        [[{"tool_call": {"id": "w1", "name": "wait", "arguments": wait}}], [{"text": "Built."}]],
    )
    async with lsp_in_process(project, script) as (editor, _):
        await editor.start()
        assert (await editor.prompt("wait for the build"))["text"] == "Built."
        reports = [v["message"] for v in editor.values("report")]
    assert "Running: Wait 2 s: the build — 1 s left of 2 s" in reports, reports
    _check_clean(editor)


@pytest.mark.slow
async def test_ask_user_offers_its_choices(home: Path, project: Path, tmp_path: Path) -> None:
    question = {"question": "Which color?", "options": ["red", "blue"]}
    script = script_file(
        tmp_path / "ask.json",
        [
            [{"tool_call": {"id": "q1", "name": "ask_user", "arguments": question}}],
            [{"text": "Blue it is."}],
        ],
    )
    async with lsp_in_process(project, script, _choose("blue")) as (editor, _):
        await editor.start()
        result = await editor.prompt("ask me")
        [asked] = editor.asked
        assert asked.message == "Which color?"
        assert [a.title for a in asked.actions or []] == ["red", "blue"]
    [answer] = tool_results(home, result["sessionId"])
    assert "The user answered:\n- choice: blue" in answer


def _uri_of(params: types.ApplyWorkspaceEditParams) -> str:
    changes = params.edit.document_changes or []
    first = changes[0]
    return first.uri if isinstance(first, types.CreateFile) else first.text_document.uri  # type: ignore[union-attr]


@pytest.mark.slow
async def test_compact_by_hand_in_an_lsp_client(home: Path, project: Path, tmp_path: Path) -> None:
    """`/compact` typed as a prompt runs the same machinery as over ACP: the model summarises
    the conversation, the answer says so, and the next request carries the summary."""
    rounds: list[list[dict[str, Any]]] = [
        [{"text": "First answer."}],
        [{"text": "SUMMARY: one question, one answer."}],
        [{"text": "Second answer."}],
    ]
    async with lsp_in_process(project, script_file(tmp_path / "s.json", rounds)) as (editor, _):
        await editor.start()
        await editor.prompt("first question")
        compacted = await editor.prompt("/compact")
        second = await editor.prompt("second question")
        _check_clean(editor)
    assert compacted["stopReason"] == "end_turn"
    assert compacted["text"].startswith("Compacted: the 2 messages so far are summarised")
    assert second["text"] == "Second answer."
    messages = stored_messages(home, second["sessionId"])
    assert [m["type"] for m in messages] == ["user", "assistant", "user", "assistant"]
