"""Walking the project for tree, glob_paths and regex_files: through the `fs` seam, breadth first,
skipping VCS and noise directories, `.gitignore`d paths and the path denylist. Symlinks are
listed, never followed (a link can point outside the project or back up the tree)."""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tether.engine.seam import Capabilities, DirEntry, SeamError

if TYPE_CHECKING:
    from pathspec import GitIgnoreSpec

VCS_DIRS = frozenset({".git", ".hg", ".svn", ".bzr", "_darcs", ".jj", ".pijul", ".fossil"})
NOISE_DIRS = frozenset(
    {
        "node_modules",
        "__pycache__",
        ".venv",
        "venv",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".hypothesis",
        ".eggs",
        ".gradle",
        ".idea",
        ".DS_Store",
    }
)
SKIPPED = VCS_DIRS | NOISE_DIRS
MAX_SCANNED = 200_000  # entries looked at by one walk, whatever it is looking for
IGNORE_FILE_MAX = 256 * 1024


@dataclass(frozen=True)
class Found:
    path: Path
    rel: str  # relative to the walk's start, with `/` separators
    entry: DirEntry
    depth: int  # 1 for the start's own entries

    @property
    def is_dir(self) -> bool:
        return self.entry.kind == "dir"


@dataclass
class WalkStats:
    scanned: int = 0
    skipped: int = 0  # entries left out by the skip lists, .gitignore or the denylist
    unreadable: int = 0
    capped: bool = False


class _Ignores:
    """The `.gitignore` files on the way down: the deepest one with a verdict decides."""

    def __init__(self, ctx: Capabilities) -> None:
        self._ctx = ctx
        self._specs: dict[Path, GitIgnoreSpec | None] = {}

    async def load(self, directory: Path) -> None:
        if directory in self._specs:
            return
        self._specs[directory] = None
        names = [directory / ".gitignore"]
        git = await self._ctx.fs.stat(directory / ".git")
        if git is not None and git.kind == "dir":
            names.append(directory / ".git" / "info" / "exclude")
        lines: list[str] = []
        for name in names:
            st = await self._ctx.fs.stat(name)
            if st is None or st.kind != "file" or st.size > IGNORE_FILE_MAX:
                continue
            try:
                lines += (
                    await self._ctx.fs.read_text(name, max_bytes=IGNORE_FILE_MAX)
                ).splitlines()
            except SeamError:
                continue
        if lines:
            from pathspec import GitIgnoreSpec

            self._specs[directory] = GitIgnoreSpec.from_lines(lines)

    def ignored(self, path: Path, is_dir: bool) -> bool:
        for folder in path.parents:
            spec = self._specs.get(folder)
            if spec is None:
                continue
            rel = path.relative_to(folder).as_posix() + ("/" if is_dir else "")
            verdict = spec.check_file(rel).include
            if verdict is not None:
                return verdict
        return False


async def walk(
    ctx: Capabilities, start: Path, *, max_depth: int | None = None, stats: WalkStats | None = None
) -> AsyncIterator[Found]:
    """Every entry under `start` worth showing, breadth first, each directory's entries sorted
    (directories first)."""
    stats = stats if stats is not None else WalkStats()
    ignores = _Ignores(ctx)
    for folder in _ancestors(ctx, start):
        await ignores.load(folder)
    queue: deque[tuple[Path, str, int]] = deque([(start, "", 1)])
    while queue:
        folder, prefix, depth = queue.popleft()
        await ignores.load(folder)
        try:
            entries = await ctx.fs.list_dir(folder)
        except SeamError:
            stats.unreadable += 1
            continue
        entries.sort(key=lambda e: (e.kind != "dir", e.name.lower()))
        for e in entries:
            stats.scanned += 1
            if stats.scanned > MAX_SCANNED:
                stats.capped = True
                return
            path = folder / e.name
            if _skip(ctx, ignores, path, e):
                stats.skipped += 1
                continue
            found = Found(path, prefix + e.name, e, depth)
            yield found
            if found.is_dir and (max_depth is None or depth < max_depth):
                queue.append((path, found.rel + "/", depth + 1))


def _skip(ctx: Capabilities, ignores: _Ignores, path: Path, e: DirEntry) -> bool:
    if e.name in SKIPPED and (e.kind == "dir" or e.name == ".DS_Store" or e.name == ".git"):
        return True
    if ctx.policy.denied(path) is not None:
        return True
    return ignores.ignored(path, e.kind == "dir")


def _ancestors(ctx: Capabilities, start: Path) -> list[Path]:
    """From the root holding `start` down to `start`: their `.gitignore`s apply too."""
    roots = [r for r in ctx.policy.roots if start == r or start.is_relative_to(r)]
    if not roots:
        return [start]
    top = max(roots, key=lambda r: len(r.parts))
    chain = [start, *[p for p in start.parents if p == top or p.is_relative_to(top)]]
    return list(reversed(chain))
