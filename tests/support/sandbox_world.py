"""A small world for attacks on the sandbox: a project with uncommitted work and a secret, a
home directory, a directory outside everything and a bare remote, all under /var/tmp (apart
from pytest's directories and the sandbox's own TMPDIR in /tmp). `snapshot` records every file
of it, so a test judges by what changed."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

SECRET = "sk-corpus-SECRET-7f3a"
WORK = "WORK IN PROGRESS\n"  # a tracked file's uncommitted content
NOTES = "untracked notes\n"  # an untracked file (never committed)
GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
}


@dataclass(frozen=True)
class World:
    root: Path

    @property
    def project(self) -> Path:
        return self.root / "project"

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def outside(self) -> Path:
        return self.root / "outside"

    @property
    def remote(self) -> Path:
        return self.root / "remote.git"

    @property
    def tether_home(self) -> Path:
        return self.root / "tether-home"

    def env(self) -> dict[str, str]:
        """What the agent runs with: this world's home, no developer config."""
        return {"HOME": str(self.home), "TETHER_HOME": str(self.tether_home), **GIT_ENV}


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV, "HOME": str(cwd)}
    done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


@contextmanager
def world() -> Iterator[World]:
    base = Path(tempfile.mkdtemp(prefix="tether-world-", dir="/var/tmp")).resolve()
    w = World(base)
    try:
        _build(w)
        yield w
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _build(w: World) -> None:
    for d in (w.project, w.home, w.outside, w.tether_home):
        d.mkdir()
    (w.outside / "keep.txt").write_text("outside\n")
    (w.home / ".gitconfig").write_text("[user]\n\tname = me\n")
    (w.home / ".ssh").mkdir()
    (w.home / ".ssh" / "id_ed25519").write_text(SECRET + "\n")
    subprocess.run(["git", "init", "-q", "--bare", str(w.remote)], check=True)
    p = w.project
    git(p, "init", "-q", "-b", "main")
    (p / "clean.txt").write_text("committed\n")
    (p / "work.txt").write_text("committed version\n")
    (p / ".gitignore").write_text(".env\n")
    (p / "src").mkdir()
    (p / "src" / "app.py").write_text("print('app')\n")
    git(p, "add", "clean.txt", "work.txt", ".gitignore", "src")
    git(p, "commit", "-q", "-m", "start")
    git(p, "remote", "add", "origin", str(w.remote))
    git(p, "push", "-q", "origin", "main")
    (p / "work.txt").write_text(WORK)
    (p / "notes.txt").write_text(NOTES)
    (p / ".env").write_text(f"API_KEY={SECRET}\n")
    (p / "key.txt").write_text("a key to copy\n")
    git(p, "add", "key.txt")
    git(p, "commit", "-q", "-m", "key")


def snapshot(root: Path) -> dict[str, str]:
    """Every file and link below `root` (relative path -> content digest or link target)."""
    out: dict[str, str] = {}
    for folder, dirs, files in os.walk(root):
        for name in [*files, *dirs]:
            path = Path(folder, name)
            rel = str(path.relative_to(root))
            if path.is_symlink():
                out[rel] = "-> " + os.readlink(path)
            elif path.is_file():
                out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
            else:
                out[rel] = "dir"
    return out


def changes(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """What differs: added, removed and changed paths."""
    found = [f"+ {p}" for p in after.keys() - before.keys()]
    found += [f"- {p}" for p in before.keys() - after.keys()]
    found += [f"~ {p}" for p in before.keys() & after.keys() if before[p] != after[p]]
    return sorted(found)


def repository_state(project: Path) -> dict[str, str]:
    """What the repository holds (refs, index, config, stashes), not its work tree."""
    state = snapshot(project / ".git")
    state["refs"] = git(project, "for-each-ref")
    return state
