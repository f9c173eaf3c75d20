"""`tether -p --continue` (the newest session of this folder) and `--resume ID`: the turn goes on
in the stored session, whose id the run prints; a folder without one, or an unknown id, is a
usage error in one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.harness import REPO, script

pytestmark = pytest.mark.slow


def _run(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TETHER_HOME": str(home), "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "tether", *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env,
        timeout=90,
    )


def _ask_json(home: Path, answer: Path, cwd: Path, prompt: str, *flags: str) -> str:
    done = _run(home, "-p", prompt, "--output-format", "json", "--script", str(answer),
                "--cwd", str(cwd), *flags)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["session_id"]


def test_continue_takes_the_newest_session_of_this_folder(
    home: Path, project: Path, tmp_path: Path
) -> None:
    answer = script(tmp_path / "a.json", [[{"text": "noted"}]])
    other = tmp_path / "other"
    other.mkdir()
    older = _ask_json(home, answer, project, "first question")
    newer = _ask_json(home, answer, project, "second question")
    elsewhere = _ask_json(home, answer, other, "a question elsewhere")  # newest of all
    assert len({older, newer, elsewhere}) == 3
    continued = _ask_json(home, answer, project, "third question", "--continue")
    assert continued == newer
    shown = _run(home, "sessions", "show", newer).stdout
    assert "second question" in shown and "third question" in shown
    text = _run(home, "-p", "fourth", "-c", "--script", str(answer), "--cwd", str(project))
    assert text.returncode == 0, text.stderr
    assert text.stdout == "noted\n" and text.stderr.startswith(f"[session: {newer}]\n")


def test_resume_goes_on_with_the_named_session(home: Path, project: Path, tmp_path: Path) -> None:
    answer = script(tmp_path / "a.json", [[{"text": "noted"}]])
    first = _ask_json(home, answer, project, "remember 42")
    _ask_json(home, answer, project, "something else")
    resumed = _ask_json(home, answer, project, "what was the number?", "--resume", first)
    assert resumed == first
    shown = _run(home, "sessions", "show", first).stdout
    assert "remember 42" in shown and "what was the number?" in shown
    assert "something else" not in shown


def test_nothing_to_continue_and_unknown_ids_are_usage_errors(
    home: Path, project: Path, tmp_path: Path
) -> None:
    answer = script(tmp_path / "a.json", [[{"text": "noted"}]])
    done = _run(home, "-p", "go on", "-c", "--script", str(answer), "--cwd", str(project))
    assert done.returncode == 2
    assert done.stderr == f"tether: no session to continue in {project} (start one without -c)\n"
    done = _run(home, "ask", "go on", "-r", "sess_nope", "--script", str(answer),
                "--cwd", str(project))  # fmt: skip
    assert done.returncode == 2 and done.stdout == ""
    assert len(done.stderr.splitlines()) == 1 and "sess_nope" in done.stderr, done.stderr


def test_resuming_from_another_folder_asks_and_no_terminal_refuses(
    home: Path, project: Path, tmp_path: Path
) -> None:
    answer = script(tmp_path / "a.json", [[{"text": "noted"}]])
    first = _ask_json(home, answer, project, "in the project")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    refused = _run(home, "-p", "again", "-r", first, "--script", str(answer),
                   "--cwd", str(elsewhere))  # fmt: skip
    assert refused.returncode == 3, refused.stderr  # exit_codes.DENIED: nobody to ask
    assert "Abort (no terminal to ask on)" in refused.stderr
    assert refused.stderr.endswith(f"the user chose not to open it from {elsewhere}\n")
    kept = _ask_json(home, answer, elsewhere, "again", "-r", first, "--yes")
    assert kept == first
