"""`tether` alone on a terminal: the chat, driven through a real PTY with the scripted model (the
scripts beside this file), judged by what the screen shows, the files and the exit code."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.terminal_screen import Screen

pytestmark = pytest.mark.slow

HERE = Path(__file__).parent
PROMPT = "\N{SINGLE RIGHT-POINTING ANGLE QUOTATION MARK}"


@pytest.fixture
def screens() -> Iterator[list[Screen]]:
    opened: list[Screen] = []
    yield opened
    for s in opened:
        s.close()


def _chat(screens: list[Screen], home: Path, project: Path, script: str, *flags: str) -> Screen:
    argv = ["--script", str(HERE / script), "--cwd", str(project), *flags]
    screen = Screen(argv, home)
    screens.append(screen)
    return screen


def _session_id(text: str) -> str:
    return text.split(" session ", 1)[1].split()[0]


def test_two_turns_stream_markdown_in_one_session(
    home: Path, project: Path, screens: list[Screen]
) -> None:
    chat = _chat(screens, home, project, "chat_turns.json")
    chat.wait_for(PROMPT)
    chat.type("hello")
    chat.press("enter")
    answer = chat.wait_for("second item")
    assert "Some bold words and a list:" in answer  # Markdown: the stars are styling now
    assert "• first item" in answer
    chat.wait_for(PROMPT)
    chat.type("and again")
    chat.press("enter")
    chat.wait_for("The second answer.")
    chat.wait_for(PROMPT)
    chat.press("ctrl-d")
    assert chat.exit_code() == 0


def test_tool_cards_and_the_round_menu_answer_by_option_id(
    home: Path, project: Path, screens: list[Screen]
) -> None:
    (project / "app.py").write_text('def greet(name):\n    return "hi"\n')
    (project / "check.py").write_text('print("Hello, Ada!")\nprint("checked")\n')
    chat = _chat(screens, home, project, "chat_tools.json")
    chat.wait_for(PROMPT)
    chat.type("fix the greeting")
    chat.press("enter")
    cards = chat.wait_for("Review one by one")  # the round's card: one menu for both edits
    assert "▸ Replace app.py  [edit]" in cards and "app.py +1 -1" in cards
    assert "▸ Create notes.md  [edit]" in cards and "notes.md (new) +3 -0" in cards
    assert "1. Allow all 2" in cards and "3. Reject all 2" in cards
    chat.press("down", "down", "enter")  # the arrow keys to "Reject all 2"
    chat.wait_for("? Edit app.py, notes.md: Reject all 2")
    menu = chat.wait_for("Always reject")  # the command's own card and menu
    assert "$ python3 check.py" in menu and "⚠ python3 runs the script check.py" in menu
    chat.press("1")  # a number picks at once
    chat.wait_for("? python3 check.py: Allow")
    ran = chat.wait_for("All done.")
    assert "✓ python3 check.py" in ran and "Hello, Ada!" in ran and "checked" in ran
    chat.wait_for(PROMPT)
    chat.press("ctrl-d")
    assert chat.exit_code() == 0
    assert (project / "app.py").read_text() == 'def greet(name):\n    return "hi"\n'
    assert not (project / "notes.md").exists()


def test_slash_commands_complete_with_tab(home: Path, project: Path, screens: list[Screen]) -> None:
    chat = _chat(screens, home, project, "chat_turns.json")
    chat.wait_for(PROMPT)
    chat.type("/")
    chat.press("tab")
    menu = chat.wait_for("/status")  # the agent's commands, with what each does
    assert "/undo" in menu and "Revert the file changes" in menu
    chat.press("ctrl-c")  # drop the line; the next Ctrl-C would exit
    chat.wait_for("Ctrl-C again")
    chat.type("/stat")
    chat.press("tab")
    chat.wait_for("/status")
    chat.press("enter")
    chat.wait_for("Mode")  # /status answered by the agent itself, not the model
    chat.wait_for(PROMPT)
    chat.press("ctrl-d")
    assert chat.exit_code() == 0


def test_ctrl_c_cancels_the_turn_and_twice_at_the_prompt_exits(
    home: Path, project: Path, screens: list[Screen]
) -> None:
    chat = _chat(screens, home, project, "chat_cancel.json")
    chat.wait_for(PROMPT)
    chat.type("take your time")
    chat.press("enter")
    chat.wait_for("Working on it")
    chat.press("ctrl-c")
    chat.wait_for("[cancelled]")
    chat.wait_for(PROMPT)
    chat.type("go on")
    chat.press("enter")
    chat.wait_for("After the cancel.")  # the same chat, the next turn
    chat.wait_for(PROMPT)
    chat.press("ctrl-c")
    chat.wait_for("Ctrl-C again")
    chat.press("ctrl-c")
    assert chat.exit_code() == 0
    assert "never shown" not in chat.text


def test_history_is_kept_across_chats(home: Path, project: Path, screens: list[Screen]) -> None:
    first = _chat(screens, home, project, "chat_turns.json")
    first.wait_for(PROMPT)
    first.type("a question to remember")
    first.press("enter")
    first.wait_for("second item")
    first.wait_for(PROMPT)
    first.type("/exit")
    first.press("enter")
    assert first.exit_code() == 0
    assert "a question to remember" in (home / "chat_history").read_text()
    second = _chat(screens, home, project, "chat_turns.json")
    second.wait_for(PROMPT)
    second.press("up", "up")
    second.wait_for("a question to remember")
    second.press("ctrl-c", "ctrl-c")
    assert second.exit_code() == 0


def test_continue_and_resume_replay_the_conversation(
    home: Path, project: Path, screens: list[Screen]
) -> None:
    first = _chat(screens, home, project, "chat_first.json")
    opened = first.wait_for(PROMPT)
    session = _session_id(opened)
    first.type("remember the word kiwi")
    first.press("enter")
    first.wait_for("Noted: the word is kiwi.")
    first.wait_for(PROMPT)
    first.press("ctrl-d")
    assert first.exit_code() == 0

    again = _chat(screens, home, project, "chat_again.json", "--continue", "--mode", "code")
    replay = again.wait_for(PROMPT)
    assert "mode code" in replay
    assert "> remember the word kiwi" in replay and "Noted: the word is kiwi." in replay
    assert _session_id(replay) == session
    again.type("which word?")
    again.press("enter")
    again.wait_for("Still kiwi.")
    again.wait_for(PROMPT)
    again.press("ctrl-d")
    assert again.exit_code() == 0

    resumed = _chat(screens, home, project, "chat_again.json", "--resume", session)
    replay = resumed.wait_for(PROMPT)
    assert "> which word?" in replay and "Still kiwi." in replay
    resumed.press("ctrl-d")
    assert resumed.exit_code() == 0


def test_nothing_to_continue_or_resume_is_one_line(
    home: Path, project: Path, screens: list[Screen]
) -> None:
    empty = _chat(screens, home, project, "chat_first.json", "--continue")
    assert empty.exit_code() == 2
    assert f"tether: no session to continue in {project}" in empty.text
    unknown = _chat(screens, home, project, "chat_first.json", "--resume", "sess_nope")
    assert unknown.exit_code() == 2
    assert "sess_nope" in unknown.text and "Traceback" not in unknown.text


def test_keys_typed_during_a_turn_wait_for_the_prompt(
    home: Path, project: Path, screens: list[Screen]
) -> None:
    chat = _chat(screens, home, project, "chat_cancel.json")
    chat.wait_for(PROMPT)
    chat.type("take your time")
    chat.press("enter")
    chat.wait_for("Working on it")
    chat.press("ctrl-d")  # not an end of input now: a key for the next prompt
    chat.press("ctrl-c")
    chat.wait_for("[cancelled]")
    assert chat.exit_code() == 0  # the Ctrl-D, read at the prompt on an empty line


def test_a_long_answer_is_drawn_once(home: Path, project: Path, screens: list[Screen]) -> None:
    """Taller than the terminal: each finished paragraph is printed once, not redrawn into the
    scrollback; a code fence with a blank line inside stays one block."""
    chat = _chat(screens, home, project, "chat_long.json")
    chat.wait_for(PROMPT)
    chat.type("a long one")
    chat.press("enter")
    chat.wait_for("The end.")
    chat.wait_for(PROMPT)
    chat.press("ctrl-d")
    assert chat.exit_code() == 0
    for n in (1, 15, 30):
        assert chat.text.count(f"Block number {n} ends here.") == 1
    assert "code line" in chat.text and "still code" in chat.text


def test_ctrl_c_at_the_menu_refuses_and_cancels_the_turn(
    home: Path, project: Path, screens: list[Screen]
) -> None:
    before = (project / "README.md").read_text()
    chat = Screen(["--cwd", str(project)], home)  # the embedded demo model proposes an edit
    screens.append(chat)
    chat.wait_for(PROMPT)
    chat.type("tidy up")
    chat.press("enter")
    chat.wait_for("Esc cancels the turn")
    chat.press("ctrl-c")
    chat.wait_for("? Replace README.md: cancelled")
    chat.wait_for("[cancelled]")
    chat.wait_for(PROMPT)
    chat.type("/exit")
    chat.press("enter")
    assert chat.exit_code() == 0
    assert (project / "README.md").read_text() == before


def test_a_backslash_or_alt_enter_continues_the_prompt_on_a_new_line(
    home: Path, project: Path, screens: list[Screen]
) -> None:
    first = _chat(screens, home, project, "chat_first.json")
    first.wait_for(PROMPT)
    first.type("line one\\")
    first.press("enter")
    first.type("line two")
    first.press("escape", "enter")
    first.type("line three")
    first.press("enter")
    first.wait_for("Noted: the word is kiwi.")
    first.wait_for(PROMPT)
    first.press("ctrl-d")
    assert first.exit_code() == 0
    again = _chat(screens, home, project, "chat_again.json", "--continue")
    replay = again.wait_for(PROMPT)  # one prompt of three lines, the backslash gone
    assert "> line one\nline two\nline three\n" in replay
    again.press("ctrl-d")
    assert again.exit_code() == 0
