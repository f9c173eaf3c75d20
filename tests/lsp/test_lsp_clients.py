"""`tether lsp` with clients that offer less (no questions, no edits, no progress), clients that
answer oddly, and bad input: each gets a clear answer, and the server keeps serving."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from tests.support.lsp_client import (
    FULL_CAPS,
    first_action,
    lsp_in_process,
    script_file,
    write_call,
)
from tests.support.stored import tool_results
from tether.rpc.lsp import buffer_fs

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

BARE = types.ClientCapabilities()


@pytest.fixture(autouse=True)
def _home(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TETHER_HOME", str(home))


def _writes(tmp_path: Path, *names: str, then: str = "done") -> Path:
    calls = [write_call(f"c{i}", n, f"{n}\n") for i, n in enumerate(names)]
    return script_file(tmp_path / "w.json", [calls, [{"text": then}]])


def _edit_readme(tmp_path: Path) -> Path:
    edit = {"path": "README.md", "old": "Hello.", "new": "Hi."}
    return script_file(
        tmp_path / "e.json",
        [
            [{"tool_call": {"id": "e1", "name": "edit_replace", "arguments": edit}}],
            [{"text": "ok"}],
        ],
    )


async def test_a_client_that_announces_no_questions_is_still_asked(
    home: Path, project: Path, tmp_path: Path
) -> None:
    """Eglot answers window/showMessageRequest (with completing-read) but does not announce
    window.showMessage: it is asked all the same."""
    caps = types.ClientCapabilities(window=types.WindowClientCapabilities(work_done_progress=True))
    async with lsp_in_process(project, _writes(tmp_path, "a.txt", "b.txt")) as (editor, _):
        await editor.start(caps)
        result = await editor.prompt("write")
        [asked] = editor.asked
        assert asked.message.startswith("tether asks to Edit a.txt, b.txt:")
        assert editor.messages == []
    assert (project / "a.txt").read_text() == "a.txt\n"  # no applyEdit: on disk
    assert (project / "b.txt").read_text() == "b.txt\n"
    results = tool_results(home, result["sessionId"])
    assert len(results) == 2 and all(r.startswith("[approval] user (round)") for r in results)


async def test_method_not_found_means_it_cannot_ask_for_the_whole_connection(
    home: Path, project: Path, tmp_path: Path
) -> None:
    """Helix answers showMessageRequest "method not found": the calls are refused by policy,
    the user is told, and the connection is never asked again (ask_user neither)."""
    question = {"question": "Which?", "options": ["x", "y"]}
    ask = {"tool_call": {"id": "q1", "name": "ask_user", "arguments": question}}
    script = script_file(
        tmp_path / "w.json",
        [
            [write_call("c1", "a.txt", "a\n"), write_call("c2", "b.txt", "b\n")],
            [{"text": "one"}],
            [write_call("c3", "c.txt", "c\n"), ask],
            [{"text": "two"}],
        ],
    )
    async with lsp_in_process(project, script, None) as (editor, _):
        await editor.start()
        first = await editor.prompt("write")
        second = await editor.prompt("again")
        assert second["text"] == "two"
        assert len(editor.asked) == 1  # only the first question: then it is known
        told = [m.message for m in editor.messages]
        assert len(told) == 2 and all("this editor cannot ask" in m for m in told)
        assert told[1].startswith("tether refused to Create c.txt")
    results = tool_results(home, first["sessionId"])
    assert all("REJECTED" in r and "policy" in r for r in results[:3])
    assert "ASK_UNAVAILABLE" in results[3]
    assert not any((project / n).exists() for n in ("a.txt", "b.txt", "c.txt"))


async def test_a_bare_enter_rejects(home: Path, project: Path, tmp_path: Path) -> None:
    """Eglot pre-fills the first action into the minibuffer: RET alone picks it. The first
    action of every approval question is the safe one."""
    script = script_file(
        tmp_path / "w.json",
        [
            [write_call("c1", "a.txt", "a\n"), write_call("c2", "b.txt", "b\n")],
            [{"text": "one"}],
            [write_call("c3", "c.txt", "c\n")],
            [{"text": "two"}],
        ],
    )
    async with lsp_in_process(project, script, first_action) as (editor, _):
        await editor.start()
        first = await editor.prompt("write two")
        await editor.prompt("write one")
        assert [[a.title for a in q.actions or []] for q in editor.asked] == [
            ["Reject all", "Allow all", "One by one"],
            ["Reject", "Allow", "Always allow"],
        ]
        assert editor.edits == []
    results = tool_results(home, first["sessionId"])
    assert len(results) == 3 and all("user declined" in r for r in results)


async def test_a_dismissed_question_allows_nothing(
    home: Path, project: Path, tmp_path: Path
) -> None:
    def dismiss(params: types.ShowMessageRequestParams) -> str | None:
        return None

    async with lsp_in_process(project, _writes(tmp_path, "a.txt", "b.txt"), dismiss) as (
        editor,
        _,
    ):
        await editor.start()
        result = await editor.prompt("write")
        assert result["stopReason"] == "end_turn" and len(editor.asked) == 1
        assert editor.edits == []
    assert all("prompt cancelled" in r for r in tool_results(home, result["sessionId"]))


async def test_without_apply_edit_writes_go_to_disk(project: Path, tmp_path: Path) -> None:
    caps = types.ClientCapabilities(
        window=types.WindowClientCapabilities(
            show_message=types.ShowMessageRequestClientCapabilities()
        )
    )
    async with lsp_in_process(project, _writes(tmp_path, "a.txt")) as (editor, _):
        await editor.start(caps)
        result = await editor.prompt("write")
        assert result["stopReason"] == "end_turn"
        assert editor.edits == [] and editor.progress_log == [] and editor.shown == []
    assert (project / "a.txt").read_text() == "a.txt\n"


async def test_an_edit_the_editor_refuses_fails_the_call(
    home: Path, project: Path, tmp_path: Path
) -> None:
    async with lsp_in_process(project, _edit_readme(tmp_path)) as (editor, _):
        await editor.start()
        editor.open("README.md", "# Demo project\n\nHello.\n")
        editor.refuse_edits = True
        result = await editor.prompt("edit")
    [res] = tool_results(home, result["sessionId"])
    assert "CLIENT_FS_ERROR" in res and "did not apply the edit" in res and "read-only" in res


async def test_an_edit_never_reported_fails_the_call(
    home: Path, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Neovim says it applied an edit whose version is older than its buffer, and drops it."""
    monkeypatch.setattr(buffer_fs, "REPORT_WAIT", 0.2)
    async with lsp_in_process(project, _edit_readme(tmp_path)) as (editor, _):
        await editor.start()
        editor.open("README.md", "# Demo project\n\nHello.\n")
        editor.report_edits = False
        result = await editor.prompt("edit")
    [res] = tool_results(home, result["sessionId"])
    assert "CLIENT_FS_ERROR" in res and "never reported the change" in res


