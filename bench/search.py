"""Search against the floor: tether's `regex_files`, `glob_paths` and `tree` (the real tool path:
the tool functions with real Capabilities, as the tests build them) on a generated tree of
50,000 files (and one of 100,000), against ripgrep run directly on the same tree (the same `rg`
binary tether runs) and `find | head` for `tree`. Medians of interleaved runs, printed as ratios.

Baselines (what each ratio divides by):
- regex_files: `rg --hidden -e PATTERN` in the tree (a pattern that matches nothing, so the
  whole tree is read; and one that matches a few hundred lines); a pattern matching most lines,
  capped at 1000 results, against `rg --hidden -e alpha | head -n 1000` (rg stopped by the pipe)
- glob_paths:  `rg --files --hidden -g '*.py'` in the tree
- tree:        `sh -c 'find . | head -n 1000'` in the tree (tree shows at most 1000 entries)

The Python fallback (TETHER_RG=0) is timed too, for information.

    python bench/search.py [--runs 7] [--files 50000] [--big 100000]
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import anyio

from tests.support.toolctx import make_ctx, text
from tether.engine.local.local_search import LocalSearch
from tether.engine.local.ripgrep import find_rg
from tether.tools.search import glob_paths, regex_files, tree

WORDS = ["alpha", "beta", "gamma", "delta", "return", "value", "self", "config", "item", "data"]


def build_tree(root: Path, files: int) -> None:
    """`files` source files, 100 a directory, three levels deep, plus what a project has
    beside them (.gitignore, an ignored build dir, a .git dir)."""
    rnd = random.Random(files)
    (root / ".gitignore").write_text("build/\n*.log\n")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    for i in range(files):
        folder = root / f"pkg{i // 10000:02}" / f"mod{(i // 100) % 100:02}"
        if i % 100 == 0:
            folder.mkdir(parents=True, exist_ok=True)
        ext = (".py", ".ts", ".md", ".txt")[i % 4]
        lines = [" ".join(rnd.choices(WORDS, k=8)) for _ in range(30)]
        if i % 211 == 0:
            lines[5] = "    needle_found = compute(needle_value)"
        (folder / f"file{i:06}{ext}").write_text("\n".join(lines) + "\n")
    build = root / "build"
    build.mkdir()
    for i in range(200):
        (build / f"gen{i}.py").write_text("frobnicate_never\n")


def _run(argv: list[str], cwd: Path) -> None:
    subprocess.run(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


async def _time(fn: Callable[[], Awaitable[Any]]) -> float:
    start = time.perf_counter()
    await fn()
    return time.perf_counter() - start


async def measure(root: Path, runs: int, rg: str) -> list[tuple[str, float, float, str]]:
    ctx = make_ctx(root, root.parent / "spill", search=LocalSearch())
    py = make_ctx(root, root.parent / "spill", search=LocalSearch(use_rg=False))
    cases: list[tuple[str, Callable[[], Awaitable[Any]], list[str] | None, str]] = [
        ("regex_files (no match)", lambda: text(ctx, regex_files, pattern=r"frobnicate_\w+"),
         [rg, "--hidden", "-e", r"frobnicate_\w+"], "rg --hidden -e frobnicate_\\w+"),
        ("regex_files (few hits)", lambda: text(ctx, regex_files, pattern=r"needle_\w+"),
         [rg, "--hidden", "-e", r"needle_\w+"], "rg --hidden -e needle_\\w+"),
        ("regex_files (capped at 1000)",
         lambda: text(ctx, regex_files, pattern=r"alpha", max_results=1000),
         ["sh", "-c", f"{rg} --hidden -e alpha | head -n 1000"], "rg --hidden -e alpha | head -n 1000"),
        ("glob_paths **/*.py", lambda: text(ctx, glob_paths, pattern="**/*.py"),
         [rg, "--files", "--hidden", "-g", "*.py"], "rg --files --hidden -g '*.py'"),
        ("tree", lambda: text(ctx, tree),
         ["sh", "-c", "find . | head -n 1000"], "find . | head -n 1000"),
        ("python fallback: regex_files (no match)",
         lambda: text(py, regex_files, pattern=r"frobnicate_\w+"), None, "(rg row above)"),
        ("python fallback: glob_paths **/*.py",
         lambda: text(py, glob_paths, pattern="**/*.py"), None, "(rg row above)"),
    ]  # fmt: skip
    samples: dict[str, list[float]] = {}
    floors: dict[str, list[float]] = {}
    for _, fn, _, _ in cases:  # warm the page cache and both engines once
        await fn()
    for _ in range(runs):
        for name, fn, argv, _ in cases:  # interleaved: each run times every case in turn
            samples.setdefault(name, []).append(await _time(fn))
            if argv is not None:
                start = time.perf_counter()
                _run(argv, root)
                floors.setdefault(name, []).append(time.perf_counter() - start)
    out: list[tuple[str, float, float, str]] = []
    last_floor = 0.0
    for name, _, argv, floor_name in cases:
        ours = statistics.median(samples[name])
        floor = statistics.median(floors[name]) if argv is not None else last_floor
        last_floor = floor if argv is not None else last_floor
        out.append((name, ours, floor, floor_name))
    # the fallback rows divide by the rg row of the same search
    named = {n: f for n, _, f, _ in out}
    out[5] = (out[5][0], out[5][1], named["regex_files (no match)"], "rg --hidden -e …")
    out[6] = (out[6][0], out[6][1], named["glob_paths **/*.py"], "rg --files --hidden -g …")
    return out


def report(title: str, rows: list[tuple[str, float, float, str]]) -> None:
    print(f"\n{title}")
    print(f"{'search':42} {'tether':>9} {'baseline':>9} {'ratio':>6}  baseline is")
    for name, ours, floor, floor_name in rows:
        ratio = ours / floor if floor else float("nan")
        print(f"{name:42} {ours * 1000:8.1f}ms {floor * 1000:8.1f}ms {ratio:5.2f}x  {floor_name}")


async def no_timeout(root: Path) -> str:
    ctx = make_ctx(root, root.parent / "spill", search=LocalSearch())
    start = time.perf_counter()
    got = await text(ctx, regex_files, pattern=r"frobnicate_\w+")
    took = time.perf_counter() - start
    return f"{got.splitlines()[0]}  [{took:.2f} s, no TOOL_TIMEOUT]"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--files", type=int, default=50_000)
    parser.add_argument("--big", type=int, default=100_000, help="0: skip the big tree")
    args = parser.parse_args()
    rg = find_rg()
    if rg is None:
        sys.exit("no rg: install the `ripgrep` wheel (a tether dependency)")
    print(f"rg: {rg}")
    with tempfile.TemporaryDirectory(prefix="tether-bench-search-") as tmp:
        for files, runs in ((args.files, args.runs), (args.big, max(3, args.runs // 2))):
            if not files:
                continue
            root = Path(tmp) / f"tree{files}"
            root.mkdir()
            start = time.perf_counter()
            build_tree(root, files)
            print(f"\nbuilt {files} files in {time.perf_counter() - start:.1f} s")
            rows = anyio.run(measure, root, runs, str(rg))
            report(f"{files} files, medians of {runs} interleaved runs", rows)
            print("regex_files on the whole tree:", anyio.run(no_timeout, root))


if __name__ == "__main__":
    main()
