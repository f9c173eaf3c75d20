"""The Python search engine's walk: `os.scandir`, breadth first, on the one thread the search
runs on, each directory's entries sorted (directories first, then by name), with the skip
rules and `.gitignore` applied as it goes. Symlinks are listed, never followed."""

from __future__ import annotations

import os
import stat
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass

from tether.engine.file_search import FileKind, SearchScope, TreeEntry, TreeListing
from tether.engine.local.ignore_files import Specs, entering, ignored
from tether.engine.local.search_rules import SkipRules
from tether.errors import Stopped

MAX_SCANNED = 200_000  # entries looked at by one walk, whatever it is looking for


@dataclass
class WalkStats:
    scanned: int = 0
    skipped: int = 0
    unreadable: int = 0
    capped: bool = False


@dataclass(frozen=True)
class Walked:
    path: str  # absolute
    entry: TreeEntry


def walk(
    scope: SearchScope, stats: WalkStats, stop: threading.Event | None = None
) -> Iterator[Walked]:
    """Every entry under the start that the rules keep, nearest first."""
    rules = SkipRules(scope.denylist)
    start = str(scope.start)
    lead = scope.start.relative_to(scope.top).as_posix() if scope.start != scope.top else ""
    specs = _ancestor_specs(scope)
    queue: deque[tuple[str, str, int, Specs]] = deque([(start, "", 1, specs)])
    while queue:
        if stop is not None and stop.is_set():
            raise Stopped
        folder, prefix, depth, specs = queue.popleft()
        from_top = _join(lead, prefix.rstrip("/"))
        specs = entering(specs, folder, from_top)
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: (not _is_dir(e), e.name.lower()))
        except OSError:
            stats.unreadable += 1
            continue
        for e in entries:
            stats.scanned += 1
            if stats.scanned > MAX_SCANNED:
                stats.capped = True
                return
            is_dir = _is_dir(e)
            rel = prefix + e.name
            gone = specs and ignored(specs, _join(lead, rel), is_dir)
            if gone or rules.skipped(e.name, is_dir):
                stats.skipped += 1
                continue
            kind = _kind(e, is_dir)
            target = _target(e.path) if kind == "symlink" else None
            yield Walked(e.path, TreeEntry(rel, kind, target, depth))
            if is_dir and (scope.max_depth is None or depth < scope.max_depth):
                queue.append((e.path, rel + "/", depth + 1, specs))


def tree_listing(
    scope: SearchScope, limit: int, stop: threading.Event | None = None
) -> TreeListing:
    stats = WalkStats()
    listing = TreeListing()
    for w in walk(scope, stats, stop):
        if len(listing.entries) == limit:
            listing.more = True
            break
        listing.entries.append(w.entry)
    listing.skipped, listing.unreadable, listing.capped = (
        stats.skipped,
        stats.unreadable,
        stats.capped,
    )
    return listing


def file_listing(scope: SearchScope, stop: threading.Event | None = None) -> list[str]:
    return [w.entry.rel for w in walk(scope, WalkStats(), stop) if w.entry.kind == "file"]


def _ancestor_specs(scope: SearchScope) -> Specs:
    """The ignore files of the directories from the top down to the start's parent."""
    specs: Specs = ()
    if scope.start == scope.top:
        return specs
    parts = scope.start.relative_to(scope.top).parts
    for i in range(len(parts)):
        folder = scope.top.joinpath(*parts[:i])
        specs = entering(specs, str(folder), "/".join(parts[:i]))
    return specs


def _join(lead: str, rel: str) -> str:
    return f"{lead}/{rel}" if lead and rel else lead or rel


def _is_dir(e: os.DirEntry[str]) -> bool:
    try:
        return e.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _kind(e: os.DirEntry[str], is_dir: bool) -> FileKind:
    if is_dir:
        return "dir"
    try:
        if e.is_symlink():
            return "symlink"
        return "file" if e.is_file(follow_symlinks=False) else "other"
    except OSError:
        return "other"


def _target(path: str) -> FileKind | None:
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    if stat.S_ISDIR(mode):
        return "dir"
    return "file" if stat.S_ISREG(mode) else "other"
