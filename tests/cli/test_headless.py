"""`tether -p` / `tether ask` as scripts use them: the prompt from stdin, the three output
formats, and exit codes that tell a failed turn, a denied permission and a usage error apart."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.harness import REPO, script, slow_script

pytestmark = pytest.mark.slow

TETHER = [sys.executable, "-m", "tether"]
WRITE = {"id": "w1", "name": "write_file", "arguments": {"path": "notes.md", "content": "n\n"}}


def _run(
    home: Path, *args: str, stdin: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "TETHER_HOME": str(home), "PYTHONPATH": str(REPO), **(env or {})}
    full.pop("TETHER_NONINTERACTIVE", None)
    return subprocess.run(
        [*TETHER, *args],
        input=stdin,
        stdin=subprocess.DEVNULL if stdin is None else None,
        capture_output=True,
        text=True,
        env=full,
        timeout=90,
    )


def _shown(home: Path, session_id: str) -> str:
    """The stored session as Markdown: what the model was asked."""
    done = _run(home, "sessions", "show", session_id)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _reading(tmp_path: Path) -> Path:
    read = {"id": "r1", "name": "read_file", "arguments": {"path": "README.md"}}
    return script(
        tmp_path / "read.json",
        [
            [{"thought": "look first"}, {"text": "Reading."}, {"tool_call": read},
             {"usage": {"input": 100, "output": 20}}],
            [{"text": "It says "}, {"text": "hello."}, {"usage": {"input": 150, "output": 5}}],
        ],
    )  # fmt: skip


def test_piped_input_is_the_prompt(home: Path, project: Path, tmp_path: Path) -> None:
    s = _reading(tmp_path)
    for args in (["-p"], ["-p", "-"], ["ask", "-"], ["ask"]):
        done = _run(
            home, *args, "--output-format", "json", "--script", str(s), "--cwd", str(project),
            stdin=f"what does the readme say ({' '.join(args)})?\n",
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        result = json.loads(done.stdout)
        assert f"what does the readme say ({' '.join(args)})?" in _shown(home, result["session_id"])


def test_piped_input_joins_a_given_prompt_as_context(
    home: Path, project: Path, tmp_path: Path
) -> None:
    s = _reading(tmp_path)
    done = _run(
        home, "-p", "explain this log", "--output-format", "json", "--script", str(s),
        "--cwd", str(project), stdin="ERROR disk full on /var\n",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    shown = _shown(home, json.loads(done.stdout)["session_id"])
    assert "explain this log" in shown and "ERROR disk full on /var" in shown
    assert shown.index("explain this log") < shown.index("ERROR disk full")


def test_an_empty_prompt_is_refused_in_one_line(home: Path, project: Path) -> None:
    for args, stdin in ((["-p", "   "], None), (["-p"], ""), (["ask"], " \n\n"), (["-p"], None)):
        done = _run(home, *args, "--cwd", str(project), stdin=stdin)
        assert done.returncode == 2, (args, done.stderr)
        assert done.stdout == ""
        assert done.stderr == "tether: the prompt is empty: give it as an argument or pipe it in\n"


def test_text_puts_the_answer_on_stdout_and_the_rest_on_stderr(
    home: Path, project: Path, tmp_path: Path
) -> None:
    s = _reading(tmp_path)
    done = _run(home, "-p", "read it", "--script", str(s), "--cwd", str(project))
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Reading.\nIt says hello.\n"
    err = done.stderr.splitlines()
    assert err[0].startswith("[session: sess_") and err[0].endswith("]")
    assert "  (thinking) look first" in err and "▸ Read README.md  [read]" in err
    assert err[-2:] == ["[stop: end_turn]", "[usage: 2 rounds, 250 tokens in, 25 out]"]


def test_json_is_one_result_object(home: Path, project: Path, tmp_path: Path) -> None:
    s = _reading(tmp_path)
    done = _run(
        home, "-p", "read it", "--output-format", "json", "--script", str(s), "--cwd", str(project)
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    result = json.loads(done.stdout)
    duration = result.pop("duration_ms")
    session = result.pop("session_id")
    assert isinstance(duration, int) and duration >= 0 and session.startswith("sess_")
    assert result == {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "exit_code": 0,
        "result": "It says hello.",
        "error": None,
        "stop_reason": "end_turn",
        "num_rounds": 2,
        "usage": {"input_tokens": 250, "output_tokens": 25, "cache_read_input_tokens": 0},
        "total_cost_usd": None,
        "permission_denials": [],
    }


def test_json_prices_the_turn_when_the_model_has_prices(
    home: Path, project: Path, tmp_path: Path
) -> None:
    priced = {"name": "priced", "input_price": 2.0, "output_price": 10.0}
    s = script(tmp_path / "s.json", [[{"text": "ok"}, {"usage": {"input": 1000, "output": 100}}]])
    doc = json.loads(s.read_text())
    doc["model"] = priced
    s.write_text(json.dumps(doc))
    done = _run(home, "-p", "hi", "--output-format", "json", "--script", str(s))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["total_cost_usd"] == pytest.approx(0.003)


def _events(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines()]


def test_stream_json_is_one_documented_event_per_line(
    home: Path, project: Path, tmp_path: Path
) -> None:
    s = script(tmp_path / "w.json", [[{"tool_call": WRITE}], [{"text": "Could not write."}]])
    done = _run(
        home, "-p", "write notes", "--no", "--output-format", "stream-json",
        "--script", str(s), "--cwd", str(project),
    )  # fmt: skip
    assert done.returncode == 3, done.stderr  # exit_codes.DENIED
    events = _events(done.stdout)
    assert [e["type"] for e in events] == [
        "system", "tool_call", "permission_request", "permission_response", "tool_result",
        "text", "result",
    ]  # fmt: skip
    init, call, asked, answered, outcome, text, result = events
    assert init["subtype"] == "init" and init["cwd"] == str(project)
    assert init["model"] == "scripted" and init["mode"] == "ask"
    assert call["tool_call_id"] == "w1" and call["name"] == "write_file"
    assert call["input"] == WRITE["arguments"] and call["title"] == "Create notes.md"
    assert asked["tool_call_id"] == "w1" and {o["kind"] for o in asked["options"]} >= {
        "allow_once",
        "reject_once",
    }
    assert answered == {
        "type": "permission_response",
        "tool_call_id": "w1",
        "title": "Create notes.md",
        "outcome": "reject_once",
        "by": "--no",
    }
    assert outcome["status"] == "failed" and "REJECTED" in outcome["output"]
    assert text == {"type": "text", "text": "Could not write."}
    assert result["session_id"] == init["session_id"] and result["exit_code"] == 3
    assert result["subtype"] == "error_permission_denied" and result["is_error"] is True
    denial = {"tool_call_id": "w1", "title": "Create notes.md", "reason": "--no"}
    assert result["permission_denials"] == [denial]
    assert not (project / "notes.md").exists()


def test_a_permission_needed_without_a_terminal_exits_3(
    home: Path, project: Path, tmp_path: Path
) -> None:
    s = script(tmp_path / "w.json", [[{"tool_call": WRITE}], [{"text": "Could not write."}]])
    done = _run(home, "-p", "write", "--output-format", "json", "--script", str(s),
                "--cwd", str(project))  # fmt: skip
    assert done.returncode == 3, done.stderr
    denials = json.loads(done.stdout)["permission_denials"]
    assert denials == [{"tool_call_id": "w1", "title": "Create notes.md", "reason": "no terminal"}]
    allowed = _run(home, "-p", "write", "--yes", "--script", str(s), "--cwd", str(project))
    assert allowed.returncode == 0, allowed.stderr
    assert (project / "notes.md").read_text() == "n\n"


def test_a_failed_turn_exits_1_with_the_error(home: Path, project: Path, tmp_path: Path) -> None:
    s = script(tmp_path / "short.json", [[{"text": "Reading."}, {"tool_call": {
        "id": "r1", "name": "read_file", "arguments": {"path": "README.md"}}}]])  # fmt: skip
    done = _run(home, "-p", "go", "--script", str(s), "--cwd", str(project))
    assert done.returncode == 1
    assert done.stdout == "Reading.\n"
    assert done.stderr.endswith(
        "[error: The model provider failed: scripted provider: the script has no round 2 "
        "(it holds 1)]\n"
    ), done.stderr
    as_json = _run(home, "-p", "go", "--output-format", "json", "--script", str(s))
    result = json.loads(as_json.stdout)
    assert as_json.returncode == 1 and result["is_error"] is True
    assert result["subtype"] == "error_during_execution" and "no round 2" in result["error"]


def test_the_round_limit_exits_1(home: Path, project: Path, tmp_path: Path) -> None:
    read = {"id": "r", "name": "read_file", "arguments": {"path": "README.md"}}
    s = script(tmp_path / "s.json", [[{"tool_call": {**read, "id": f"r{n}"}}] for n in range(3)])
    done = _run(home, "-p", "go", "--max-rounds", "1", "--output-format", "json",
                "--script", str(s), "--cwd", str(project))  # fmt: skip
    result = json.loads(done.stdout)
    assert done.returncode == 1, done.stderr
    assert result["stop_reason"] == "max_turn_requests" and result["subtype"] == "error_max_rounds"


def test_json_flag_still_prints_the_raw_frames(home: Path, project: Path, tmp_path: Path) -> None:
    s = _reading(tmp_path)
    done = _run(home, "ask", "--json", "read", "--script", str(s), "--cwd", str(project))
    assert done.returncode == 0, done.stderr
    frames = _events(done.stdout)
    assert all(f["jsonrpc"] == "2.0" for f in frames)
    assert frames[-1]["result"] == {"stopReason": "end_turn"}


def test_ctrl_c_ends_the_stream_with_a_cancelled_result(
    home: Path, project: Path, tmp_path: Path
) -> None:
    slow = slow_script(tmp_path / "slow.json")
    env = {**os.environ, "TETHER_HOME": str(home), "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [*TETHER, "-p", "take your time", "--output-format", "stream-json",
         "--script", str(slow), "--cwd", str(project)],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=env, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        for line in proc.stdout:  # the turn is under way once its first words are out
            if json.loads(line) == {"type": "text", "text": "working"}:
                break
        proc.send_signal(signal.SIGINT)
        rest, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    result = json.loads(rest.splitlines()[-1])
    assert result["subtype"] == "cancelled" and result["stop_reason"] == "cancelled"
    assert result["exit_code"] == 130 and result["is_error"] is True
    assert "Traceback" not in err
