"""The sandbox's parts on their own: what counts as uncommitted work, how Landlock grants a
tree around its holes, that the launcher never runs a program it could not confine, what the
bubblewrap command line mounts, and how the mechanism is chosen."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import anyio
import pytest

from tests.support.sandbox_world import git
from tether.engine.sandbox import protect
from tether.engine.sandbox.acts_later import acts_later
from tether.engine.sandbox.bwrap import bwrap_argv, plan_mounts
from tether.engine.sandbox.confinement import Confinement
from tether.engine.sandbox.detect import LAUNCHER, SandboxInfo, detect
from tether.engine.sandbox.landlock_exec import (
    FILE_RIGHTS,
    READ_DIR,
    abi_version,
    grant_around,
    plan_rules,
)
from tether.engine.sandbox.session_sandbox import Sandbox, Scope
from tether.engine.vcs.repository import find_repository

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="Linux mechanisms")


def _repo(tmp_path: Path) -> Path:
    p = tmp_path / "repo"
    p.mkdir()
    git(p, "init", "-q")
    (p / "clean.txt").write_text("c\n")
    (p / "changed.txt").write_text("v1\n")
    (p / ".gitignore").write_text("build/\n")
    git(p, "add", ".")
    git(p, "commit", "-q", "-m", "one")
    (p / "changed.txt").write_text("v2\n")
    (p / "new.txt").write_text("n\n")
    (p / "newdir").mkdir()
    (p / "newdir" / "a.txt").write_text("a\n")
    (p / "build").mkdir()
    (p / "build" / "out.o").write_text("o\n")
    return p.resolve()


@pytest.mark.slow
def test_uncommitted_work_is_what_git_cannot_give_back(tmp_path: Path) -> None:
    p = _repo(tmp_path)
    work = protect.uncommitted_work(p, find_repository(p))
    assert work.problem is None
    assert sorted(str(x.relative_to(p)) for x in work.paths) == [
        ".git",
        "changed.txt",
        "new.txt",
        "newdir",
    ]  # clean.txt and the ignored build/ stay writable
    # A root inside the repository: only what lies in it (an untracked directory, whole).
    assert protect.uncommitted_work(p / "newdir", find_repository(p / "newdir")).paths == (
        p / "newdir",
    )


@pytest.mark.slow
def test_outside_git_every_file_is_work_and_too_many_cannot_be_protected(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = tmp_path / "plain"
    (plain / "node_modules").mkdir(parents=True)
    for name in ("a", "b"):
        (plain / name).write_text(name)
    (plain / "node_modules" / "x.js").write_text("x")
    assert sorted(
        p.name for p in protect.uncommitted_work(plain, find_repository(plain)).paths
    ) == ["a", "b"]
    monkeypatch.setattr(protect, "MAX_PROTECTED", 1)
    assert "no git repository and has over 1 files" in (
        protect.uncommitted_work(plain, find_repository(plain)).problem or ""
    )


def test_secrets_below_the_roots_and_in_the_home(tmp_path: Path) -> None:
    root, home = tmp_path / "root", tmp_path / "home"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / ".env.local").write_text("k")
    (root / "server.pem").write_text("k")
    (root / ".git").mkdir()  # protected, never hidden: git must work
    (home / ".aws").mkdir(parents=True)
    found = protect.secrets([root], [".git", ".env*", "*.pem"], home)
    assert sorted(str(f.relative_to(tmp_path)) for f in found) == [
        "home/.aws",
        "root/server.pem",
        "root/sub/.env.local",
    ]


@pytest.mark.slow
def test_what_acts_later_in_the_trees_and_their_parents_up_to_the_repository(
    tmp_path: Path,
) -> None:
    repo = tmp_path / "repo"
    (repo / "a" / "b").mkdir(parents=True)
    git(repo, "init", "-q")
    sub = repo / "a" / "b"
    alone = acts_later([sub])  # its parents lie outside every writable tree
    assert sub / "AGENTS.md" in alone and sub / ".git" in alone and sub / ".vscode" in alone
    assert not [p for p in alone if not p.is_relative_to(sub)]
    granted = acts_later([sub, repo])  # the repository granted for writing too
    assert {repo / "AGENTS.md", repo / "a" / "CLAUDE.md", repo / "a" / ".claude"} <= set(granted)
    assert tmp_path / "AGENTS.md" not in granted  # above the repository's top
    (sub / ".git").mkdir()  # an empty .git (a placeholder) makes no repository top
    assert repo / "a" / "CLAUDE.md" in acts_later([sub, repo])


def test_landlock_grants_a_tree_around_its_holes(tmp_path: Path) -> None:
    (tmp_path / "a" / "deep").mkdir(parents=True)
    (tmp_path / "a" / "deep" / "hole.txt").write_text("")
    (tmp_path / "a" / "deep" / "ok.txt").write_text("")
    (tmp_path / "a" / "sibling").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "link").symlink_to(tmp_path / "b")
    rights = 0b1111
    rules = dict(grant_around(str(tmp_path), rights, [str(tmp_path / "a" / "deep" / "hole.txt")]))
    assert rules == {
        str(tmp_path): READ_DIR,
        str(tmp_path / "a"): READ_DIR,
        str(tmp_path / "a" / "deep"): READ_DIR,
        str(tmp_path / "a" / "deep" / "ok.txt"): rights & FILE_RIGHTS,
        str(tmp_path / "a" / "sibling"): rights,
        str(tmp_path / "b"): rights,
    }  # no rule for the hole, nor for the link (its target is reached anyway)
    assert grant_around(str(tmp_path / "b"), rights, [str(tmp_path / "a")]) == [
        (str(tmp_path / "b"), rights)
    ]


@pytest.mark.slow
def test_the_launcher_never_runs_what_it_cannot_confine(tmp_path: Path) -> None:
    sentinel = tmp_path / "ran"
    policy = tmp_path / "missing.json"
    done = subprocess.run(
        [sys.executable, "-I", "-S", str(LAUNCHER), str(policy), "--", "touch", str(sentinel)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 126 and "did not run" in done.stderr
    assert not sentinel.exists()


def test_bubblewrap_mounts_what_it_should(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "work.txt").parent.mkdir(parents=True)
    (root / "work.txt").write_text("w")
    (root / "link").symlink_to(root / "work.txt")
    secret = root / ".env"  # in the project (what lies under /tmp is the sandbox's own)
    secret.write_text("s")
    masks = (tmp_path / "deny-file", tmp_path / "deny-dir")
    c = Confinement(
        writable=(root,),
        tmp=tmp_path / "tmp",
        protected=(root / "work.txt", root / "link"),
        hidden=(secret, Path("/tmp/elsewhere/hidden-anyway")),
        masks=masks,
    )
    argv = bwrap_argv("bwrap", c, ["true"], root)
    line = " ".join(argv)
    assert f"--bind {root} {root}" in line and f"--bind {c.tmp} {c.tmp}" in line
    assert f"--ro-bind {root / 'work.txt'} {root / 'work.txt'}" in line
    assert str(root / "link") not in line  # a mount on a link would land on its target
    assert f"--ro-bind {masks[0]} {secret}" in line
    assert "hidden-anyway" not in line  # nothing there to mask
    assert {"--unshare-net", "--unshare-pid", "--die-with-parent", "--new-session"} <= set(argv)
    assert argv[argv.index("--cap-drop") + 1] == "ALL" and argv[-2:] == ["--", "true"]
    tty = bwrap_argv("bwrap", Confinement((root,), c.tmp, tty=True, network=True), ["sh"], root)
    assert tty[:2] == ["env", "--ignore-signal=INT,QUIT,TSTP"] and "--unshare-net" not in tty
    assert tty[-3:] == ["env", "--default-signal=INT,QUIT,TSTP", "sh"]


def test_bubblewrap_pins_the_way_to_protected_paths_and_holds_missing_ones(
    tmp_path: Path,
) -> None:
    root = tmp_path / "root"
    (root / "lib" / "deep").mkdir(parents=True)
    (root / "lib" / "deep" / "core.py").write_text("w")
    (root / ".github").mkdir()  # empty: stands for the missing file below it
    (root / "docs").mkdir()
    (root / "docs" / "agents.md").write_text("a")
    (root / "CLAUDE.md").symlink_to(root / "docs" / "agents.md")
    empty = tmp_path / "empty"
    c = Confinement(
        writable=(root,),
        tmp=tmp_path / "tmp",
        protected=(
            root / "lib" / "deep" / "core.py",
            root / ".claude" / "skills",  # .claude missing: a placeholder at .claude
            root / ".claude" / "agents",
            root / ".github" / "copilot-instructions.md",
            root / "CLAUDE.md",  # a link: its target is protected under its own name
        ),
        placeholder=empty,
    )
    mounts = plan_mounts(c)
    assert mounts.kept == (root / "lib", root / "lib" / "deep")
    assert mounts.read_only == (root / "lib" / "deep" / "core.py",)
    assert sorted(mounts.placeholders) == [root / ".claude", root / ".github"]
    line = " ".join(bwrap_argv("bwrap", c, ["true"], root, mounts=mounts))
    assert f"--bind {root / 'lib'} {root / 'lib'} --bind {root / 'lib' / 'deep'}" in line
    assert f"--ro-bind {empty} {root / '.claude'}" in line and "CLAUDE.md" not in line
    assert line.index(f"--bind {root} {root}") < line.index(f"--bind {root / 'lib'}")


def test_landlock_gives_a_command_no_terminal_but_its_own() -> None:
    rules = dict(plan_rules({"writable": [], "tty": False}, abi_version()))
    assert not [p for p in rules if p.startswith("/dev/pts") or p == "/dev/tty"]
    assert "/dev/null" in rules


def test_the_mechanism_is_chosen_and_can_be_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    assert detect("bubblewrap").mechanism == "bubblewrap"  # bundled with tether on Linux
    assert detect("landlock").mechanism == "landlock"
    monkeypatch.setenv("TETHER_SANDBOX", "none")
    off = detect()
    assert off.mechanism == "none" and not off.confines and off.why == "turned off"


def test_callers_at_once_share_one_probe() -> None:
    """A session's background probe and its first command ask together: one probe runs, the
    other waits for its answer (detect.py)."""
    from tether.engine.sandbox.detect import _detect

    _detect.cache_clear()
    found: list[str] = []
    threads = [
        threading.Thread(target=lambda: found.append(detect("bubblewrap").summary))
        for _ in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(found)) == 1 and len(found) == 4
    info = _detect.cache_info()
    assert (info.misses, info.hits) == (1, 3)


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_sandbox_probes_when_a_command_first_needs_it(tmp_path: Path) -> None:
    asked: list[str] = []

    def find() -> SandboxInfo:
        asked.append(threading.current_thread().name)
        return detect("bubblewrap")

    box = Sandbox(find, base=tmp_path)
    assert asked == []  # made without probing (a session's capabilities, at its first turn)
    empty = tmp_path / "empty"
    empty.mkdir()
    argv = await box.wrap(["true"], cwd=empty, scope=Scope((empty,), ()), base={}, env={})
    assert (await anyio.run_process(argv, check=False)).returncode == 0
    assert box.confines and box.info.mechanism == "bubblewrap"
    assert len(asked) == 1 and asked[0] != threading.current_thread().name  # off the loop
    box.close()


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_sandbox_reports_what_it_cannot_protect(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    for i in range(3):
        (plain / f"f{i}").write_text("")
    box = Sandbox(detect(), base=tmp_path)
    scope = Scope((plain,), ())
    assert await box.problem(scope) is None
    monkeypatch.setattr(protect, "MAX_PROTECTED", 2)
    problem = await Sandbox(detect(), base=tmp_path).problem(scope)  # one that looks afresh
    assert problem is not None and problem.startswith("uncommitted work cannot be protected")
    empty = tmp_path / "empty"
    empty.mkdir()
    argv = await box.wrap(["true"], cwd=empty, scope=Scope((empty,), ()), base={}, env={})
    assert Path(argv[0]).name.startswith("sandboxed-") and argv[1:] == ["true"]
    assert (await anyio.run_process(argv, check=False)).returncode == 0
    launcher = Path(argv[0])  # it removed itself, or emptied itself (removed at the next)
    assert not launcher.exists() or launcher.stat().st_size == 0
    box.close()
    assert not list(tmp_path.glob("tether-sandbox-*"))
