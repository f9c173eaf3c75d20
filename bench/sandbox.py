"""What confinement costs a command: the median time to run `true` through tether's sandbox
(building the confinement — `git status` for the uncommitted work, the secrets walk — writing
the launcher, and starting bubblewrap or the Landlock launcher), as a ratio to starting `true`
bare, measured in the same run, on a git project of `--files` files with a few uncommitted.

    python bench/sandbox.py [--runs 30] [--files 2000]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio

from tether.engine.local.processes import command_environment
from tether.engine.sandbox.detect import detect
from tether.engine.sandbox.session_sandbox import Sandbox, Scope


def project(root: Path, files: int) -> Path:
    p = root / "project"
    for i in range(files):
        d = p / f"pkg{i % 40}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"m{i}.py").write_text(f"x = {i}\n")
    env = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b",
           "GIT_COMMITTER_EMAIL": "b@b", "PATH": "/usr/bin:/bin"}  # fmt: skip
    for args in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "b"]):
        subprocess.run(["git", *args], cwd=p, env=env, check=True)
    for i in range(5):  # some uncommitted work to protect
        (p / f"pkg{i}" / f"m{i}.py").write_text("changed\n")
    (p / "notes.txt").write_text("untracked\n")
    return p


def bare() -> float:
    start = time.perf_counter()
    subprocess.run(["true"], check=True)
    return time.perf_counter() - start


async def confined(box: Sandbox, scope: Scope, cwd: Path) -> float:
    """A call's plan (does the sandbox protect everything?) and its run, as tether does them."""
    box._works.clear()  # each command looks afresh
    start = time.perf_counter()
    assert await box.problem(scope) is None
    argv = await box.wrap(["true"], cwd=cwd, scope=scope, base=command_environment(), env={})
    done = await anyio.run_process(argv, cwd=cwd, check=False)
    assert done.returncode == 0, argv
    return time.perf_counter() - start


async def main(runs: int, files: int) -> None:
    with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
        p = project(Path(tmp), files)
        scope = Scope((p,), (".git", ".env*", "*.pem", "*.key"), ("dd", "mkfs*"))
        for mechanism in ("bubblewrap", "landlock"):
            info = detect(mechanism)
            if info.mechanism != mechanism:
                print(f"{mechanism}: unavailable here ({info.why})")
                continue
            box = Sandbox(info, base=Path(tmp))
            await confined(box, scope, p)  # warm: the secrets walk is cached for 10 s
            pairs = [(bare(), await confined(box, scope, p)) for _ in range(runs)]
            floor = statistics.median(b for b, _ in pairs)
            cost = statistics.median(c for _, c in pairs)
            print(
                f"{mechanism}: `true` confined {cost * 1000:.1f} ms median, "
                f"{cost / floor:.1f}x a bare `true` ({floor * 1000:.1f} ms), "
                f"{files:,} files, {runs} runs"
            )
            box.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--files", type=int, default=2000)
    args = parser.parse_args()
    anyio.run(main, args.runs, args.files)
    sys.exit(0)
