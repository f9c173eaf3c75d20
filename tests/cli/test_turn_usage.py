"""Per-turn usage totals: `/status` says what the last turn and the whole session used (billed
sums over their rounds), `tether ask` ends with a `[usage: ...]` line after `[stop: ...]`, and
`tether ask --quiet` prints the answer alone."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.harness import REPO, script
from tests.support.inprocess import agent_in_memory
from tether.tools import catalog

ASK = [sys.executable, "-m", "tether", "ask"]
PRICED = {"input_price": 2.0, "output_price": 10.0, "cached_input_price": 0.5}


def _env(home: Path) -> dict[str, str]:
    env = {**os.environ, "TETHER_HOME": str(home), "PYTHONPATH": str(REPO)}
    env.pop("TETHER_NONINTERACTIVE", None)
    return env


def _ask(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*ASK, *args],
        capture_output=True,
        text=True,
        env=_env(home),
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def _rounds(project: Path) -> list[list[dict[str, Any]]]:
    push = {"id": "p", "name": "todo_push", "arguments": {"titles": ["look"]}}
    return [
        [{"thought": "let me plan"}, {"tool_call": push}, {"usage": {"input": 1000, "output": 40}}],
        [{"text": "All done."}, {"usage": {"input": 1200, "output": 10}}],
    ]


@pytest.mark.slow
def test_ask_ends_with_the_turns_usage(home: Path, project: Path, tmp_path: Path) -> None:
    path = script(tmp_path / "s.json", _rounds(project), **PRICED)
    done = _ask(home, "--script", str(path), "--cwd", str(project), "plan")
    assert done.returncode == 0, done.stderr
    # 2,200 in at $2/M + 50 out at $10/M = $0.0049
    assert done.stdout == "All done.\n"  # the answer alone; the rest on stderr
    assert done.stderr.endswith(
        "[stop: end_turn]\n[usage: 2 rounds, 2,200 tokens in, 50 out, $0.0049]\n"
    ), done.stderr
    assert "(thinking) let me plan" in done.stderr and "plan:\n  [pending] look" in done.stderr


@pytest.mark.slow
def test_ask_quiet_prints_the_answer_alone(home: Path, project: Path, tmp_path: Path) -> None:
    path = script(tmp_path / "s.json", _rounds(project), **PRICED)
    done = _ask(home, "--quiet", "--script", str(path), "--cwd", str(project), "plan")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "All done.\n"
    assert done.stderr.endswith("]\n[stop: end_turn]\n"), done.stderr  # the session id, the stop


@pytest.mark.slow
def test_ask_says_when_the_provider_reported_no_tokens(
    home: Path, project: Path, tmp_path: Path
) -> None:
    path = script(tmp_path / "s.json", [[{"text": "hi"}]])
    done = _ask(home, "--script", str(path), "--cwd", str(project), "hello")
    assert done.stdout == "hi\n"
    assert done.stderr.endswith("[stop: end_turn]\n[usage: 1 round, tokens not reported]\n")


@pytest.mark.slow
@pytest.mark.anyio
async def test_status_shows_the_last_turn_and_the_session(home: Path, project: Path) -> None:
    rounds = [
        [{"tool_call": {"id": "l", "name": "todo_list"}}, {"usage": {"input": 900, "output": 30}}],
        [{"text": "one"}, {"usage": {"input": 1000, "output": 20}}],
        [{"text": "two"}, {"usage": {"input": 1100, "output": 5}}],
    ]
    doc = {"rounds": [{"events": r} for r in rounds], "model": PRICED}
    async with agent_in_memory(home, doc, catalog()) as client:
        sid = await client.start(project)
        await client.prompt(sid, "first")
        await client.prompt(sid, "second")
        before = len(client.updates)
        await client.prompt(sid, "/status")
    said = "".join(
        u["content"]["text"]
        for u in client.updates[before:]
        if u["sessionUpdate"] == "agent_message_chunk"
    )
    assert "- Last turn: 1 round, 1,100 tokens in, 5 out, $0.0022\n" in said
    assert "- This session: 3 rounds, 3,000 tokens in, 55 out, $0.0066\n" in said
