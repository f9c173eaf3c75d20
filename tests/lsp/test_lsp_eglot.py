"""`tether lsp` in a real Emacs through eglot (Debian 12: emacs-nox 28.2, elpa-eglot 1.9) with the
setup in editors/lsp/eglot.el, on a terminal tmux runs: keys typed as a user types them, judged
by what Emacs showed (its messages and minibuffer prompts), the files and the stored session.

Eglot 1.9 announces neither `window.showMessage` nor work-done progress nor `showDocument`, and
gives up on `workspace/executeCommand` after jsonrpc's 10 s request timeout."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.eglot_runner import Emacs, emacs_on, needs_emacs
from tests.support.lsp_client import script_file, write_call
from tests.support.stored import tool_results

pytestmark = [needs_emacs, pytest.mark.slow]

EGLOT = r"^MESSAGE: \[eglot\] Server reports "


@pytest.fixture(autouse=True)
def _notes(project: Path) -> None:
    (project / "notes.txt").write_text("hello\n")  # text-mode: a buffer tether serves


def _write_new(tmp_path: Path, then: str) -> Path:
    rounds = [[{"text": "Writing.\n"}, write_call("w1", "new.txt", "New\n")], [{"text": then}]]
    return script_file(tmp_path / "script.json", rounds)


def _session(home: Path) -> str:
    [session] = (home / "spill").iterdir()
    return session.name


def _clean(emacs: Emacs, home: Path) -> None:
    """Emacs showed no error, and tether logged no warning (eglot's connect, its answers)."""
    errors = [e for e in emacs.entries() if e.startswith("ERROR: ")]
    assert errors == [], emacs.report()
    logged = [
        line for log in (home / "logs").glob("*.log") for line in log.read_text().splitlines()
    ]
    assert [line for line in logged if " WARNING " in line or " ERROR " in line] == []


def test_an_edit_allowed_at_the_question_lands(tmp_path: Path, project: Path, home: Path) -> None:
    script = _write_new(tmp_path, "Wrote new.txt.")
    with emacs_on(tmp_path, project, home, script, "notes.txt") as emacs:
        emacs.command("tether-prompt", "write new.txt")
        asked = emacs.question()
        assert "tether asks to Create new.txt (+1 -0)" in asked
        assert asked.endswith("Choose an option: [Reject]")  # what eglot fills in
        emacs.keys("C-a", "C-k")
        emacs.type("Allow")
        emacs.keys("Enter")
        emacs.shown(r"^MESSAGE: Wrote new\.txt\.$", "the answer, echoed")
        progress = [e for e in emacs.entries() if e.startswith("MESSAGE: [eglot] Server reports")]
        assert progress == [
            "MESSAGE: [eglot] Server reports (type=4): tether: working: write new.txt",
            "MESSAGE: [eglot] Server reports (type=4): tether: Running: Create new.txt",
            "MESSAGE: [eglot] Server reports (type=4): tether: Done",
        ], emacs.report()
        _clean(emacs, home)
    assert (project / "new.txt").read_text() == "New\n"
    [result] = tool_results(home, _session(home))
    assert result.startswith("[approval] user (once)")


def test_the_diff_is_on_screen_at_the_question_and_at_eglots_own_confirm(
    tmp_path: Path, project: Path, home: Path
) -> None:
    """The minibuffer keeps only a question's last lines: `*tether review*` shows it whole (the
    call and its diff) while it is asked; eglot then asks before it applies the edit to the open
    buffer, naming only the file, and `*tether review*` shows that edit's diff meanwhile."""
    edit = {"path": "notes.txt", "old": "hello", "new": "hello, world"}
    rounds = [
        [{"tool_call": {"id": "e1", "name": "edit_replace", "arguments": edit}}],
        [{"text": "Edited."}],
    ]
    script = script_file(tmp_path / "script.json", rounds)
    diff = ["-hello", "+hello, world"]
    with emacs_on(tmp_path, project, home, script, "notes.txt") as emacs:
        emacs.command("tether-prompt", "greet the world")
        emacs.question()
        emacs.on_screen(
            lambda s: (
                "*tether review*" in s
                and "tether asks to Edit notes.txt (+1 -1)" in s
                and all(f"\n{line}\n" in s for line in diff)
            ),
            "the question's diff",
        )
        emacs.keys("C-a", "C-k")
        emacs.type("Allow")
        emacs.keys("Enter")
        emacs.shown(r"^PROMPT: \[eglot\] Server wants to edit:", "eglot's own confirm")
        emacs.on_screen(
            lambda s: (
                "*tether review*" in s
                and f"+++ {project / 'notes.txt'}" in s
                and all(f"\n{line}\n" in s for line in diff)
            ),
            "the edit's diff at eglot's confirm",
        )
        emacs.type("y")
        emacs.shown(r"^MESSAGE: Edited\.$", "the answer, echoed")
        emacs.on_screen(lambda s: "*tether review*" not in s, "the review window closed")
        _clean(emacs, home)
    assert (project / "notes.txt").read_text() == "hello\n"  # the buffer changed, not the disk
    [result] = tool_results(home, _session(home))
    assert result.startswith("[approval] user (once)")


def test_enter_alone_at_the_question_rejects(tmp_path: Path, project: Path, home: Path) -> None:
    script = _write_new(tmp_path, "Not written.")
    with emacs_on(tmp_path, project, home, script, "notes.txt") as emacs:
        emacs.command("tether-prompt", "write new.txt")
        emacs.question()
        emacs.keys("Enter")
        emacs.shown(r"^MESSAGE: Not written\.$", "the answer, echoed")
        _clean(emacs, home)
    assert not (project / "new.txt").exists()
    [result] = tool_results(home, _session(home))
    assert "REJECTED" in result and "user declined" in result


def test_a_code_action_longer_than_the_request_timeout_still_answers(
    tmp_path: Path, project: Path, home: Path
) -> None:
    """Eglot runs a code action's command as a request it gives up on after 10 s; here that
    timeout is 3 s (jsonrpc-default-request-timeout) and the turn takes 4 s."""
    rounds = [[{"text": "Reading it.\n"}, {"delay": 4}, {"text": "It greets."}]]
    script = script_file(tmp_path / "script.json", rounds)
    env = {"TETHER_TEST_REQUEST_TIMEOUT": "3"}
    with emacs_on(tmp_path, project, home, script, "notes.txt", **env) as emacs:
        # tether answers `initialize` at once, then loads the engine: on a busy machine that
        # can outlast the shortened timeout, so the first request waits for it (10 s).
        emacs.command("tether-cancel")
        emacs.shown(r"^MESSAGE: tether: no turn is running$", "tether to be ready")
        emacs.command("eglot-code-actions", "tether: Explain")
        emacs.shown(EGLOT + r"\(type=4\): tether: working: Explain what the selected code does")
        answer = emacs.shown(EGLOT + r"\(type=3\): tether: ", "the answer as a message")
        transcript = home / "spill" / _session(home) / "transcript.md"
        assert answer == (
            "MESSAGE: [eglot] Server reports (type=3): tether: Reading it.\nIt greets.\n"
            f"Transcript: {transcript}"
        )
        _clean(emacs, home)
    assert "It greets." in transcript.read_text()


def test_quitting_and_tether_cancel_stop_the_turn(
    tmp_path: Path, project: Path, home: Path
) -> None:
    slow = [{"text": "working"}, {"delay": 60}]
    # The slow rounds last: a turn cancelled before its model request leaves its round unread.
    rounds = [[write_call("w1", "new.txt", "New\n")], slow, slow]
    script = script_file(tmp_path / "script.json", rounds)
    with emacs_on(tmp_path, project, home, script, "notes.txt") as emacs:
        # C-g at the approval question: dismissed, and the turn stops.
        emacs.command("tether-prompt", "write new.txt")
        emacs.question()
        emacs.keys("C-g")
        emacs.shown(r"^MESSAGE: tether: cancelled$", "the cancelled answer")
        # C-g while tether-prompt waits for the turn.
        mark = emacs.mark()
        emacs.command("tether-prompt", "slow one")
        emacs.shown(EGLOT + r"\(type=4\): tether: working: slow one")
        emacs.keys("C-g")
        emacs.shown(r"^MESSAGE: tether: cancelled(\nworking)?$", "the cancelled answer", mark)
        # A prompt in the background (C-u), stopped by M-x tether-cancel.
        emacs.command("tether-prompt", "slow two", prefix=True)
        emacs.shown(EGLOT + r"\(type=4\): tether: working: slow two")
        emacs.command("tether-cancel")
        cancelled = EGLOT + r"\(type=3\): tether: Cancelled(\nworking)?\nTranscript: "
        emacs.shown(cancelled, "the cancelled message")
        _clean(emacs, home)
    assert not (project / "new.txt").exists()


def test_a_cancelled_turns_partial_answer_is_shown_once(
    tmp_path: Path, project: Path, home: Path
) -> None:
    """After a cancel, the answer so far is shown once: echoed when `tether-prompt` waited
    (`C-g`), in tether's message when it ran in the background (`tether-cancel`); the other
    entries say only that the turn ended. Each turn says its partial answer, then starts a
    60 s `wait`, whose start (a message) shows the answer was streamed before the cancel."""
    rounds = [
        [
            {"text": f"Partial {n}.\n"},
            {"tool_call": {"id": f"w{n}", "name": "wait", "arguments": {"seconds": 60}}},
        ]
        for n in (1, 2)
    ]
    script = script_file(tmp_path / "script.json", rounds)
    with emacs_on(tmp_path, project, home, script, "notes.txt") as emacs:
        for n, background in ((1, False), (2, True)):
            mark = emacs.mark()
            emacs.command("tether-prompt", f"turn {n}", prefix=background)
            emacs.shown(EGLOT + r"\(type=4\): tether: Running: Wait 60 s", "the wait", mark)
            if background:
                emacs.command("tether-cancel")
                emacs.shown(EGLOT + r"\(type=3\): tether: Cancelled\nPartial", "the end", mark)
            else:
                emacs.keys("C-g")
                emacs.shown(r"^MESSAGE: tether: cancelled\nPartial", "the echo", mark)
            said = [e for e in emacs.entries()[mark:] if f"Partial {n}." in e]
            assert len(said) == 1, emacs.report()
        _clean(emacs, home)
