"""The `search` seam on this machine: ripgrep where it is installed (one process per search),
else a single-pass Python engine on one thread. `tree` always walks in Python: it shows
directories too and stops after its first entries, nearest first, which a full listing by
ripgrep could only do after walking everything."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from tether.engine.file_search import GrepRequest, GrepResult, SearchScope, TreeListing
from tether.engine.local import ripgrep
from tether.engine.local.line_regex import off_the_loop
from tether.engine.local.rust_regex import rust_pattern
from tether.engine.local.scan_grep import grep_tree
from tether.engine.local.scan_walk import file_listing, tree_listing

_T = TypeVar("_T")


class LocalSearch:
    def __init__(self, rg: Path | None = None, *, use_rg: bool = True) -> None:
        """`rg`: the binary to run (found as `ripgrep.find_rg` says when not given);
        `use_rg=False`: the Python engine only."""
        self.rg = (rg or ripgrep.find_rg()) if use_rg else None

    @property
    def engine(self) -> str:
        if self.rg is None:
            return "python (single pass; ripgrep not found or TETHER_RG=0)"
        return f"{ripgrep.rg_version(self.rg)} ({self.rg})"

    async def list_files(self, scope: SearchScope, *, name_hint: str | None) -> list[str]:
        if self.rg is not None:
            try:
                return await ripgrep.list_files(self.rg, scope, name_hint)
            except ripgrep.RipgrepFailed:
                pass  # the Python engine lists them
            except OSError:
                self.rg = None  # it cannot start here (not executable, wrong machine)
        return await _in_thread(lambda stop: file_listing(scope, stop))

    async def tree(self, scope: SearchScope, *, limit: int) -> TreeListing:
        return await _in_thread(lambda stop: tree_listing(scope, limit, stop))

    async def grep(self, scope: SearchScope, request: GrepRequest) -> GrepResult:
        note = ""
        if self.rg is not None and scope.start.is_dir():
            translated, why = rust_pattern(request.pattern)
            if translated is not None:
                try:
                    return await ripgrep.grep(self.rg, scope, request, translated)
                except ripgrep.RustDialectError:
                    why = "a construct ripgrep's regex dialect does not read"
                except ripgrep.RipgrepFailed as exc:
                    note = f"searched with Python's regex engine: ripgrep failed ({exc})"
                except OSError as exc:
                    self.rg = None  # it cannot start here (not executable, wrong machine)
                    note = f"searched with Python's regex engine: ripgrep did not start ({exc})"
            note = note or f"searched with Python's regex engine: the pattern uses {why}"
        result = await _in_thread(lambda stop: grep_tree(scope, request, stop))
        result.note = note
        return result


async def _in_thread(fn: Callable[[threading.Event], _T]) -> _T:
    """`fn(stop)` on a thread of its own; a cancelled caller sets `stop` and returns at once."""
    stop = threading.Event()
    out: list[_T] = []
    try:
        await off_the_loop(lambda: out.append(fn(stop)))  # `Stopped` only after a cancel
    finally:
        stop.set()
    return out[0]
