"""Ending a `tether lsp` turn: `$/cancelRequest` on the prompt, cancelling its progress,
`tether.cancel`, a cancel sent with the prompt, `shutdown`; and a second prompt meanwhile."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from tests.support.lsp_client import Editor, lsp_in_process, script_file

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def _home(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TETHER_HOME", str(home))


def _slow_then_quick(tmp_path: Path) -> Path:
    """A turn that says "working" and then takes a minute; the next one answers at once."""
    return script_file(
        tmp_path / "slow.json",
        [[{"text": "working"}, {"delay": 60}], [{"text": "quick"}]],
    )


def _working(editor: Editor) -> bool:
    return any(v.get("message") == "working" for v in editor.values("report"))


async def _still_serving(editor: Editor) -> None:
    result = await editor.prompt("next")
    assert result == {**result, "stopReason": "end_turn", "text": "quick"}


@pytest.mark.slow
async def test_cancel_request_ends_the_turn_cancelled(project: Path, tmp_path: Path) -> None:
    async with lsp_in_process(project, _slow_then_quick(tmp_path)) as (editor, _):
        await editor.start()
        pending = editor.prompt_request("take your time", msg_id="p1")
        await editor.wait_for(lambda: _working(editor))
        editor.cancel_request(types.CancelParams(id="p1"))
        result = await pending
        assert result["stopReason"] == "cancelled"
        assert editor.values("end")[-1]["message"] == "Cancelled"
        await _still_serving(editor)
        assert editor.errors == []


@pytest.mark.slow
async def test_cancelling_the_progress_cancels_the_turn(project: Path, tmp_path: Path) -> None:
    async with lsp_in_process(project, _slow_then_quick(tmp_path)) as (editor, _):
        await editor.start()
        pending = editor.prompt_request("take your time", msg_id="p1")
        await editor.wait_for(lambda: _working(editor))
        [token] = editor.created_tokens
        editor.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token))
        assert (await pending)["stopReason"] == "cancelled"
        await _still_serving(editor)


@pytest.mark.slow
async def test_the_cancel_command(project: Path, tmp_path: Path) -> None:
    async with lsp_in_process(project, _slow_then_quick(tmp_path)) as (editor, _):
        await editor.start()
        assert await editor.command("tether.cancel") == {"cancelled": False}
        pending = editor.prompt_request("take your time", msg_id="p1")
        await editor.wait_for(lambda: _working(editor))
        assert await editor.command("tether.cancel") == {"cancelled": True}
        assert (await pending)["stopReason"] == "cancelled"
        await _still_serving(editor)


@pytest.mark.slow
async def test_a_cancel_sent_with_the_prompt_counts(project: Path, tmp_path: Path) -> None:
    async with lsp_in_process(project, _slow_then_quick(tmp_path)) as (editor, _):
        await editor.start()
        pending = editor.prompt_request("never mind", msg_id="p1")
        editor.cancel_request(types.CancelParams(id="p1"))  # same moment: before any answer
        result = await pending
        assert result["stopReason"] == "cancelled" and result["text"] == ""
        assert not _working(editor)
        # The script's slow round was never asked for: the next turn gets it.


@pytest.mark.slow
async def test_a_second_prompt_is_refused_while_one_runs(project: Path, tmp_path: Path) -> None:
    async with lsp_in_process(project, _slow_then_quick(tmp_path)) as (editor, _):
        await editor.start()
        pending = editor.prompt_request("take your time", msg_id="p1")
        await editor.wait_for(lambda: _working(editor))
        with pytest.raises(JsonRpcException) as refused:
            await editor.prompt("me too")
        assert refused.value.code == -32803
        assert "already running a prompt" in refused.value.message
        editor.cancel_request(types.CancelParams(id="p1"))
        assert (await pending)["stopReason"] == "cancelled"
        await _still_serving(editor)


@pytest.mark.slow
async def test_shutdown_ends_the_turn_then_exit(project: Path, tmp_path: Path) -> None:
    async with lsp_in_process(project, _slow_then_quick(tmp_path)) as (editor, codes):
        await editor.start()
        pending = editor.prompt_request("take your time", msg_id="p1")
        await editor.wait_for(lambda: _working(editor))
        await editor.shutdown_async(None)
        assert (await pending)["stopReason"] == "cancelled"
        editor.exit(None)
    assert codes == [0]


async def test_exit_without_shutdown_exits_1(project: Path, tmp_path: Path) -> None:
    async with lsp_in_process(project, _slow_then_quick(tmp_path)) as (editor, codes):
        await editor.start()
        editor.exit(None)
    assert codes == [1]
