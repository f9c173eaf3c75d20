"""A search that reaches its limit is over: ripgrep is stopped there (as `rg | head` stops it),
not left to scan the rest of the tree. Judged by effect: the process is gone when the tool
answers, and the answer says it stopped at the limit."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.support.toolctx import make_ctx, text
from tether.engine.local import ripgrep
from tether.engine.local.local_search import LocalSearch
from tether.tools import search
from tether.tools.search import regex_files

pytestmark = pytest.mark.anyio

# Stands in for rg: prints matches in rg's `--null --line-number --with-filename` form, then
# keeps its output open without finishing (as rg does in the middle of a big tree).
STALLING_RG = """\
import os, sys, time
if "--version" in sys.argv:
    print("ripgrep 14.1.0 (stand-in)")
    sys.exit(0)
open(sys.argv[1] + ".pid", "w").write(str(os.getpid()))
out = sys.stdout.buffer
for n in range(1, {lines} + 1):
    out.write(b"big.txt\\0%d:hit %d\\n" % (n, n))
out.flush()
time.sleep(120)
"""


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.mark.slow
async def test_ripgrep_is_stopped_once_the_limit_is_reached(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stand-in prints 1,500 matches and then goes on searching: the answer comes with the
    first 1,000 (not after the budget) and the process is gone."""
    monkeypatch.setattr(search, "MATCH_BUDGET", 60.0)
    (project / "big.txt").write_text("hit\n" * 1500)
    script = tmp_path / "rg.py"
    script.write_text(STALLING_RG.format(lines=1500))
    rg = tmp_path / "rg"
    rg.write_text(f'#!/bin/sh\nexec {sys.executable} {script} {script} "$@"\n')
    rg.chmod(0o755)
    ctx = make_ctx(project, tmp_path / "spill", search=LocalSearch(rg))
    got = await text(ctx, regex_files, pattern="hit", max_results=1000)
    lines = got.splitlines()
    assert lines[0] == "big.txt:1: hit 1" and lines[999] == "big.txt:1000: hit 1000"
    assert lines[1000] == "1000 matching lines in 1 files (search stopped)"
    assert lines[-1].startswith("[… stopped at 1000 matches;")
    assert _gone(int(Path(f"{script}.pid").read_text()))


@pytest.mark.slow
async def test_real_ripgrep_capped_leaves_no_process(project: Path, tmp_path: Path) -> None:
    """The real rg on 40 files of 100 matching lines each: 1,000 shown, stopped, rg gone."""
    real = ripgrep.find_rg()
    assert real is not None, "the ripgrep wheel is a dependency"
    for d in range(40):
        (project / f"d{d:02}").mkdir()
        (project / f"d{d:02}" / "f.txt").write_text("hit\n" * 100)
    rg = tmp_path / "rg"
    pidfile = tmp_path / "rg.pid"
    rg.write_text(f'#!/bin/sh\necho $$ > {pidfile}\nexec {real} "$@"\n')
    rg.chmod(0o755)
    ctx = make_ctx(project, tmp_path / "spill", search=LocalSearch(rg))
    got = await text(ctx, regex_files, pattern="hit", max_results=1000)
    lines = got.splitlines()
    assert len([line for line in lines if line.endswith(": hit")]) == 1000
    assert lines[-1].startswith("[… stopped at 1000 matches;")
    assert _gone(int(pidfile.read_text()))
    assert len({line.partition(":")[0] for line in lines[:1000]}) >= 10  # from many files
