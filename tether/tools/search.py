"""Search tools: tree, glob_paths, regex_files. Each walks through the `fs` seam (tools/walk.py)
and bounds its output with a line saying what was left out."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol, TypeVar

from tether.engine.events import TextOut
from tether.engine.registry import CallPlan, ToolArgs, ToolDef, ToolError, ToolOutput, tool
from tether.engine.seam import Capabilities, SeamError
from tether.tools.globs import glob_regex
from tether.tools.text import SNIFF_BYTES, is_binary
from tether.tools.tool_paths import display, existing, named, path_card, resolve
from tether.tools.walk import Found, WalkStats, walk

if TYPE_CHECKING:
    from tether.tools.line_regex import LineRegex

TREE_MAX_ENTRIES = 1000
GLOB_MAX_MATCHES = 500
REGEX_DEFAULT_RESULTS = 100
REGEX_HARD_MAX = 1000
REGEX_FILE_MAX_BYTES = 8 * 1024 * 1024
MATCH_LINE_CHARS = 300


class _Searches(Protocol):
    path: str  # where to search (empty: the project directory)


A = TypeVar("A", bound=_Searches)


def _search_cards(t: ToolDef[A], title: Callable[[A, str], str]) -> None:
    """A search's cards: `title(args, where)`, located at the path searched; read-only."""

    async def plan(ctx: Capabilities, args: A, mode: str) -> CallPlan:
        full = resolve(ctx, args.path or ".")
        return path_card(ctx, lambda where: title(args, where), "search", full)

    def describe(ctx: Capabilities, args: A) -> CallPlan:
        path = args.path or "."
        return named(title(args, path), "search", ctx, path)

    t.planned_by(plan)
    t.described_by(describe)


async def _directory(ctx: Capabilities, path: str) -> Path:
    full = resolve(ctx, path)
    st = await existing(ctx, full, path)
    if st.kind != "dir":
        raise ToolError("NOT_A_DIRECTORY", f"{path} is not a directory")
    return full


def _skipped_note(stats: WalkStats) -> str:
    notes: list[str] = []
    if stats.skipped:
        notes.append(f"{stats.skipped} skipped (VCS, noise dirs, .gitignore, denylist)")
    if stats.unreadable:
        notes.append(f"{stats.unreadable} directories unreadable")
    if stats.capped:
        notes.append("the walk stopped after 200000 entries")
    return f" [{'; '.join(notes)}]" if notes else ""


# --- tree -----------------------------------------------------------------------------------


class TreeArgs(ToolArgs):
    path: str = "."
    format: Literal["markdown", "flat", "decorated"] = "markdown"
    max_depth: int | None = None


@tool(kind="search", read_only=True)
async def tree(ctx: Capabilities, args: TreeArgs) -> ToolOutput:
    """Show the files and directories under a directory, as a tree.

    VCS directories, noise directories (node_modules, __pycache__, .venv, caches) and
    `.gitignore`d paths are left out. At most 1000 entries are shown, nearest levels first.

    Args:
        path: The directory to show, relative to the project directory or absolute.
        format: markdown (a nested bullet list), flat (one relative path a line) or decorated
            (├── drawing).
        max_depth: How many levels to descend (1: the directory's own entries); all when omitted.
    """
    max_depth = args.max_depth
    if max_depth is not None and max_depth < 1:
        raise ToolError("INVALID_ARGS", "max_depth must be 1 or more")
    full = await _directory(ctx, args.path)
    stats = WalkStats()
    found: list[Found] = []
    more = False
    async for f in walk(ctx, full, max_depth=max_depth, stats=stats):
        if len(found) == TREE_MAX_ENTRIES:
            more = True
            break
        found.append(f)
    dirs = sum(f.is_dir for f in found)
    head = f"{display(ctx, full)}/"
    body = _render_tree(found, args.format)
    foot = f"({dirs} directories, {len(found) - dirs} files){_skipped_note(stats)}"
    if more:
        foot += f"\n[… truncated at {TREE_MAX_ENTRIES} entries; narrow with path or max_depth]"
    text = "\n".join(x for x in (head, body, foot) if x)
    return ToolOutput(text, [TextOut(text)])


_search_cards(tree, lambda args, where: f"Tree of {where}")


