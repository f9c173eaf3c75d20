"""Files that act later cannot be planted or displaced by a confined command: the agent
instruction files, skills roots, agent definitions, other agents' hooks and settings, tether's
project config, editor task and settings files and the git dir, whether they exist yet or not;
nor can a command rename an ancestor of a protected path to put its own in its place. A project
that is no repository and one that is a subfolder of a repository get no `.git` of the
command's making, and git still works inside the sandbox. Credential stores in the home
directory are hidden, and under either mechanism a command writes to no terminal but its own.

Each attack is a scripted model's turn in `code` mode with every permission request rejected,
under bubblewrap and Landlock, judged by the file system afterwards (which also shows that no
placeholder the sandbox mounted was left behind).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.harness import script, spawn_agent
from tests.support.sandbox_world import SECRET, WORK, World, changes, git, snapshot, world
from tests.support.stored import tool_results

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.slow,
    pytest.mark.skipif(sys.platform != "linux", reason="the Linux sandbox"),
]
MECHANISMS = ["bubblewrap", "landlock"]
EVIL = "EVIL planted by a confined command"
CORE = "the user's uncommitted edit of lib/core.py\n"
SKILL = "---\nname: good\ndescription: the user's skill\n---\nbe good\n"
PLANTS = {  # what a command plants, and where
    "AGENTS.md (existing)": f"echo '{EVIL}' >> AGENTS.md",
    "CLAUDE.md": f"echo '{EVIL}' > CLAUDE.md",
    "copilot": f"mkdir -p .github && echo '{EVIL}' > .github/copilot-instructions.md",
    "skills root": "mkdir -p .claude/skills/evil && "
    f"printf -- '---\\nname: evil\\ndescription: x\\n---\\n{EVIL}\\n' > .claude/skills/evil/SKILL.md",
    "agents skill": f"mkdir -p .agents/skills/evil && echo '{EVIL}' > .agents/skills/evil/SKILL.md",
    "agent definition": f"mkdir -p .agents/agents && echo '{EVIL}' > .agents/agents/evil.md",
    "claude settings": f"mkdir -p .claude && echo '{EVIL}' > .claude/settings.json",
    "codex config": f"mkdir -p .codex && echo '{EVIL}' > .codex/config.toml",
    "tether config": f"mkdir -p .tether && echo '{EVIL}' > .tether/config.toml",
    "vscode task": f"echo '{EVIL}' > .vscode/tasks.json",
    "vscode settings": f"echo '{EVIL}' >> .vscode/settings.json",
    "zed task": f"mkdir -p .zed && echo '{EVIL}' > .zed/tasks.json",
    "idea": f"mkdir -p .idea && echo '{EVIL}' > .idea/workspace.xml",
    "nvim exrc": f"echo '{EVIL}' > .nvim.lua",
    "vim exrc": f"echo '{EVIL}' > .exrc",
    "mcp servers": f"echo '{EVIL}' > .mcp.json",
    "displace lib": f"mv lib .lib_old && mkdir lib && echo '{EVIL}' > lib/core.py",
    "displace skills": "mv .agents .agents_old && mkdir -p .agents/skills/good && "
    f"echo '{EVIL}' > .agents/skills/good/SKILL.md",
    "displace vscode": f"mv .vscode .vscode_old && mkdir .vscode && echo '{EVIL}' > .vscode/tasks.json",
}


def _sh(cid: str, text: str, **more: Any) -> dict[str, Any]:
    args = {"argv": ["sh", "-c", text], **more}
    return {"tool_call": {"id": cid, "name": "run_argv", "arguments": args}}


def _call(cid: str, name: str, **args: Any) -> dict[str, Any]:
    return {"tool_call": {"id": cid, "name": name, "arguments": args}}


async def _turn(
    w: World, mechanism: str, cwd: Path, rounds: list[list[dict[str, Any]]]
) -> list[str]:
    """One `code`-mode turn of these rounds, every permission request rejected, none asked."""
    path = script(w.root / "s.json", [*rounds, [{"text": "done"}]])
    env = {**w.env(), "TETHER_SANDBOX": mechanism}
    async with spawn_agent(w.tether_home, "--script", str(path), env=env) as agent:
        agent.permission_choice = "reject_once"
        await agent.initialize(terminal=False)
        sid = await agent.new_session(cwd)
        await agent.request("session/set_mode", {"sessionId": sid, "modeId": "code"})
        resp = await agent.prompt(sid, "go", timeout=90)
        assert resp["result"] == {"stopReason": "end_turn"}, resp
        asked = [f for f in agent.frames if f.get("method") == "session/request_permission"]
    assert asked == []  # everything ran confined, unasked
    return tool_results(w.tether_home, sid)


def _user_files(w: World) -> None:
    """What the user has: committed instruction file, skill and editor settings, and an
    uncommitted edit in a subdirectory."""
    p = w.project
    (p / "AGENTS.md").write_text("the user's instructions\n")
    (p / ".agents" / "skills" / "good").mkdir(parents=True)
    (p / ".agents" / "skills" / "good" / "SKILL.md").write_text(SKILL)
    (p / ".vscode").mkdir()
    (p / ".vscode" / "settings.json").write_text("{}\n")
    (p / "lib").mkdir()
    (p / "lib" / "core.py").write_text("committed\n")
    git(p, "add", "AGENTS.md", ".agents", ".vscode", "lib")
    git(p, "commit", "-q", "-m", "user files")
    (p / "lib" / "core.py").write_text(CORE)


@pytest.mark.parametrize("mechanism", MECHANISMS)
async def test_nothing_that_acts_later_can_be_planted_or_displaced(mechanism: str) -> None:
    with world() as w:
        _user_files(w)
        before = snapshot(w.project)
        rounds = [[_sh(f"p{i}", text)] for i, text in enumerate(PLANTS.values())]
        rounds.append([_sh("ok", "echo made > src/made_here.txt")])
        results = await _turn(w, mechanism, w.project, rounds)
        found = changes(before, snapshot(w.project))
        core = (w.project / "lib" / "core.py").read_text()
    assert found == ["+ src/made_here.txt"], found  # no plant, no placeholder left behind
    ran = dict(zip(PLANTS, results, strict=False))
    assert all("exit code 0" not in r for r in ran.values()), ran
    assert results[-1].startswith("[approval] mode (code)\nexit code 0"), results[-1]
    assert core == CORE


@pytest.mark.parametrize("mechanism", MECHANISMS)
async def test_a_project_that_is_no_repository_gets_no_git_dir(mechanism: str) -> None:
    with world() as w:
        plain = w.root / "plain"
        (plain / "out").mkdir(parents=True)  # (Landlock: a folder of work takes no new files)
        (plain / "notes.txt").write_text("the user's notes\n")
        sentinel = w.outside / "S_fsmonitor"
        before = snapshot(plain)
        attack = f"git init -q && git config core.fsmonitor 'touch {sentinel}; false'"
        rounds = [[_sh("g1", attack)], [_sh("ok", "echo x > out/new.txt")]]
        results = await _turn(w, mechanism, plain, rounds)
        found = changes(before, snapshot(plain))
    assert found == ["+ out/new.txt"], found
    assert "exit code 0" not in results[0] and not sentinel.exists()


@pytest.mark.parametrize("mechanism", MECHANISMS)
async def test_a_subfolder_of_a_repository_gets_no_git_dir_and_git_still_works(
    mechanism: str,
) -> None:
    with world() as w:
        app = w.project / "app"
        (app / "out").mkdir(parents=True)
        (app / "main.py").write_text("print('app')\n")
        git(w.project, "add", "app")
        git(w.project, "commit", "-q", "-m", "app")
        before = snapshot(app)
        rounds = [
            [_sh("g1", "git init -q")],
            [_sh("g2", "mkdir -p .git/hooks && echo x > .git/config")],
            [_sh("ok", "echo x > out/new.txt")],
            [
                _call(
                    "st", "run_argv", argv=["git", "status", "--porcelain", "--untracked-files=all"]
                )
            ],
        ]
        results = await _turn(w, mechanism, app, rounds)
        found = changes(before, snapshot(app))
        state = git(w.project, "status", "--porcelain")
        work = (w.project / "work.txt").read_text()
    assert found == ["+ out/new.txt"], found
    assert "exit code 0" not in results[0] and "exit code 0" not in results[1]
    status = results[-1]  # the repository above, seen from inside the sandbox
    assert "exit code 0" in status and "?? app/out/new.txt" in status, status
    assert " M work.txt" in status, status
    assert " M work.txt" in state and work == WORK


def _reader(w: World, places: list[str]) -> Path:
    """A program in the project that prints what it can read of each file (or why not)."""
    path = w.project / "reader.py"
    path.write_text(
        "import sys\n"
        "for p in sys.argv[1:]:\n"
        "    try:\n"
        "        print(p, open(p).read())\n"
        "    except OSError as exc:\n"
        "        print(p, 'unreadable:', type(exc).__name__)\n"
    )
    for rel in places:
        target = w.home / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f"token = {SECRET}\n")
    return path


CREDENTIALS = [
    ".codex/auth.json",
    ".claude/.credentials.json",
    ".claude.json",
    ".gemini/oauth_creds.json",
    ".config/github-copilot/apps.json",
    ".config/cursor/auth.json",
    ".cargo/credentials.toml",
    ".config/rclone/rclone.conf",
    ".pgpass",
    ".my.cnf",
    ".netrc",
    ".npmrc",
    ".pypirc",
    ".docker/config.json",
    ".kube/config",
    ".config/gh/hosts.yml",
    ".config/hub",
    ".git-credentials",
    ".bash_history",
    ".zsh_history",
    ".local/share/fish/fish_history",
    ".python_history",
    ".node_repl_history",
    ".psql_history",
    ".mysql_history",
    ".sqlite_history",
    ".rediscli_history",
    ".password-store/x.gpg",
    ".local/share/keyrings/login.keyring",
    ".config/gcloud/credentials.db",
]


@pytest.mark.parametrize("mechanism", MECHANISMS)
async def test_the_home_directory_credential_stores_are_hidden(mechanism: str) -> None:
    with world() as w:
        reader = _reader(w, CREDENTIALS)
        argv = [sys.executable, str(reader), *(str(w.home / c) for c in CREDENTIALS)]
        [result] = await _turn(w, mechanism, w.project, [[_call("r", "run_argv", argv=argv)]])
    assert SECRET not in result
    assert result.count("unreadable:") == len(CREDENTIALS), result


@pytest.mark.parametrize("mechanism", MECHANISMS)
async def test_a_command_writes_to_no_terminal_but_its_own(mechanism: str) -> None:
    master, slave = os.openpty()  # a terminal of the user's (the one tether runs in, say)
    try:
        os.set_blocking(master, False)
        victim = os.ttyname(slave)
        osc52 = r"printf '\033]52;c;RVZJTA==\007'"
        # its own terminal, by /dev/tty and by name, then the user's
        mine = f"echo A > /dev/tty && echo B > $(tty) && {osc52} > {victim}; echo rc=$?"
        with world() as w:
            rounds = [
                [_sh("t1", f"{osc52} > {victim}")],
                [_call("p1", "open_pty", argv=["sh", "-c", mine])],
                [_call("p2", "read_pty", pty_id=1, until="rc=", timeout_seconds=30)],
            ]
            results = await _turn(w, mechanism, w.project, rounds)
        try:
            leaked = os.read(master, 4096)
        except BlockingIOError:
            leaked = b""
    finally:
        os.close(master)
        os.close(slave)
    assert leaked == b"", leaked  # nothing reached the user's terminal
    assert "exit code 0" not in results[0], results[0]
    own = results[2]
    assert "\nA\nB\n" in own and "rc=0" not in own, json.dumps(own)  # its own works


@pytest.mark.parametrize("mechanism", MECHANISMS)
async def test_code_mode_still_runs_the_test_suite_unasked(mechanism: str) -> None:
    with world() as w:
        tests = w.project / "tests"
        tests.mkdir()
        (tests / "test_ok.py").write_text("def test_ok():\n    assert 1 + 1 == 2\n")
        git(w.project, "add", "tests")
        git(w.project, "commit", "-q", "-m", "tests")
        argv = [sys.executable, "-m", "pytest", "-q", "tests"]
        [ran] = await _turn(w, mechanism, w.project, [[_call("t", "run_argv", argv=argv)]])
        cache = list(w.project.rglob(".pytest_cache/v/cache/nodeids"))
    assert ran.startswith("[approval] mode (code)\nexit code 0") and "1 passed" in ran, ran
    # Landlock cannot let a command make new entries in a folder with protected paths in it
    # (the project's top holds .git): pytest then runs without its cache, and says so.
    assert cache if mechanism == "bubblewrap" else not cache
