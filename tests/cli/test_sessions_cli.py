"""`tether sessions list | show | export | delete` on a store a real `tether acp` wrote."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.harness import REPO, script, spawn_agent

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def _tether(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TETHER_HOME": str(home), "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "tether", "sessions", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
        check=False,
    )


async def test_list_show_export_delete(home: Path, project: Path, tmp_path: Path) -> None:
    write = {"tool_call": {"name": "write_file", "arguments": {"path": "a.txt", "content": "A\n"}}}
    rounds = [[{"text": "Writing."}, write], [{"text": "Done."}]]
    async with spawn_agent(home, "--script", str(script(tmp_path / "s.json", rounds))) as agent:
        await agent.initialize()
        sid = await agent.new_session(project)
        await agent.prompt(sid, "Add a file")

    listed = _tether(home, "list", "--cwd", str(project))
    assert listed.returncode == 0 and sid in listed.stdout and "Add a file" in listed.stdout

    shown = _tether(home, "show", sid)
    assert shown.returncode == 0
    text = shown.stdout
    assert text.startswith("# Add a file\n") and "## You\n\nAdd a file" in text
    assert "**Create a.txt**" in text and "+A" in text and "Done." in text
    assert "- Create a.txt — done" in text

    out = tmp_path / "s.json.out"
    exported = _tether(home, "export", sid, "--format", "json", "-o", str(out))
    assert exported.returncode == 0
    doc = json.loads(out.read_text())
    assert doc["id"] == sid and doc["messages"][0]["type"] == "user"
    assert any(e["type"] == "tool_finished" for e in doc["events"])

    assert _tether(home, "delete", sid).returncode == 0
    assert sid not in _tether(home, "list").stdout
    missing = _tether(home, "show", sid)
    assert missing.returncode == 1 and "no session" in missing.stderr
