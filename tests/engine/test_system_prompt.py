"""The system prompt carries the project's context and how tools and approvals behave, and stays
the same from round to round (providers' prompt caches key on the request prefix)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import anyio
import pytest

from tests.support.inprocess import agent_in_memory
from tether.engine.instruction_files import INSTRUCTION_FILE_MAX
from tether.tools import catalog

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def _git(project: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=project, check=True, capture_output=True)


async def test_the_system_prompt_describes_the_project(home: Path, project: Path) -> None:
    _git(project, "init", "-q", "-b", "feature-x")
    (project / "AGENTS.md").write_text("Run `make check` before you finish.\n")
    (project / "CLAUDE.md").write_text("x" * (INSTRUCTION_FILE_MAX + 100))
    (project / "new.py").write_text("print()\n")
    rounds = [
        {"events": [{"tool_call": {"name": "list_dir", "arguments": {}}}]},
        {"events": [{"text": "ok"}]},
        {"events": [{"text": "again"}]},
    ]
    async with agent_in_memory(home, {"rounds": rounds}, catalog()) as client:
        sid = await client.start(project)
        assert await client.prompt(sid, "hello") == "end_turn"
        (project / "later.txt").write_text("changed after the first turn\n")
        assert await client.prompt(sid, "/mode code") == "end_turn"
        assert await client.prompt(sid, "more") == "end_turn"
    [model] = client.models
    first, second, third = (r.system for r in model.requests)
    assert f"Working directory: {project}" in first
    assert "Today's date: " in first and "Platform: " in first
    assert "branch feature-x" in first and "?? new.py" in first
    assert "## AGENTS.md\nRun `make check` before you finish." in first
    assert "## CLAUDE.md" in first and "CLAUDE.md is longer" in first
    assert "overwrite: true" in first and "rejected" in first
    assert "The session is in `ask` mode" in first
    assert second == first  # the next round of the same turn: byte-identical
    # A later turn keeps the session's snapshot; only the mode line at the end changed.
    assert "later.txt" not in third
    assert third.endswith(third.split("# Mode")[-1]) and "`code` mode" in third
    assert third.split("# Mode")[0] == first.split("# Mode")[0]


async def test_a_directory_that_is_not_a_repository_says_so(home: Path, project: Path) -> None:
    rounds = [{"events": [{"text": "ok"}]}]
    async with agent_in_memory(home, {"rounds": rounds}, catalog()) as client:
        sid = await client.start(project)
        assert await client.prompt(sid, "hello") == "end_turn"
    assert "Git: not a git repository" in client.models[0].requests[0].system


async def test_an_instruction_file_linking_out_of_the_project_is_not_read(
    home: Path, project: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOKEN=abc123\n")
    (project / "AGENTS.md").symlink_to(secret)
    rounds = [{"events": [{"text": "ok"}]}]
    async with agent_in_memory(home, {"rounds": rounds}, catalog()) as client:
        sid = await client.start(project)
        assert await client.prompt(sid, "hello") == "end_turn"
    system = client.models[0].requests[0].system
    assert "abc123" not in system and "## AGENTS.md" not in system


async def test_the_git_summary_names_the_branch_in_every_state(tmp_path: Path) -> None:
    """One `git status --branch` gives the branch: a repository without commits, one tracking
    a remote branch it is ahead of, a detached HEAD; and the changed paths."""
    from tether.engine.system_prompt import _git_summary
    from tether.engine.vcs.repository import find_repository

    async def summary(where: Path) -> str:
        return await _git_summary(find_repository(where), where)

    origin = tmp_path / "origin"
    origin.mkdir()
    _git(origin, "init", "-q", "-b", "trunk")
    assert await summary(origin) == "branch trunk, clean"
    who = ("-c", "user.email=t@example.com", "-c", "user.name=t")
    (origin / "a.txt").write_text("a\n")
    _git(origin, "add", "a.txt")
    _git(origin, *who, "commit", "-q", "-m", "a")
    clone = tmp_path / "clone"
    _git(tmp_path, "clone", "-q", str(origin), str(clone))
    (clone / "b.txt").write_text("b\n")
    _git(clone, "add", "b.txt")
    _git(clone, *who, "commit", "-q", "-m", "b")
    (clone / "c.txt").write_text("c\n")
    assert await summary(clone) == "branch trunk, 1 changed paths:\n  ?? c.txt"
    _git(clone, "checkout", "-q", "--detach")
    done = await anyio.run_process(["git", "rev-parse", "--short", "HEAD"], cwd=clone)
    head = done.stdout.decode().strip()
    assert (await summary(clone)).startswith(f"branch (detached at {head}), 1 changed")
    assert await summary(tmp_path) == "not a git repository"