async def test_an_edit_of_an_open_buffer_is_versioned_and_minimal(
    project: Path, tmp_path: Path
) -> None:
    async with lsp_in_process(project, _edit_readme(tmp_path)) as (editor, _):
        await editor.start()
        uri = editor.open("README.md", "# Demo project\n\nHello.\n")
        end = types.Position(line=0, character=14)
        editor.type_text(uri, types.Range(start=end, end=end), " (draft)")
        await editor.prompt("edit")
        [params] = editor.edits
        [change] = params.edit.document_changes or []
        assert isinstance(change, types.TextDocumentEdit)
        assert change.text_document.version == 2
        [edit] = change.edits
        assert isinstance(edit, types.TextEdit)
        assert (edit.range.start.line, edit.range.end.line, edit.new_text) == (2, 3, "Hi.\n")
        assert editor.text("README.md") == "# Demo project (draft)\n\nHi.\n"
        assert params.label == "tether: edit README.md"


BAD_ARGUMENTS: list[tuple[str, list[Any], str]] = [
    ("tether.prompt", [], "takes one argument"),
    ("tether.prompt", ["go"], "takes one argument"),
    ("tether.prompt", [{"prompt": 5}], "prompt must be a non-empty string"),
    ("tether.prompt", [{"prompt": "  "}], "prompt must be a non-empty string"),
    ("tether.prompt", [{"prompt": "x", "textDocument": {"uri": "untitled:1"}}], "file URI"),
    (
        "tether.prompt",
        [{"prompt": "x", "range": {"start": {"line": 0, "character": 0}}}],
        "a range needs its textDocument",
    ),
    (
        "tether.prompt",
        [{"prompt": "x", "textDocument": {"uri": "file:///a"}, "range": {"start": {"line": "a"}}}],
        "range: invalid value for type, expected int @ $.start.line",
    ),
    ("tether.nope", [], "'tether.nope' is not defined"),
]


