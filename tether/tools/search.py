"""Search tools: tree, glob_paths, regex_files, on the `search` seam (engine/file_search.py:
ripgrep, or a single-pass Python engine), each bounding its output with a line saying what was
left out."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Literal, Protocol, TypeVar

from tether.engine.events import TextOut
from tether.engine.file_search import (
    GrepRequest,
    GrepResult,
    SearchScope,
    TreeEntry,
    TreeListing,
)
from tether.engine.registry import CallPlan, ToolArgs, ToolDef, ToolOutput, tool
from tether.engine.seam import Capabilities
from tether.errors import ToolError
from tether.tools.globs import glob_regex, name_hint
from tether.tools.tool_paths import display, existing, named, path_card, resolve

TREE_MAX_ENTRIES = 1000
GLOB_MAX_MATCHES = 500
REGEX_DEFAULT_RESULTS = 100
REGEX_HARD_MAX = 1000
REGEX_FILE_MAX_MIB = 8  # the engines skip larger files
MATCH_LINE_CHARS = 300
MATCH_BUDGET = 10.0  # seconds of matching one call may spend, over all its files


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


def _scope(ctx: Capabilities, full: Path, max_depth: int | None = None) -> SearchScope:
    """Below the root holding `full`, whose `.gitignore` files apply from there down."""
    top = ctx.policy.root_of(full) or full
    return SearchScope(full, top, ctx.policy.denylist_patterns, max_depth)


def _skipped_note(listing: TreeListing) -> str:
    notes: list[str] = []
    if listing.skipped:
        notes.append(f"{listing.skipped} skipped (VCS, noise dirs, .gitignore, denylist)")
    if listing.unreadable:
        notes.append(f"{listing.unreadable} directories unreadable")
    if listing.capped:
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
    listing = await ctx.searcher.tree(_scope(ctx, full, max_depth), limit=TREE_MAX_ENTRIES)
    found = listing.entries
    dirs = sum(f.kind == "dir" for f in found)
    head = f"{display(ctx, full)}/"
    body = _render_tree(found, args.format)
    foot = f"({dirs} directories, {len(found) - dirs} files){_skipped_note(listing)}"
    if listing.more:
        foot += f"\n[… truncated at {TREE_MAX_ENTRIES} entries; narrow with path or max_depth]"
    text = "\n".join(x for x in (head, body, foot) if x)
    return ToolOutput(text, [TextOut(text)])


_search_cards(tree, lambda args, where: f"Tree of {where}")


def _render_tree(found: list[TreeEntry], fmt: str) -> str:
    children: dict[str, list[TreeEntry]] = defaultdict(list)
    for f in found:
        children[f.rel.rpartition("/")[0]].append(f)
    lines: list[str] = []

    def name(f: TreeEntry) -> str:
        return f.name + ("/" if f.kind == "dir" or f.target == "dir" else "")

    def visit(parent: str, depth: int, rail: str) -> None:
        kids = children.get(parent, [])
        for i, f in enumerate(kids):
            last = i == len(kids) - 1
            if fmt == "flat":
                lines.append(f.rel + ("/" if f.kind == "dir" else ""))
            elif fmt == "decorated":
                lines.append(f"{rail}{'└── ' if last else '├── '}{name(f)}")
            else:
                lines.append(f"{'  ' * depth}- {name(f)}")
            if f.kind == "dir":
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
    and `.gitignore`d paths are left out; a directory is listed when it holds a listed file. At
    most 500 paths are listed, sorted.

    Args:
        pattern: The glob pattern, relative to `path`.
        path: The directory to search, relative to the project directory or absolute.
    """
    pattern = args.pattern
    rx = glob_regex(pattern)
    full = await _directory(ctx, args.path)
    hint = name_hint(pattern)
    depth = None if "**" in pattern else pattern.strip("/").count("/") + 1
    if depth is not None and hint is None:
        depth += 1  # a directory at the pattern's depth is seen through the files in it
    files = await ctx.searcher.list_files(_scope(ctx, full, depth), name_hint=hint)
    paths = files if hint is not None else [*files, *_directories(files)]
    hits = sorted(p for p in paths if rx.fullmatch(p.rstrip("/")))
    shown = hits[:GLOB_MAX_MATCHES]
    where = display(ctx, full)
    if not hits:
        text = f"no paths under {where} match {pattern}"
        return ToolOutput(text, [TextOut(text)])
    head = f"{len(hits)} paths under {where} match {pattern}"
    lines = [head, *shown]
    if len(hits) > len(shown):
        lines.append(f"[… {len(hits) - len(shown)} more not shown; narrow the pattern or path]")
    text = "\n".join(lines)
    return ToolOutput(text, [TextOut(head)])


