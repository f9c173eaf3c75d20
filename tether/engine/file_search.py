"""The `search` seam: listing and searching a directory tree for the search tools (tree,
glob_paths, regex_files) in one pass each, on a real search engine where there is one.

Every engine applies the same rules: `.gitignore` files (from the root holding the start down),
VCS and noise directories and the path denylist leave entries out; symlinks are never followed;
only regular files with one name (a second hard link could be a denylisted file's) are read.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Literal, Protocol

import msgspec

FileKind = Literal["file", "dir", "symlink", "other"]
EngineName = Literal["ripgrep", "python"]


class SearchScope(msgspec.Struct, frozen=True):
    """Where to look: `start` (absolute, resolved) below `top`, the root holding it, whose
    `.gitignore` files apply from there down; `denylist`: the workspace's patterns, compared with
    names as `workspace.comparable` spells them."""

    start: Path
    top: Path
    denylist: tuple[str, ...]
    max_depth: int | None = None  # 1: only the start's own entries


class TreeEntry(msgspec.Struct, frozen=True):
    rel: str  # relative to the start, `/`-separated
    kind: FileKind
    target: FileKind | None = None  # what a symlink points at
    depth: int = 1

    @property
    def name(self) -> str:
        return self.rel.rpartition("/")[2]


class TreeListing(msgspec.Struct):
    """The nearest entries first (breadth first, each directory's own sorted: directories,
    then files, by name)."""

    entries: list[TreeEntry] = msgspec.field(default_factory=list[TreeEntry])
    more: bool = False  # the limit was reached with entries left
    skipped: int = 0  # entries left out by the rules above
    unreadable: int = 0  # directories that could not be listed
    capped: bool = False  # the walk stopped after looking at MAX_SCANNED entries


class GrepRequest(msgspec.Struct, frozen=True):
    pattern: str  # Python `re` syntax (an engine that reads another dialect translates it)
    limit: int  # at most this many lines; `more` says there were others
    budget: float  # seconds of matching the search may spend
    only: Callable[[str], bool] | None = None  # which files (by path relative to the start)
    # A glob every file name `only` accepts matches (`*`, `?`, `{a,b}`), for an engine to narrow
    # its walk with; `only` still decides.
    name_hint: str | None = None


class GrepHit(msgspec.Struct, frozen=True):
    rel: str  # the file, relative to the start
    line: int  # from 1
    text: str  # the whole line, without its newline


class GrepResult(msgspec.Struct):
    engine: EngineName
    hits: list[GrepHit] = msgspec.field(
        default_factory=list[GrepHit]
    )  # in walk order (see bfs_key)
    more: bool = False
    files: int | None = None  # files searched; None where the engine stopped before it knew
    binary: int | None = None  # binary files skipped, where the engine counts them
    large: int | None = None  # files over the size limit skipped, where counted
    matched_files: int = 0
    too_slow: bool = False  # the budget ran out: `hits` is what was found before
    stopped_in: str | None = None  # the file being matched when it did, where known
    note: str = ""  # why this engine ran, when that is worth saying


class FileSearch(Protocol):
    @property
    def engine(self) -> str:
        """Which engine searches, for `tether doctor` (`ripgrep 14.1.0 (/path/rg)`, `python`)."""
        ...

    async def list_files(self, scope: SearchScope, *, name_hint: str | None) -> list[str]:
        """The regular files under the start (paths relative to it, unordered)."""
        ...

    async def tree(self, scope: SearchScope, *, limit: int) -> TreeListing:
        """At most `limit` entries (files, directories, symlinks), nearest first."""
        ...

    async def grep(self, scope: SearchScope, request: GrepRequest) -> GrepResult:
        """The lines matching the pattern in the files under the start (or in the one file
        `start` names), binary files and files over the size limit skipped."""
        ...


def bfs_key(rel: str) -> tuple[int, tuple[str, ...], str]:
    """Where a file comes in a breadth-first walk that sorts each directory's entries by name
    (case folded): nearer levels first."""
    parts = rel.split("/")
    return (len(parts), tuple(p.lower() for p in parts), rel)
