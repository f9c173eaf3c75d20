"""The Python search engine's grep: one pass on one thread (walk, read, match), the model's
`re` pattern matched by `line_regex` within the search's budget. Used where ripgrep is missing
and for the patterns ripgrep's dialect cannot run (look-around, backreferences, ...)."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

from tether.engine.file_search import GrepHit, GrepRequest, GrepResult, SearchScope
from tether.engine.local.line_regex import LineRegex, RegexTooSlow
from tether.engine.local.scan_walk import WalkStats, walk

GREP_FILE_MAX_BYTES = 8 * 1024 * 1024
SNIFF_BYTES = 8192  # a NUL byte this early, or bytes that are not UTF-8, mean binary
_OPEN = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
_OPEN |= getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)


class _Grep:
    def __init__(self, request: GrepRequest, stop: threading.Event) -> None:
        self.request, self.stop = request, stop
        self.rx = LineRegex(request.pattern, budget=request.budget)
        self.result = GrepResult("python", files=0, binary=0, large=0)

    def file(self, path: str, rel: str) -> bool:
        """Search one file; False once the search is over (limit reached, budget spent)."""
        data = self._read(path)
        if data is None:
            return True
        room = self.request.limit - len(self.result.hits)
        try:
            found = self.rx.grep_here(data, room + 1, self.stop)
        except RegexTooSlow as exc:
            self._add(rel, exc.hits[:room])
            self.result.too_slow, self.result.stopped_in = True, rel
            return False
        self._add(rel, found[:room])
        if len(found) > room:
            self.result.more = True
            return False
        return True

    def _read(self, path: str) -> bytes | None:
        r = self.result
        data = read_searchable(path)
        if data is None:
            return None
        if isinstance(data, int):
            r.large = (r.large or 0) + 1
            return None
        if looks_binary(data):
            r.binary = (r.binary or 0) + 1
            return None
        r.files = (r.files or 0) + 1
        return data

    def _add(self, rel: str, hits: list[tuple[int, str]]) -> None:
        self.result.hits += [GrepHit(rel, n, line) for n, line in hits]
        self.result.matched_files += bool(hits)


def grep_tree(scope: SearchScope, request: GrepRequest, stop: threading.Event) -> GrepResult:
    """Search the files under the start (or the one file it names), in walk order."""
    grep = _Grep(request, stop)
    with grep.rx:
        if not scope.start.is_dir():
            grep.file(str(scope.start), scope.start.name)
            return grep.result
        for w in walk(scope, WalkStats(), stop):
            if w.entry.kind != "file":
                continue
            if request.only is not None and not request.only(w.entry.rel):
                continue
            if not grep.file(w.path, w.entry.rel):
                break
    return grep.result


def read_searchable(path: str | Path) -> bytes | int | None:
    """A regular file's bytes; its size when over the limit; None for anything else (not a
    regular file, several hard links, unreadable). Never waits on a FIFO."""
    try:
        fd = os.open(path, _OPEN)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink > 1:
            return None
        if st.st_size > GREP_FILE_MAX_BYTES:
            return st.st_size
        chunks: list[bytes] = []
        while chunk := os.read(fd, GREP_FILE_MAX_BYTES + 1 - sum(map(len, chunks))):
            chunks.append(chunk)
        data = b"".join(chunks)
        return len(data) if len(data) > GREP_FILE_MAX_BYTES else data
    except OSError:
        return None
    finally:
        os.close(fd)


def looks_binary(data: bytes) -> bool:
    head = data[:SNIFF_BYTES]
    if b"\0" in head:
        return True
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:  # a character cut by the end of the head is still text
        return not (exc.reason == "unexpected end of data" and len(head) < len(data))
    return False