def _directories(files: list[str]) -> set[str]:
    """The directories holding the files (each with a trailing `/`)."""
    dirs: set[str] = set()
    for f in files:
        cut = f.rfind("/")
        while cut > 0 and (d := f[: cut + 1]) not in dirs:
            dirs.add(d)
            cut = f.rfind("/", 0, cut)
    return dirs


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
    files over 8 MiB, VCS and noise directories and `.gitignore`d files are skipped. The search
    runs on ripgrep; a pattern using look-around, backreferences, atomic groups, possessive
    quantifiers or verbose mode runs on Python's slower engine (the output says so).

    Args:
        pattern: A Python regular expression, searched in each line (re.search).
        path: The file or directory to search, relative to the project directory or absolute.
        glob: Only files whose name (or, with a `/`, relative path) matches this glob, e.g.
            `*.py` or `src/**/*.ts`.
        max_results: At most this many matching lines are printed (up to 1000).
    """
    pattern, path, glob = args.pattern, args.path, args.glob
    _check_regex(pattern)
    if args.max_results < 1:
        raise ToolError("INVALID_ARGS", "max_results must be 1 or more")
    limit = min(args.max_results, REGEX_HARD_MAX)
    only = _glob_filter(glob) if glob else None
    full = resolve(ctx, path)
    st = await existing(ctx, full, path)
    if st.kind not in ("file", "dir"):
        raise ToolError("NOT_A_REGULAR_FILE", f"{path} is not a regular file or directory")
    hint = name_hint(glob) if glob and st.kind == "dir" else None
    request = GrepRequest(pattern, limit, MATCH_BUDGET, only, hint)
    result = await ctx.searcher.grep(_scope(ctx, full), request)
    base = full if st.kind == "dir" else full.parent
    shown: dict[str, str] = {}  # one display per file, not per line (it resolves the cwd)
    lines: list[str] = []
    for h in result.hits:
        where = shown.get(h.rel) or shown.setdefault(h.rel, display(ctx, base / h.rel))
        lines.append(f"{where}:{h.line}: {_shown(h.text)}")
    if result.too_slow:
        raise _too_slow(ctx, pattern, result, lines, base)
    return _output(pattern, display(ctx, full), result, lines, limit)


_search_cards(regex_files, lambda args, where: f"Search {where} for /{args.pattern}/")


def _glob_filter(glob: str) -> Callable[[str], bool]:
    """Which files a `glob` argument takes: by name, or with a `/` by relative path."""
    rx = glob_regex(glob)
    if "/" in glob:
        return lambda rel: rx.fullmatch(rel) is not None
    return lambda rel: rx.fullmatch(rel.rpartition("/")[2]) is not None


def _check_regex(pattern: str) -> None:
    """The pattern must be a Python `re` regex (the model reads `re`'s error messages)."""
    try:
        re.compile(pattern)
    except re.error as exc:
        hint = " (it is a Python regex, not a glob)" if pattern.startswith("*") else ""
        raise ToolError("INVALID_ARGS", f"bad regex {pattern!r}: {exc}{hint}") from None


def _shown(line: str) -> str:
    """A matching line, cut for display."""
    text = line.removesuffix("\r")
    return text[:MATCH_LINE_CHARS] + " […]" if len(text) > MATCH_LINE_CHARS else text


def _too_slow(
    ctx: Capabilities, pattern: str, result: GrepResult, found: list[str], base: Path
) -> ToolError:
    where = f"stopped in {display(ctx, base / result.stopped_in)}; " if result.stopped_in else ""
    searched = f"{result.files} files searched" if result.files is not None else "search stopped"
    lines = [
        f"regex /{pattern}/ is too slow: it used up the {MATCH_BUDGET:g} s one search "
        f"may spend matching ({where}{searched}). Simplify it: avoid nested quantifiers such "
        "as `(a+)+` and alternatives that can match the same text such as `(a|aa)*`; or "
        "search fewer files with `path` or `glob`."
    ]
    if found:
        lines.append(f"{len(found)} matching lines found before it stopped:")
        lines += found[:REGEX_DEFAULT_RESULTS]
    if len(found) > REGEX_DEFAULT_RESULTS:
        lines.append(f"[… {len(found) - REGEX_DEFAULT_RESULTS} more not shown]")
    return ToolError("TOOL_TIMEOUT", "\n".join(lines))


def _searched(result: GrepResult) -> str:
    """`(N files searched; skipped ...)`, with what the engine counted."""
    skipped: list[str] = []
    if result.binary:
        skipped.append(f"{result.binary} binary")
    if result.large:
        skipped.append(f"{result.large} over {REGEX_FILE_MAX_MIB} MiB")
    note = f"; skipped {', '.join(skipped)} files" if skipped else ""
    files = f"{result.files} files searched" if result.files is not None else "search stopped"
    return f"({files}{note})"


def _output(
    pattern: str, where: str, result: GrepResult, lines: list[str], limit: int
) -> ToolOutput:
    note = [f"[{result.note}]"] if result.note else []
    if not lines:
        text = "\n".join([f"no matches for /{pattern}/ in {where} {_searched(result)}", *note])
        return ToolOutput(text, [TextOut(text)])
    summary = f"{len(lines)} matching lines in {result.matched_files} files {_searched(result)}"
    out = [*lines, summary, *note]
    if result.more:
        out.append(
            f"[… stopped at {limit} matches; narrow the pattern, path or glob, or raise "
            "max_results]"
        )
    return ToolOutput("\n".join(out), [TextOut(summary)])
