"""tether's own git never runs what a confined command planted (issue 29, item 1), through
`tether acp` in `code` mode with the real sandbox, under bubblewrap and Landlock.

Three projects: a repository (its `.git` in the project), a folder that is no repository when
the session starts (a `.git` appears later), and a subfolder of a repository (a `.git` appears
inside it). Into each the test plants a repository config whose `core.fsmonitor`, clean filter
and process filter run a program that writes a mark outside the project, and `.gitattributes`
naming those filters. The plant stands for whatever a confined command may get past the sandbox:
the runner must hold on its own. Then, after each step, no mark: (a) the look before the next
confined command, (c) `vcs_status`, `vcs_diff` and `vcs_log`, (b) a new session's snapshot. A confined
process cannot write outside the project, so a mark would be a process that ran outside the
sandbox. At the end, plain `git status` in each project writes the mark: the plant is real.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.harness import script, spawn_agent
from tests.support.sandbox_world import GIT_ENV, World, git, world
from tests.support.stored import tool_results

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

LAYOUTS = ("repository", "plain", "subfolder")


def _call(cid: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_call": {"id": cid, "name": name, "arguments": arguments}}


# Every session plays the same script from its first round: the first prompt says hello (the
# snapshot is taken), then a confined command, then vcs_status, then vcs_diff, one turn each.
ROUNDS = [
    [{"text": "hello"}],
    [_call("a", "run_argv", argv=["sh", "-c", "exit 0"])],
    [{"text": "looked"}],
    [_call("s", "vcs_status")],
    [{"text": "status"}],
    [_call("d", "vcs_diff"), _call("l", "vcs_log")],
    [{"text": "diff"}],
]
STEPS = ("the look before a confined command", "vcs_status", "vcs_diff and vcs_log")


def _project(w: World, layout: str) -> Path:
    """A project of the layout, its files committed where it is in a repository."""
    if layout == "repository":
        return w.project  # the world's: a repository with uncommitted work
    base = w.root / layout
    project = base / "sub" if layout == "subfolder" else base
    (project / "src").mkdir(parents=True)
    (project / "clean.txt").write_text("committed\n")
    (project / "src" / "app.py").write_text("print('app')\n")
    if layout == "subfolder":
        git(base, "init", "-q", "-b", "main")
        git(base, "add", "-A")
        git(base, "commit", "-q", "-m", "outer")
    return project


def _plant(project: Path, mark: Path) -> None:
    """A repository in `project` (made now unless it is one) whose config runs a program that
    appends to `mark`: fsmonitor, a clean filter on *.txt, a process filter on *.py; the
    committed files touched, so that git must run their content through the filters."""
    program = mark.with_suffix(".sh")
    program.write_text(f"#!/bin/sh\necho ran >> {mark}\nexit 1\n")
    program.chmod(0o755)
    if not (project / ".git").exists():
        git(project, "init", "-q", "-b", "main")
        git(project, "add", "-A")
        git(project, "commit", "-q", "-m", "planted")
    # From here on no git of the test's runs in the project until the control at the end.
    for key, value in (
        ("core.fsmonitor", str(program)),
        ("filter.x.clean", str(program)),
        ("filter.y.process", str(program)),
    ):
        subprocess.run(
            ["git", "config", "--file", str(project / ".git" / "config"), key, value], check=True
        )
    (project / ".gitattributes").write_text("*.txt filter=x\n*.py filter=y\n")
    later = time.time() + 120
    for name in ("clean.txt", "src/app.py"):
        os.utime(project / name, (later, later))


def _judge(mark: Path, step: str, ran: list[str]) -> None:
    """Note `step` when the planted program ran during it (and clear the mark for the next)."""
    if mark.exists():
        ran.append(step)
        mark.unlink()


def _control(project: Path, mark: Path) -> None:
    """The plant is real: git as a user runs it runs the planted program."""
    env = {**os.environ, **GIT_ENV, "HOME": str(project.parent)}
    subprocess.run(["git", "status"], cwd=project, env=env, capture_output=True, timeout=30)
    assert mark.exists(), "the planted config should run its program under plain git"


@pytest.mark.parametrize("mechanism", ["bubblewrap", "landlock"])
async def test_own_git_never_runs_a_planted_program(mechanism: str) -> None:
    with world() as w:
        projects = {layout: _project(w, layout) for layout in LAYOUTS}
        marks = {layout: w.outside / f"MARK-{layout}" for layout in LAYOUTS}
        path = script(w.root / "s.json", ROUNDS)
        env = {**w.env(), "TETHER_SANDBOX": mechanism}
        ran: dict[str, list[str]] = {layout: [] for layout in LAYOUTS}
        async with spawn_agent(w.tether_home, "--script", str(path), env=env) as agent:
            agent.permission_choice = "reject_once"  # nothing may need asking
            await agent.initialize(terminal=False)
            sids: dict[str, str] = {}
            for layout, project in projects.items():
                sid = sids[layout] = await agent.new_session(project)
                await agent.request("session/set_mode", {"sessionId": sid, "modeId": "code"})
                assert (await agent.prompt(sid, "hello", timeout=60))["result"] == {
                    "stopReason": "end_turn"
                }
                _plant(project, marks[layout])
            for step in STEPS:
                for layout, sid in sids.items():
                    await agent.prompt(sid, step, timeout=60)
                    _judge(marks[layout], step, ran[layout])
            for layout, project in projects.items():  # (b): a new session's snapshot
                sid = await agent.new_session(project)
                await agent.prompt(sid, "hello", timeout=60)
                _judge(marks[layout], "a new session's snapshot", ran[layout])
            asked = [f for f in agent.frames if f.get("method") == "session/request_permission"]
        assert ran == {layout: [] for layout in LAYOUTS}
        assert asked == []
        results = {layout: tool_results(w.tether_home, sid) for layout, sid in sids.items()}
        for ran_confined, *_ in results.values():
            assert ran_confined.startswith("[approval] mode (code)\nexit code 0"), ran_confined
        # The repository each session found as it opened is the one its git still reads.
        assert "not inside a git repository" in results["plain"][1]
        assert "planted" not in results["subfolder"][3] and ": outer" in results["subfolder"][3]
        assert ": key" in results["repository"][3]
        for layout, project in projects.items():
            _control(project, marks[layout])
