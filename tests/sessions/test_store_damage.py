"""A damaged session database and a bad `--script` file: each said in words, none a traceback
or a -32603 for every request. With a damaged `tether.db` new sessions still work (in memory,
for this run), the first turn says what happened and what to do, and `tether doctor` names the
file and moves it aside when asked."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import apsw
import pytest

from tests.support.harness import REPO, script, spawn_agent
from tether.engine.sessions.migrations import migrate

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def _garbage(home: Path) -> Path:
    db = home / "tether.db"
    db.write_bytes(b"this is not an SQLite database at all\n" * 200)
    return db


def _torn(home: Path) -> Path:
    """tether's own database, its pages past the first overwritten (a disk's damage)."""
    db = home / "tether.db"
    conn = apsw.Connection(str(db))
    conn.execute("PRAGMA journal_mode=DELETE")
    migrate(conn)
    rows = [(f"s{i}", "/p", None, "t", "t", b"x" * 3000) for i in range(40)]
    conn.executemany(
        "INSERT INTO sessions(id, cwd, title, created_at, updated_at, state) "
        "VALUES(?, ?, ?, ?, ?, ?)",
        rows,
    )
    conn.close()
    data = bytearray(db.read_bytes())
    data[4096:] = b"\xa5" * (len(data) - 4096)
    db.write_bytes(bytes(data))
    return db


@pytest.mark.parametrize("damage", [_garbage, _torn], ids=["not-a-database", "torn-pages"])
async def test_a_damaged_database_is_said_once_and_sessions_still_work(
    home: Path, project: Path, tmp_path: Path, damage: object
) -> None:
    db = damage(home)  # type: ignore[operator]
    before = db.read_bytes()
    path = script(tmp_path / "s.json", [[{"text": "hello"}], [{"text": "again"}]])
    async with spawn_agent(home, "--script", str(path)) as agent:
        await agent.initialize()
        sid = await agent.new_session(project)
        assert (await agent.prompt(sid, "hi"))["result"] == {"stopReason": "end_turn"}
        assert (await agent.prompt(sid, "hi"))["result"] == {"stopReason": "end_turn"}
        listed = await agent.request("session/list", {})
        assert "result" in listed, listed  # never -32603 CorruptError
        notices = [
            u for u in agent.updates(sid) if u["sessionUpdate"] in ("notice", "agent_thought_chunk")
        ]
    said = json.dumps(notices)
    assert said.count("session database is damaged") == 1
    assert str(db) in said and "tether doctor --move-damaged-store" in said
    assert len(db.read_bytes()) == len(before)  # left in place for the user (and doctor)


def _doctor(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TETHER_HOME": str(home), "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "tether", "doctor", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


def test_doctor_names_the_damaged_file_and_moves_it_aside_on_request(home: Path) -> None:
    db = _garbage(home)
    seen = _doctor(home)
    assert seen.returncode == 1
    assert f"sessions     {db}: damaged" in seen.stdout
    assert "--move-damaged-store" in seen.stdout
    assert db.exists()  # only on request
    moved = _doctor(home, "--move-damaged-store")
    assert f"sessions     {db}: moved (moved aside to {db}.damaged-" in moved.stdout
    assert not db.exists() and len(list(home.glob("tether.db.damaged-*"))) == 1
    after = _doctor(home, "--json")
    assert json.loads(after.stdout)["store"]["state"] == "absent"


@pytest.mark.parametrize("command", ["acp", "lsp", "ask"])
def test_a_bad_script_file_is_one_line(home: Path, tmp_path: Path, command: str) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"rounds": [{"events": [{"bogus": 1}]}]}')
    argv = [sys.executable, "-m", "tether", command, "--script", str(bad)]
    if command == "ask":
        argv.append("hello")
    env = {**os.environ, "TETHER_HOME": str(home), "PYTHONPATH": str(REPO)}
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60, input="")
    assert done.returncode == 2
    assert done.stderr == (
        f"tether: cannot load script {bad}: Object contains unknown field `bogus` - at "
        "`$.rounds[0].events[0]`\n"
    )
