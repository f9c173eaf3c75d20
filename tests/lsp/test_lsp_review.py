"""The change is seen before it is decided, in every LSP client: the approval question
(`window/showMessageRequest`) carries each call's diff (a command: its line and where it runs),
and a client that shows documents is shown the whole diff as a document before it is asked.
Judged by the frames the client receives, in the order it receives them."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types

from tests.support.lsp_client import FULL_CAPS, Editor, lsp_in_process, script_file, write_call
from tests.support.stored import tool_results
from tether.rpc.lsp.approval_text import DIFF_LINES

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

# A client that renders the question's text and shows no documents (ts-lsp-client's users,
# eglot 1.9): progress and questions, no showDocument.
TEXT_ONLY = types.ClientCapabilities(
    window=types.WindowClientCapabilities(
        work_done_progress=True, show_message=types.ShowMessageRequestClientCapabilities()
    )
)
EDIT = {"path": "README.md", "old": "Hello.", "new": "Hi there."}


@pytest.fixture(autouse=True)
def _home(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TETHER_HOME", str(home))


def _round(tmp_path: Path) -> Path:
    """One round editing README.md and creating notes.md, then an answer."""
    calls = [
        {"tool_call": {"id": "e1", "name": "edit_replace", "arguments": EDIT}},
        write_call("w1", "notes.md", "Notes\nmore\n"),
    ]
    return script_file(tmp_path / "round.json", [calls, [{"text": "Done."}]])


def _seen(editor: Editor) -> list[list[types.ShowDocumentParams]]:
    """Record, at each question, the documents the client had been shown by then."""
    seen: list[list[types.ShowDocumentParams]] = []
    choose = editor.choose
    assert choose is not None

    def ask(params: types.ShowMessageRequestParams) -> str | None:
        seen.append(list(editor.shown))
        return choose(params)

    editor.choose = ask
    return seen


async def test_the_question_carries_each_calls_diff(project: Path, tmp_path: Path) -> None:
    async with lsp_in_process(project, _round(tmp_path)) as (editor, _):
        await editor.start(TEXT_ONLY)
        await editor.prompt("edit")
        [asked] = editor.asked
        assert editor.shown == []  # this client shows no documents: the text is all it has
    assert asked.message.splitlines() == [
        "tether asks to Edit README.md, notes.md:",
        "1. Edit README.md (+1 -1)",
        "@@ -1,3 +1,3 @@",
        " # Demo project",
        " ",
        "-Hello.",
        "+Hi there.",
        "2. Create notes.md (+2 -0)",
        "@@ -0,0 +1,2 @@",
        "+Notes",
        "+more",
        "Allow these changes?",
    ]


async def test_one_call_carries_its_diff_after_what_always_covers(
    project: Path, tmp_path: Path
) -> None:
    script = script_file(tmp_path / "one.json", [[write_call("w1", "a.txt", "A\n")], []])
    async with lsp_in_process(project, script) as (editor, _):
        await editor.start(TEXT_ONLY)
        await editor.prompt("write")
        [asked] = editor.asked
    assert asked.message.splitlines() == [
        "tether asks to Create a.txt (+1 -0)",
        "(Always allow: creating a.txt, for this session)",
        "@@ -0,0 +1 @@",
        "+A",
        "Allow this change?",
    ]


async def test_a_client_that_shows_documents_sees_the_whole_diff_first(
    project: Path, tmp_path: Path
) -> None:
    async with lsp_in_process(project, _round(tmp_path)) as (editor, _):
        seen = _seen(editor)
        await editor.start(FULL_CAPS)
        result = await editor.prompt("edit")
        await editor.wait_for(lambda: len(editor.shown) == 2)  # and the transcript after
    [[review]] = seen
    assert review.take_focus is False and review.uri.endswith("/review-1.diff")
    path = Path(review.uri.removeprefix("file://"))
    assert path.parent.name == result["sessionId"]
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    readme, notes = project / "README.md", project / "notes.md"
    assert path.read_text().splitlines() == [
        f"--- {readme}",
        f"+++ {readme}",
        "@@ -1,3 +1,3 @@",
        " # Demo project",
        " ",
        "-Hello.",
        "+Hi there.",
        "--- /dev/null",
        f"+++ {notes}",
        "@@ -0,0 +1,2 @@",
        "+Notes",
        "+more",
    ]
    assert editor.shown[1].uri == result["transcript"]


async def test_one_by_one_after_the_round_shows_no_new_document(
    project: Path, tmp_path: Path
) -> None:
    answers = ["One by one", "Allow", "Reject"]
    async with lsp_in_process(project, _round(tmp_path), lambda p: answers.pop(0)) as (
        editor,
        _,
    ):
        seen = _seen(editor)
        await editor.start(FULL_CAPS)
        await editor.prompt("edit")
    assert [len(s) for s in seen] == [1, 1, 1]  # the round's document serves its calls
    assert editor.asked[1].message.splitlines()[-3:-1] == ["-Hello.", "+Hi there."]
    assert editor.asked[2].message.splitlines()[-3:-1] == ["+Notes", "+more"]


async def test_a_long_diff_is_cut_and_the_question_names_the_whole(
    project: Path, tmp_path: Path
) -> None:
    text = "".join(f"line {n}\n" for n in range(100))
    script = script_file(tmp_path / "long.json", [[write_call("w1", "long.txt", text)], []])
    async with lsp_in_process(project, script) as (editor, _):
        await editor.start(TEXT_ONLY)
        await editor.prompt("write")
        [asked] = editor.asked
    lines = asked.message.splitlines()
    hunk = lines[lines.index("@@ -0,0 +1,100 @@") :]
    assert len(hunk) == DIFF_LINES + 2 and hunk[DIFF_LINES - 1] == f"+line {DIFF_LINES - 2}"
    note, question = hunk[-2:]
    assert question == "Allow this change?"
    assert note.startswith("… 41 more lines of the diff (the whole diff: ")
    whole = Path(note.removeprefix("… 41 more lines of the diff (the whole diff: ")[:-1])
    assert whole.read_text().count("\n+line ") == 100


async def test_a_command_question_says_what_runs_and_where(
    home: Path, project: Path, tmp_path: Path
) -> None:
    run = {"argv": ["touch", "made.txt"], "unconfined": True, "reason": "needs my keyring"}
    script = script_file(
        tmp_path / "run.json",
        [[{"tool_call": {"id": "r1", "name": "run_argv", "arguments": run}}], [{"text": "ok"}]],
    )
    async with lsp_in_process(project, script, lambda p: "Reject") as (editor, _):
        await editor.start(TEXT_ONLY)
        result = await editor.prompt("touch it")
        [asked] = editor.asked
    assert asked.message.splitlines() == [
        "tether asks to touch made.txt",
        "⚠ runs OUTSIDE the sandbox, with your permissions: needs my keyring",
    ]
    assert not (project / "made.txt").exists()
    [rejected] = tool_results(home, result["sessionId"])
    assert "user declined" in rejected