def _render_tree(found: list[Found], fmt: str) -> str:
    children: dict[str, list[Found]] = defaultdict(list)
    for f in found:
        children[f.rel.rpartition("/")[0]].append(f)
    lines: list[str] = []

    def name(f: Found) -> str:
        return f.entry.name + ("/" if f.is_dir or f.entry.target == "dir" else "")

    def visit(parent: str, depth: int, rail: str) -> None:
        kids = children.get(parent, [])
        for i, f in enumerate(kids):
            last = i == len(kids) - 1
            if fmt == "flat":
                lines.append(f.rel + ("/" if f.is_dir else ""))
            elif fmt == "decorated":
                lines.append(f"{rail}{'└── ' if last else '├── '}{name(f)}")
            else:
                lines.append(f"{'  ' * depth}- {name(f)}")
            if f.is_dir:
                visit(f.rel, depth + 1, rail + ("    " if last else "│   "))

    visit("", 0, "")
    return "\n".join(lines)


# --- glob_paths -----------------------------------------------------------------------------


class GlobPathsArgs(ToolArgs):
    pattern: str
    path: str = "."


@tool(kind="search", read_only=True)
async def glob_paths(ctx: Capabilities, args: GlobPathsArgs) -> ToolOutput:
    """Find files and directories whose path matches a glob pattern, e.g. `**/*.py` or
    `src/**/test_*.{ts,tsx}`.

    `*` and `?` stay within one path segment, `**` spans any number of directories, `{a,b}`
    picks one of several. The pattern is matched against whole paths relative to `path`, so
    `*.py` finds only the files directly in `path` (`**/*.py` finds them at every level). VCS, noise
    and `.gitignore`d paths are left out. At most 500 paths are listed, sorted.

    Args:
        pattern: The glob pattern, relative to `path`.
        path: The directory to search, relative to the project directory or absolute.
    """
    pattern = args.pattern
    rx = glob_regex(pattern)
    full = await _directory(ctx, args.path)
    depth = None if "**" in pattern else pattern.strip("/").count("/") + 1
    stats = WalkStats()
    hits: list[str] = []
    async for f in walk(ctx, full, max_depth=depth, stats=stats):
        if rx.fullmatch(f.rel):
            hits.append(f.rel + ("/" if f.is_dir else ""))
    hits.sort()
    shown = hits[:GLOB_MAX_MATCHES]
    where = display(ctx, full)
    if not hits:
        text = f"no paths under {where} match {pattern}{_skipped_note(stats)}"
        return ToolOutput(text, [TextOut(text)])
    head = f"{len(hits)} paths under {where} match {pattern}{_skipped_note(stats)}"
    lines = [head, *shown]
    if len(hits) > len(shown):
        lines.append(f"[… {len(hits) - len(shown)} more not shown; narrow the pattern or path]")
    text = "\n".join(lines)
    return ToolOutput(text, [TextOut(head)])


_search_cards(glob_paths, lambda args, where: f"Find {args.pattern} in {where}")


# --- regex_files ----------------------------------------------------------------------------


class RegexFilesArgs(ToolArgs):
    pattern: str
    path: str = "."
    glob: str | None = None
    max_results: int = REGEX_DEFAULT_RESULTS


@tool(kind="search", read_only=True)
async def regex_files(ctx: Capabilities, args: RegexFilesArgs) -> ToolOutput:
    """Search file contents with a Python regular expression, line by line.

    Prints `path:line: text` for each matching line. `pattern` is a Python `re` regex, not a
    glob (`*.py` is an invalid regex); `path` is a literal file or directory. Binary files,
    files over 8 MiB, VCS and noise directories and `.gitignore`d files are skipped.

    Args:
        pattern: A Python regular expression, searched in each line (re.search).
        path: The file or directory to search, relative to the project directory or absolute.
        glob: Only files whose name (or, with a `/`, relative path) matches this glob, e.g.
            `*.py` or `src/**/*.ts`.
        max_results: At most this many matching lines are printed (up to 1000).
    """
    pattern, path, glob, max_results = args.pattern, args.path, args.glob, args.max_results
    rx = _line_regex(pattern)
    if max_results < 1:
        raise ToolError("INVALID_ARGS", "max_results must be 1 or more")
    limit = min(max_results, REGEX_HARD_MAX)
    only = glob_regex(glob) if glob else None
    full = resolve(ctx, path)
    st = await existing(ctx, full, path)
    if st.kind not in ("file", "dir"):
        raise ToolError("NOT_A_REGULAR_FILE", f"{path} is not a regular file or directory")
    search = _Search(ctx, pattern, rx, limit)
    stats = WalkStats()
    with rx:
        if st.kind == "file":
            await search.file(full)
        else:
            async for f in walk(ctx, full, stats=stats):
                if f.entry.kind != "file" or (only is not None and not _glob_hit(only, glob, f)):
                    continue
                if not await search.file(f.path):
                    break
    return search.output(pattern, display(ctx, full), stats)