async def test_bad_arguments_are_answered_and_the_server_goes_on(
    project: Path, tmp_path: Path
) -> None:
    script = script_file(tmp_path / "ok.json", [[{"text": "fine"}]])
    async with lsp_in_process(project, script) as (editor, _):
        await editor.start()
        for command, arguments, why in BAD_ARGUMENTS:
            with pytest.raises(JsonRpcException) as refused:
                await editor.command(command, *arguments)
            assert refused.value.code == -32602, (command, arguments)
            assert why in refused.value.message, refused.value.message
        result = await editor.prompt("and now?")
        assert result["text"] == "fine"
        assert editor.errors == []


async def test_initialization_options_set_the_session(
    home: Path, project: Path, tmp_path: Path
) -> None:
    """Helix cannot ask: its config can put the session in `code` mode, which creates new files
    without asking."""
    async with lsp_in_process(project, _writes(tmp_path, "a.txt", "b.txt")) as (editor, _):
        await editor.start(options={"mode": "code", "model": "nope", "approvals": 5})
        result = await editor.prompt("write")
        assert editor.asked == []
        assert editor.text("a.txt") == "a.txt\n" and editor.text("b.txt") == "b.txt\n"
        warnings = [m.message for m in editor.messages]
        assert len(warnings) == 2
        assert warnings[0].startswith("tether: initializationOptions.model: unknown model 'nope'")
        assert (
            warnings[1]
            == "tether: initializationOptions.approvals: approvals must be a string, got 5"
        )
    assert all(
        r.startswith("[approval] mode (code)") for r in tool_results(home, result["sessionId"])
    )


async def test_no_progress_support_still_answers(project: Path, tmp_path: Path) -> None:
    script = script_file(tmp_path / "ok.json", [[{"text": "fine"}]])
    async with lsp_in_process(project, script) as (editor, _):
        await editor.start(BARE)
        result = await editor.prompt("hello")
        assert result["text"] == "fine"
        assert editor.progress_log == [] and editor.created_tokens == []


async def test_a_token_from_the_client_is_used(project: Path, tmp_path: Path) -> None:
    script = script_file(tmp_path / "ok.json", [[{"text": "fine"}]])
    async with lsp_in_process(project, script) as (editor, _):
        await editor.start(FULL_CAPS)
        params = types.ExecuteCommandParams(
            command="tether.prompt", arguments=[{"prompt": "hi"}], work_done_token="mine"
        )
        await editor.workspace_execute_command_async(params)
        assert editor.created_tokens == []
        assert {t for t, _ in editor.progress_log} == {"mine"}


async def test_a_configuration_change_is_taken_quietly(
    project: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Neovim and eglot send `workspace/didChangeConfiguration` as they connect: no warning in
    tether's log (pygls logs one for a notification nobody handles), and the server goes on."""
    script = script_file(tmp_path / "ok.json", [[{"text": "fine"}]])
    async with lsp_in_process(project, script) as (editor, _):
        await editor.start()
        editor.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"tether": {"mode": "code"}})
        )
        assert (await editor.prompt("hello"))["text"] == "fine"
        assert editor.errors == []
    noisy = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert noisy == [], [r.getMessage() for r in noisy]
