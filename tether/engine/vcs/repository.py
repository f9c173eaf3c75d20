"""The repository a session found at start, and the only way tether runs git for itself.

For each of a session's roots, git's discovery runs once, hardened, the first time tether looks
(for the working directory, as the session opens): the work tree and absolute git dir it gives
are kept for the session's life. tether's git then always runs on exactly that git dir and work
tree, never discovering anew: a `.git` that appears later (planted in a folder that was no
repository, or in a subfolder of one) is not what it reads, and a root that was in no
repository stays out of tether's git. A git dir or work tree that is no longer the directory
found (removed, replaced, swapped for a link) is refused.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path

import anyio

from tether.engine.vcs import git_runner
from tether.engine.vcs.git_runner import GitOutput
from tether.errors import RepositoryChanged, TetherError

LOCATE_TIMEOUT = 10.0
GITLINK = b"160000"  # the index mode of a submodule

Identity = tuple[int, int, int, int]


class Repository:
    """A work tree and its git dir, as found when the session started; `avoid`: the trees
    no program of tether's git may come from (the session's roots, kept up to date)."""

    __slots__ = ("_gitlinks", "_identity", "avoid", "git_dir", "top")

    def __init__(self, top: Path, git_dir: Path, avoid: Sequence[Path] = ()) -> None:
        self.top = top
        self.git_dir = git_dir
        self.avoid = avoid
        self._identity = _identity(top, git_dir)
        self._gitlinks: tuple[object, tuple[Path, ...]] | None = None

    def check(self) -> None:
        """RepositoryChanged when the git dir or the work tree is not the directory found."""
        if self._identity is None or _identity(self.top, self.git_dir) != self._identity:
            raise RepositoryChanged(
                f"the repository {self.top} (git dir {self.git_dir}) is no longer the one this "
                "session found when it started; tether's own git does not run there (start a "
                "new session to use the repository as it is now)"
            )

    def git(self, *args: str, cwd: Path | None = None, timeout: float) -> GitOutput:
        """`git <args>`, hardened, on this repository (blocks: call it from a worker thread)."""
        self.check()
        where = cwd or self.top
        return git_runner.run(
            self.git_dir, self.top, args, cwd=where, timeout=timeout, avoid=self.avoid
        )

    async def agit(
        self, *args: str, cwd: Path | None = None, timeout: float, limit: int | None = None
    ) -> GitOutput:
        """`git <args>`, hardened, on this repository; `limit`: stdout bytes kept."""
        self.check()
        where = cwd or self.top
        return await git_runner.arun(
            self.git_dir, self.top, args, cwd=where, timeout=timeout, limit=limit, avoid=self.avoid
        )

    def submodules(self, timeout: float) -> tuple[Path, ...]:
        """Where the submodules its index records are (read again when the index changes;
        TetherError when git cannot say)."""
        key = _stat(self.git_dir / "index")
        if self._gitlinks is not None and self._gitlinks[0] == key:
            return self._gitlinks[1]
        out = self.git("ls-files", "-z", "--stage", timeout=timeout)
        if out.code != 0:
            raise TetherError("VCS_FAILED", f"git ls-files failed in {self.top}: {out.error()}")
        found = tuple(_gitlinks(self.top, out.stdout))
        self._gitlinks = (key, found)
        return found


def find_repository(root: Path, avoid: Sequence[Path] = ()) -> Repository | None:
    """The repository `root` lies in now (git's discovery, hardened); None outside one."""
    try:
        found = git_runner.locate(root, LOCATE_TIMEOUT, avoid)
    except (OSError, TimeoutError):
        return None
    return Repository(*found, avoid) if found is not None else None


class Repositories:
    """A session's repositories: for each root, what `find_repository` said the first time."""

    def __init__(self) -> None:
        self._found: dict[Path, Repository | None] = {}
        self._lock = threading.Lock()
        self._roots: list[Path] = []  # every root looked up: no git of tether's from there

    def find(self, root: Path) -> Repository | None:
        """The repository `root` was in when the session first looked (blocks the first time;
        a thread may call it)."""
        key = Path(os.path.realpath(root))
        with self._lock:
            if key not in self._found:
                self._roots.append(key)
                self._found[key] = find_repository(key, self._roots)
            return self._found[key]

    async def afind(self, root: Path) -> Repository | None:
        return await anyio.to_thread.run_sync(self.find, root)


def _identity(top: Path, git_dir: Path) -> Identity | None:
    try:
        a, b = os.lstat(top), os.lstat(git_dir)
    except OSError:
        return None
    return (a.st_dev, a.st_ino, b.st_dev, b.st_ino)


def _stat(path: Path) -> object:
    try:
        s = os.stat(path)
    except OSError:
        return None
    return (s.st_dev, s.st_ino, s.st_size, s.st_mtime_ns, s.st_ctime_ns)


def _gitlinks(top: Path, listing: bytes) -> list[Path]:
    """The submodules of `git ls-files -z --stage` (`<mode> <oid> <stage>\\t<path>`)."""
    found: list[Path] = []
    for entry in listing.split(b"\0"):
        info, tab, path = entry.partition(b"\t")
        if tab and info.startswith(GITLINK + b" "):
            found.append(top / os.fsdecode(path))
    return found
