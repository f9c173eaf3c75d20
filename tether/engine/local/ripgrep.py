"""Search on ripgrep: one `rg` process per search (the PyPI wheel `ripgrep` installs it beside
tether's Python), its output parsed as it comes. `TETHER_RG=0` turns it off; `TETHER_RG=/path`
names another binary.

The same rules as the Python engine: `.gitignore` honoured with or without git (but not
`.ignore`, `.rgignore` or the global excludes file), hidden files searched, VCS and noise
directories and the denylist left out by globs, symlinks not followed, no config file read.
What ripgrep cannot do is done on what it reports: a path in another Unicode spelling is
checked against the denylist again, a file with several hard links is dropped.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import anyio
import anyio.lowlevel
from anyio.abc import Process

from tether.engine.file_search import GrepHit, GrepRequest, GrepResult, SearchScope, bfs_key
from tether.engine.local import reaper
from tether.engine.local.ignore_files import ancestor_rules
from tether.engine.local.search_rules import SkipRules

GREP_MAX_FILESIZE = "8M"
_COMMON = ("--no-config", "--hidden", "--no-require-git", "--no-ignore-global", "--no-ignore-dot")
_COMMON += ("--no-messages", "--color", "never", "--null")


class RipgrepFailed(Exception):
    """ripgrep stopped with an error of its own (not a file it could not read: those are
    silent): the Python engine searches instead."""


class RustDialectError(RipgrepFailed):
    """ripgrep could not parse the pattern."""


@cache
def find_rg() -> Path | None:
    """The `rg` to run: `TETHER_RG` when it names one, else the wheel's beside this Python,
    else the one on PATH; None when `TETHER_RG=0` or there is none."""
    chosen = os.environ.get("TETHER_RG", "")
    if chosen == "0":
        return None
    exe = "rg.exe" if sys.platform == "win32" else "rg"
    candidates = [Path(chosen)] if chosen not in ("", "1") else []
    candidates += [Path(sys.executable).parent / exe, Path(sysconfig.get_path("scripts")) / exe]
    on_path = shutil.which("rg")
    candidates += [Path(on_path)] if on_path else []
    return next((c for c in candidates if c.is_file() and os.access(c, os.X_OK)), None)


@cache
def rg_version(rg: Path) -> str:
    try:
        out = subprocess.run([rg, "--version"], capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return "ripgrep (version unknown)"
    return out.stdout.decode("utf-8", "replace").partition("\n")[0].strip()


@dataclass
class _Where:
    """ripgrep runs in the root holding the start (the ignore files between them are read there,
    from one file: see `ignore_files.ancestor_rules`), searching the start; none above the root
    are read."""

    scope: SearchScope
    prefix: str = ""  # what ripgrep's paths start with: `./` and the start, from the root
    ignore_file: Path | None = None

    def __enter__(self) -> _Where:
        if self.scope.start != self.scope.top:
            rel = self.scope.start.relative_to(self.scope.top).as_posix()
            self.prefix = f"./{rel}/"
            rules = ancestor_rules(str(self.scope.top), rel)
            if rules:
                fd, name = tempfile.mkstemp(prefix="tether-ignore-", suffix=".txt")
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    f.write("\n".join(rules) + "\n")
                self.ignore_file = Path(name)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.ignore_file is not None:
            self.ignore_file.unlink(missing_ok=True)

    def args(self) -> list[str]:
        out = ["--ignore-file", str(self.ignore_file)] if self.ignore_file else []
        return [*out, "--", self.prefix.rstrip("/")] if self.prefix else out

    def rel(self, path: str) -> str:
        return path.removeprefix(self.prefix)


def _args(scope: SearchScope, rules: SkipRules, name_hint: str | None) -> list[str]:
    args = [*_COMMON, "--no-ignore-parent", *rules.rg_globs()]
    if scope.max_depth is not None:
        args += ["--max-depth", str(scope.max_depth)]
    if name_hint:  # a type filter, not a glob: globs would override .gitignore
        args += ["--type-add", f"tethermatch:{name_hint}", "--type", "tethermatch"]
    return args


def _env() -> dict[str, str]:
    """Nothing of tether's environment (no provider keys, no RIPGREP_CONFIG_PATH) but PATH (and
    Windows' SYSTEMROOT) and the marker that has tether's exit stop it."""
    env = {k: os.environ[k] for k in ("PATH", "SYSTEMROOT") if k in os.environ}
    return {**env, reaper.MARKER: reaper.OWNER}


async def list_files(rg: Path, scope: SearchScope, name_hint: str | None) -> list[str]:
    rules = SkipRules(scope.denylist)
    with _Where(scope) as where:
        argv = [str(rg), "--files", *_args(scope, rules, name_hint), *where.args()]
        async with await anyio.open_process(
            argv, cwd=scope.top, env=_env(), stdin=subprocess.DEVNULL
        ) as proc:
            assert proc.stdout is not None
            chunks = [chunk async for chunk in proc.stdout]
            await proc.wait()
            _check(proc.returncode, await _errors(proc) if proc.returncode == 2 else b"")
    names = b"".join(chunks).decode("utf-8", "surrogateescape").split("\0")
    if where.prefix:
        names = [where.rel(n) for n in names]
    return [n for n in names if n and (n.isascii() or not rules.denied_path(n))]


@dataclass
class _Collected:
    """What ripgrep reported, filtered as it comes: once one line more than the request's limit
    is kept, the search is over (`rg | head` stops there too) and ripgrep is stopped."""

    keep: Callable[[str], bool]
    limit: int
    where: _Where | None = None
    hits: list[GrepHit] = field(default_factory=list[GrepHit])
    stats: list[str] = field(default_factory=list[str])
    capped: bool = False
    files_seen: dict[str, bool] = field(default_factory=dict[str, bool])

    def take(self, hit: GrepHit) -> None:
        ok = self.files_seen.get(hit.rel)
        if ok is None:
            ok = self.files_seen[hit.rel] = self.keep(hit.rel)
        if ok:
            self.hits.append(hit)
            self.capped = len(self.hits) > self.limit


async def grep(rg: Path, scope: SearchScope, request: GrepRequest, pattern: str) -> GrepResult:
    """Raises RustDialectError when ripgrep cannot parse `pattern`, RipgrepFailed when it
    fails otherwise."""
    rules = SkipRules(scope.denylist)
    argv = [str(rg), *_args(scope, rules, request.name_hint), "--line-number", "--no-heading"]
    argv += ["--with-filename", "--stats", "--max-filesize", GREP_MAX_FILESIZE]
    argv += ["--max-columns", "4096", "--max-columns-preview", "-e", pattern]
    got = _Collected(lambda rel: _keep(scope.start, rel, rules, request), request.limit)
    with _Where(scope) as where:
        got.where = where
        async with await anyio.open_process(
            [*argv, *where.args()], cwd=scope.top, env=_env(), stdin=subprocess.DEVNULL
        ) as proc:
            with anyio.move_on_after(request.budget) as budget:
                # a spent budget stops the search even when ripgrep's output is all there
                # already and reading it would never wait
                await anyio.lowlevel.checkpoint()
                await _read(proc, got)
            if budget.cancelled_caught or got.capped:
                proc.kill()
            await proc.wait()
            _check(proc.returncode, await _errors(proc) if proc.returncode == 2 else b"")
    result = _result(got, request)
    result.too_slow = budget.cancelled_caught
    return result


def _check(code: int | None, errors: bytes) -> None:
    """Exit 2 with a message (files it could not read are not reported: --no-messages)."""
    if code != 2 or not errors.strip():
        return
    text = errors.decode("utf-8", "replace").strip()
    if "regex parse error" in text:
        raise RustDialectError(text)
    raise RipgrepFailed(text)


async def _errors(proc: Process) -> bytes:
    assert proc.stderr is not None
    chunks = [chunk async for chunk in proc.stderr]
    return b"".join(chunks)


async def _read(proc: Process, got: _Collected) -> None:
    assert proc.stdout is not None
    tail = b""
    async for chunk in proc.stdout:
        lines = (tail + chunk).split(b"\n")
        tail = lines.pop()
        for line in lines:
            _take(line, got)
            if got.capped:
                return
    if tail:
        _take(tail, got)


def _take(line: bytes, got: _Collected) -> None:
    name, nul, rest = line.partition(b"\0")
    number, _, text = rest.partition(b":")
    if not nul or not number.isdigit():  # the --stats lines at the end
        got.stats.append(line.decode("utf-8", "replace"))
        return
    rel = name.decode("utf-8", "surrogateescape")
    if got.where is not None:
        rel = got.where.rel(rel)
    got.take(GrepHit(rel, int(number), text.decode("utf-8", "replace")))


def _result(got: _Collected, request: GrepRequest) -> GrepResult:
    kept = sorted(got.hits, key=lambda h: (bfs_key(h.rel), h.line))
    result = GrepResult("ripgrep", kept[: request.limit], more=len(kept) > request.limit)
    result.more |= got.capped
    result.matched_files = len({h.rel for h in result.hits})
    result.files = None if got.capped else _files_searched(got.stats)
    return result


def _keep(start: Path, rel: str, rules: SkipRules, request: GrepRequest) -> bool:
    """Whether to show a file's lines: the tool's filter, the denylist on names ripgrep may
    have compared in another spelling, and one name only (a second could be a `.env`'s)."""
    if request.only is not None and not request.only(rel):
        return False
    if not rel.isascii() and rules.denied_path(rel):
        return False
    try:
        return os.lstat(start / rel).st_nlink == 1
    except OSError:
        return False


def _files_searched(stats: list[str]) -> int | None:
    for line in stats:
        words = line.split()
        if words[1:] == ["files", "searched"] and words[0].isdigit():
            return int(words[0])
    return None
