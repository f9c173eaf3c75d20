"""How `tether lsp` answers a prompt: as the command's result when the turn ends (the default), or
at once with the answer sent as a message when the turn ends (`initializationOptions.answer =
"message"`, and clients named "Eglot", which give up on a request after 10 s); and the turn's
progress as a few messages for clients without work-done progress (eglot 1.9)."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from tests.support.lsp_client import Editor, lsp_in_process, script_file, write_call
from tests.support.stored import tool_results

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

Log, Info = types.MessageType.Log, types.MessageType.Info

# What eglot 1.9 (Debian 12's Emacs 28) announces that matters here: edits, nothing of `window`.
EGLOT_19 = types.ClientCapabilities(
    workspace=types.WorkspaceClientCapabilities(
        apply_edit=True,
        workspace_edit=types.WorkspaceEditClientCapabilities(document_changes=True),
    ),
)


@pytest.fixture(autouse=True)
def _home(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TETHER_HOME", str(home))


def _told(editor: Editor) -> list[tuple[types.MessageType, str]]:
    return [(m.type, m.message) for m in editor.messages]


def _working(editor: Editor) -> bool:
    return any(v.get("message") == "working" for v in editor.values("report"))


async def test_answered_at_once_then_the_answer_as_a_message(project: Path, tmp_path: Path) -> None:
    script = script_file(
        tmp_path / "s.json",
        [[{"text": "working"}, {"delay": 60}], [{"text": "quick"}], [{"text": "waited"}]],
    )
    async with lsp_in_process(project, script) as (editor, _):
        await editor.start(options={"answer": "message"})
        # A turn a minute long: the command is answered while it runs.
        started = await editor.prompt("take your time")
        assert started["started"] is True and isinstance(started["sessionId"], str)
        await editor.wait_for(lambda: _working(editor))
        assert await editor.command("tether.cancel") == {"cancelled": True}
        await editor.wait_for(lambda: bool(editor.messages))
        assert _told(editor) == [(Info, "tether: Cancelled\nworking")]
        assert editor.values("end")[0]["message"] == "Cancelled"
        # The next one's answer; the client shows documents, so no transcript path is added.
        assert (await editor.prompt("next"))["started"] is True
        await editor.wait_for(lambda: len(editor.messages) == 2)
        assert _told(editor)[1] == (Info, "tether: quick")
        # `wait: true` asks for the answer as the result, as by default.
        waited = await editor.prompt("and wait", wait=True)
        assert waited["stopReason"] == "end_turn" and waited["text"] == "waited"
        assert len(editor.messages) == 2
        assert editor.errors == []


async def test_eglot_by_its_client_name(home: Path, project: Path, tmp_path: Path) -> None:
    """Eglot 1.9: no work-done progress, no showMessage announced, no showDocument; it is
    asked all the same, told the turn's start, each tool and the answer."""
    script = script_file(
        tmp_path / "s.json",
        [[write_call("c1", "a.txt", "A\n")], [{"text": "Wrote a.txt."}]],
    )
    async with lsp_in_process(project, script) as (editor, _):
        await editor.start(EGLOT_19, name="Eglot")
        started = await editor.prompt("write a.txt\nplease")
        assert started["started"] is True
        await editor.wait_for(lambda: any(m.type == Info for m in editor.messages))
        [asked] = editor.asked
        assert asked.message.splitlines()[0] == "tether asks to Create a.txt (+1 -0)"
        transcript = Path(home / "spill" / started["sessionId"] / "transcript.md")
        assert _told(editor) == [
            (Log, "tether: working: write a.txt"),
            (Log, "tether: Running: Create a.txt"),
            (Info, f"tether: Wrote a.txt.\nTranscript: {transcript}"),
        ]
        assert "Wrote a.txt." in transcript.read_text()
        assert editor.progress_log == [] and editor.shown == []
    assert (project / "a.txt").read_text() == "A\n"
    [result] = tool_results(home, started["sessionId"])
    assert result.startswith("[approval] user (once)")


async def test_progress_as_messages_when_the_answer_is_the_result(
    project: Path, tmp_path: Path
) -> None:
    script = script_file(
        tmp_path / "s.json",
        [[write_call("c1", "a.txt", "A\n")], [{"text": "Wrote a.txt."}]],
    )
    async with lsp_in_process(project, script) as (editor, _):
        await editor.start(types.ClientCapabilities())
        result = await editor.prompt("write a.txt")
        assert result["text"] == "Wrote a.txt."
        assert _told(editor) == [
            (Log, "tether: working: write a.txt"),
            (Log, "tether: Running: Create a.txt"),
            (Log, "tether: Done"),
        ]


async def test_a_failed_turn_answered_at_once_is_told(project: Path, tmp_path: Path) -> None:
    script = script_file(
        tmp_path / "s.json", [[{"error": {"message": "HTTP 500: down", "status": 500}}]]
    )
    async with lsp_in_process(project, script) as (editor, _):
        await editor.start(options={"answer": "message"})
        assert (await editor.prompt("hello"))["started"] is True
        await editor.wait_for(lambda: bool(editor.messages))
        [told] = editor.messages
        assert told.type == types.MessageType.Error
        assert told.message.startswith("tether: The model provider failed: ")
        assert "HTTP 500: down" in told.message


async def test_a_bad_answer_option_is_told_and_the_default_kept(
    project: Path, tmp_path: Path
) -> None:
    script = script_file(tmp_path / "s.json", [[{"text": "fine"}]])
    async with lsp_in_process(project, script) as (editor, _):
        await editor.start(options={"answer": "later"})
        result = await editor.prompt("hello")
        assert result["text"] == "fine"
        [told] = editor.messages
        assert told.message == (
            "tether: initializationOptions.answer: must be 'result' or 'message', got 'later'"
        )
        with pytest.raises(JsonRpcException) as refused:
            await editor.prompt("x", wait="yes")
        assert refused.value.code == -32602
        assert "wait must be true or false" in refused.value.message


async def test_cancel_request_on_a_prompt_answered_at_once(project: Path, tmp_path: Path) -> None:
    script = script_file(tmp_path / "s.json", [[{"text": "working"}, {"delay": 60}]])
    async with lsp_in_process(project, script) as (editor, _):
        await editor.start(options={"answer": "message"})
        started = await editor.prompt_request("take your time", msg_id="p1")
        assert started["started"] is True
        await editor.wait_for(lambda: _working(editor))
        editor.cancel_request(types.CancelParams(id="p1"))
        await editor.wait_for(lambda: bool(editor.messages))
        assert _told(editor) == [(Info, "tether: Cancelled\nworking")]