_search_cards(regex_files, lambda args, where: f"Search {where} for /{args.pattern}/")


def _glob_hit(rx: re.Pattern[str], glob: str | None, f: Found) -> bool:
    return bool(rx.fullmatch(f.rel if glob and "/" in glob else f.entry.name))


def _line_regex(pattern: str) -> LineRegex:
    from tether.tools.line_regex import LineRegex  # not on the way to a session's start

    try:
        return LineRegex(pattern)
    except re.error as exc:
        hint = " (it is a Python regex, not a glob)" if pattern.startswith("*") else ""
        raise ToolError("INVALID_ARGS", f"bad regex {pattern!r}: {exc}{hint}") from None


def _shown(line: str) -> str:
    """A matching line, cut for display."""
    text = line.removesuffix("\r")
    return text[:MATCH_LINE_CHARS] + " […]" if len(text) > MATCH_LINE_CHARS else text


class _Search:
    def __init__(self, ctx: Capabilities, pattern: str, rx: LineRegex, limit: int) -> None:
        self.ctx, self.pattern, self.rx, self.limit = ctx, pattern, rx, limit
        self.lines: list[str] = []
        self.files = self.matched_files = self.binary = self.large = 0
        self.more = False

    async def file(self, path: Path) -> bool:
        """Search one file; False once the result limit is reached."""
        st = await self.ctx.fs.stat(path)
        if st is None or st.kind != "file":
            return True
        if st.size > REGEX_FILE_MAX_BYTES:
            self.large += 1
            return True
        try:
            data = await self.ctx.fs.read_bytes(path, max_bytes=REGEX_FILE_MAX_BYTES)
        except SeamError:
            return True
        if is_binary(data[:SNIFF_BYTES], len(data)):
            self.binary += 1
            return True
        self.files += 1
        from tether.tools.line_regex import RegexTooSlow

        room = self.limit - len(self.lines)
        try:
            hits = await self.rx.grep(data, room + 1)
        except RegexTooSlow as exc:
            self._add(path, exc.hits[:room])
            raise self._too_slow(path) from None
        self._add(path, hits[:room])
        if len(hits) > room:
            self.more = True
            return False
        return True

    def _add(self, path: Path, hits: list[tuple[int, str]]) -> None:
        shown = display(self.ctx, path)
        self.lines += [f"{shown}:{n}: {_shown(line)}" for n, line in hits]
        self.matched_files += bool(hits)

    def _too_slow(self, path: Path) -> ToolError:
        lines = [
            f"regex /{self.pattern}/ is too slow: it used up the {self.rx.budget:g} s one search "
            f"may spend matching (stopped in {display(self.ctx, path)}; {self.files} files "
            "searched). Simplify it: avoid nested quantifiers such as `(a+)+` and alternatives "
            "that can match the same text such as `(a|aa)*`; or search fewer files with `path` "
            "or `glob`."
        ]
        if self.lines:
            lines.append(f"{len(self.lines)} matching lines found before it stopped:")
            lines += self.lines[:REGEX_DEFAULT_RESULTS]
        if len(self.lines) > REGEX_DEFAULT_RESULTS:
            lines.append(f"[… {len(self.lines) - REGEX_DEFAULT_RESULTS} more not shown]")
        return ToolError("TOOL_TIMEOUT", "\n".join(lines))

    def output(self, pattern: str, where: str, stats: WalkStats) -> ToolOutput:
        skipped: list[str] = []
        if self.binary:
            skipped.append(f"{self.binary} binary")
        if self.large:
            skipped.append(f"{self.large} over {REGEX_FILE_MAX_BYTES // (1024 * 1024)} MiB")
        note = f"; skipped {', '.join(skipped)} files" if skipped else ""
        walked = _skipped_note(stats)
        if not self.lines:
            text = (
                f"no matches for /{pattern}/ in {where} ({self.files} files searched{note}){walked}"
            )
            return ToolOutput(text, [TextOut(text)])
        summary = (
            f"{len(self.lines)} matching lines in {self.matched_files} files "
            f"({self.files} files searched{note}){walked}"
        )
        lines = [*self.lines, summary]
        if self.more:
            lines.append(
                f"[… stopped at {self.limit} matches; narrow the pattern, path or glob, or "
                "raise max_results]"
            )
        return ToolOutput("\n".join(lines), [TextOut(summary)])
