"""An export never writes through a link: `/export` (over ACP and as `tether.export` over LSP)
and `tether sessions export -o` create a new file, with nothing on the way followed. A
confined command can plant links named like the default export file (guessable to the second)
pointing at `~/.ssh/authorized_keys`; a repository can commit `notes.md -> ../outside/file` or
a directory link. Judged by the files outside the project."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import anyio
import pytest

from tests.support.harness import REPO
from tests.support.inprocess import agent_in_memory
from tests.support.lsp_client import lsp_in_process, script_file
from tether.tools import catalog

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

KEYS = "ssh-ed25519 AAAAC3Nza the user's own key\n"
ANSWER = "ssh-ed25519 AAAAC3Nza the model's line\n"


def _outside(tmp_path: Path) -> Path:
    ssh = tmp_path / "outside" / ".ssh"
    ssh.mkdir(parents=True)
    (ssh / "authorized_keys").write_text(KEYS)
    return ssh


def _plant_default_names(project: Path, target: Path, seconds: int = 40) -> None:
    """Links under every default export name of the coming seconds (what a command can do)."""
    now = time.time()
    for i in range(-2, seconds):
        name = time.strftime("tether-%Y%m%d-%H%M%S.md", time.localtime(now + i))
        (project / name).symlink_to(target)


def _plant_committed(project: Path, ssh: Path) -> None:
    """What a repository can commit: a file link and a directory link out of the project."""
    (project / "notes.md").symlink_to(os.path.relpath(ssh / "authorized_keys", project))
    (project / "docs").symlink_to(os.path.relpath(ssh, project), target_is_directory=True)
    (project / "gone.md").symlink_to(os.path.relpath(ssh / "new_keys", project))


def _untouched(ssh: Path) -> None:
    assert (ssh / "authorized_keys").read_text() == KEYS
    assert sorted(p.name for p in ssh.iterdir()) == ["authorized_keys"]


@pytest.mark.parametrize("dangling", [False, True], ids=["to-a-file", "dangling"])
async def test_acp_export_does_not_follow_a_planted_default_name(
    home: Path, project: Path, tmp_path: Path, dangling: bool
) -> None:
    ssh = _outside(tmp_path)
    _plant_default_names(project, ssh / ("new_keys" if dangling else "authorized_keys"))
    rounds = [{"events": [{"text": ANSWER}]}]
    async with agent_in_memory(home, {"rounds": rounds}, catalog()) as client:
        sid = await client.start(project)
        await client.prompt(sid, "say it")
        before = len(client.updates)
        await client.prompt(sid, "/export")
        said = _said(client.updates[before:])
    _untouched(ssh)
    assert said.startswith("Not exported: ") and "exists" in said


@pytest.mark.parametrize("name", ["notes.md", "docs/t.md", "gone.md"])
async def test_acp_export_does_not_follow_a_committed_link(
    home: Path, project: Path, tmp_path: Path, name: str
) -> None:
    ssh = _outside(tmp_path)
    _plant_committed(project, ssh)
    rounds = [{"events": [{"text": ANSWER}]}]
    async with agent_in_memory(home, {"rounds": rounds}, catalog()) as client:
        sid = await client.start(project)
        await client.prompt(sid, "say it")
        before = len(client.updates)
        await client.prompt(sid, f"/export {name}")
        await client.prompt(sid, "/export plain.md")  # a path without links still works
        said = _said(client.updates[before:])
    _untouched(ssh)
    assert said.startswith("Not exported: ")
    assert ANSWER.strip() in (project / "plain.md").read_text()


async def test_lsp_export_does_not_follow_links(
    home: Path, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TETHER_HOME", str(home))
    ssh = _outside(tmp_path)
    _plant_committed(project, ssh)
    _plant_default_names(project, ssh / "authorized_keys")
    script = script_file(tmp_path / "s.json", [[{"text": ANSWER}]])
    async with lsp_in_process(project, script) as (editor, _):
        await editor.start()
        await editor.prompt("say it")
        replies = [await editor.command("tether.export", n) for n in ("notes.md", "docs/t.md")]
        replies.append(await editor.command("tether.export"))
    _untouched(ssh)
    assert all(r["text"].startswith("Not exported: ") for r in replies), replies


async def test_sessions_export_does_not_follow_links(
    home: Path, project: Path, tmp_path: Path
) -> None:
    ssh = _outside(tmp_path)
    _plant_committed(project, ssh)
    rounds = [{"events": [{"text": ANSWER}]}]
    async with agent_in_memory(home, {"rounds": rounds}, catalog()) as client:
        sid = await client.start(project)
        await client.prompt(sid, "say it")
    env = {**os.environ, "TETHER_HOME": str(home), "PYTHONPATH": str(REPO)}
    for name in ("notes.md", "docs/t.md", "gone.md"):
        argv = [sys.executable, "-m", "tether", "sessions", "export", sid, "-o", name]
        with anyio.fail_after(30):
            done = await anyio.run_process(argv, cwd=project, env=env, check=False)
        assert done.returncode == 1 and b"not exported" in done.stderr, done
    _untouched(ssh)


def _said(updates: list[dict[str, object]]) -> str:
    return "".join(
        str(u["content"]["text"])  # type: ignore[index]
        for u in updates
        if u["sessionUpdate"] == "agent_message_chunk"
    )
