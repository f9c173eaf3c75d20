"""A model's regular expression matched line by line within a time budget, without ever stalling
the agent.

CPython's `re` holds the GIL for a whole match, so one pattern with catastrophic backtracking
(`(a+)+$` on a long line) would freeze every session: no frames, no `session/cancel`. So `re`
only checks the pattern (its error messages are the model's to read), and the `regex` package
matches it in `re`'s dialect (VERSION0, with the two spellings it reads differently escaped, see
`regex_source`): it releases the GIL while matching (`concurrent=True`) and gives up after a
`timeout`. The lines are matched in a daemon thread: a cancelled call returns at once, the match
in flight ends within its time slice, and it never holds up the process's exit. Lines are first
searched as blocks, so that a line is matched on its own only where its block has a match.
"""

from __future__ import annotations

import queue
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import anyio
import anyio.from_thread
import anyio.lowlevel

if TYPE_CHECKING:
    import regex

MATCH_BUDGET = 10.0  # seconds of matching one call may spend, over all its files
BLOCK_CHARS = 64 * 1024  # lines are first tried as one block of about this size
BLOCK_TIMEOUT = 0.05  # a block slower than this: line by line for the rest of the call
FIRST_SLICE = 0.05  # a line's first try; each retry doubles it, so a cancel is heard soon
WALL_SLACK = 1.0  # `regex` times process CPU time: wall time may run ahead of it

# Spellings after which a block of lines can lack a match that one of its lines has (an anchor
# to the string, a lookaround seeing past the line, a group that never gives back).
_LINE_BOUND = ("\\A", "\\Z", "(?=", "(?!", "(?<", "(?(", "(?-", "(?>", "*+", "++", "?+", "}+")


class RegexTooSlow(Exception):
    """The budget is spent: `hits` are the matching lines found before it was."""

    def __init__(self, hits: list[tuple[int, str]]) -> None:
        super().__init__("the regex used up its time budget")
        self.hits = hits


@dataclass
class _Job:
    """One file's search, shared with the thread running it."""

    data: bytes
    limit: int
    deadline: float  # time.monotonic()
    hits: list[tuple[int, str]] = field(default_factory=list[tuple[int, str]])
    stop: threading.Event = field(default_factory=threading.Event)


class LineRegex:
    """One call's pattern and what is left of its budget: search its files one at a time, then
    `close` it (or use it as a context manager)."""

    def __init__(self, pattern: str, budget: float | None = None) -> None:
        """Raises `re.error` for a pattern `re` refuses."""
        re.compile(pattern)
        import regex

        source = regex_source(pattern)
        try:
            self._line = regex.compile(source, flags=regex.VERSION0)
            self._block: regex.Pattern[str] | None = None
            if not any(s in pattern for s in _LINE_BOUND):
                self._block = regex.compile(source, flags=regex.VERSION0 | regex.MULTILINE)
        except regex.error as exc:
            raise re.error(str(exc)) from None
        self.budget = MATCH_BUDGET if budget is None else budget
        self.left = self.budget
        self._worker: _Worker | None = None

    def __enter__(self) -> LineRegex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._worker is not None:
            self._worker.close()
            self._worker = None

    async def grep(self, data: bytes, limit: int) -> list[tuple[int, str]]:
        """Up to `limit` lines of `data` (UTF-8) that match, numbered from 1; `RegexTooSlow`
        (with the lines found so far) once the budget is spent."""
        if self._worker is None:
            self._worker = _Worker()
        start = time.monotonic()
        job = _Job(data, limit, start + self.left)
        try:
            with anyio.move_on_after(self.left + WALL_SLACK):
                await self._worker.run(lambda: self._search(job))
                return job.hits
            raise RegexTooSlow(list(job.hits))
        finally:
            job.stop.set()  # a cancelled call: the thread stops at its next try
            self.left -= time.monotonic() - start

    def grep_here(self, data: bytes, limit: int, stop: threading.Event) -> list[tuple[int, str]]:
        """`grep` on the calling thread, for a search that already runs off the event loop (the
        Python search engine's one thread): charged to the same budget; `RegexTooSlow` once it
        is spent or `stop` is set."""
        start = time.monotonic()
        job = _Job(data, limit, start + self.left, stop=stop)
        try:
            self._search(job)
            return job.hits
        finally:
            self.left -= time.monotonic() - start

    def _search(self, job: _Job) -> None:
        first = 1
        for block in _blocks(job.data.decode("utf-8", "replace")):
            if self._scan(block, first, job):
                return
            first += block.count("\n") + 1

    def _scan(self, block: str, n: int, job: _Job) -> bool:
        """Search the lines of `block`, the first numbered `n`; True once the limit is reached."""
        pos = 0  # where the lines not yet searched start
        while pos <= len(block):
            start = self._next_candidate(block, pos, job)
            if start is None:
                return False
            n += block.count("\n", pos, start)
            end = block.find("\n", start)
            end = len(block) if end < 0 else end
            if self._matches(block[start:end], job):
                job.hits.append((n, block[start:end]))
                if len(job.hits) == job.limit:
                    return True
            pos, n = end + 1, n + 1
        return False

    def _next_candidate(self, block: str, pos: int, job: _Job) -> int | None:
        """Where the first line from `pos` on that may match starts; None if none can.

        A line's match is also a match of the block (in MULTILINE mode) at the same place, and
        the block's first match is as far left as any: the lines before it have none."""
        if self._block is None:
            return pos
        left = _left(job)
        try:
            m = self._block.search(block, pos, timeout=min(BLOCK_TIMEOUT, left), concurrent=True)
        except TimeoutError:
            if left <= BLOCK_TIMEOUT:
                raise RegexTooSlow(job.hits) from None
            self._block = None  # slow on blocks: line by line from now on
            return pos
        if m is None:
            return None
        newline = block.rfind("\n", pos, m.start())
        return pos if newline < 0 else newline + 1

    def _matches(self, line: str, job: _Job) -> bool:
        slice_ = FIRST_SLICE
        while True:
            left = _left(job)
            try:
                found = self._line.search(line, timeout=min(slice_, left), concurrent=True)
                return found is not None
            except TimeoutError:
                slice_ *= 2  # started over, at worst three times the work of one long try


def _left(job: _Job) -> float:
    left = job.deadline - time.monotonic()
    if left <= 0 or job.stop.is_set():
        raise RegexTooSlow(job.hits)
    return left


def _blocks(text: str) -> Iterator[str]:
    """`text` in pieces of whole lines: `"\\n".join` of them gives `text` back."""
    start = 0
    while True:
        end = text.find("\n", start + BLOCK_CHARS) if start + BLOCK_CHARS < len(text) else -1
        if end < 0:
            yield text[start:]
            return
        yield text[start:end]
        start = end + 1


async def off_the_loop(fn: Callable[[], None]) -> None:
    """Run `fn` on a daemon thread of its own; a cancelled caller returns at once (`fn` is left
    to notice and stop, and never holds up the process's exit)."""
    worker = _Worker()
    try:
        await worker.run(fn)
    finally:
        worker.close()


class _Worker:
    """A daemon thread running one call's searches in turn. When the caller is cancelled the
    search is left to stop by itself, and a thread still matching never holds up the exit."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        threading.Thread(target=self._serve, name="tether-regex", daemon=True).start()

    def _serve(self) -> None:
        while (job := self._jobs.get()) is not None:
            job()

    def close(self) -> None:
        self._jobs.put(None)

    async def run(self, fn: Callable[[], None]) -> None:
        done = anyio.Event()
        errors: list[BaseException] = []
        token = anyio.lowlevel.current_token()

        def job() -> None:
            try:
                fn()
            except BaseException as exc:
                errors.append(exc)
            try:
                anyio.from_thread.run_sync(done.set, token=token)
            except (anyio.RunFinishedError, RuntimeError):
                pass  # nobody is waiting any more: the loop has ended

        self._jobs.put(job)
        await done.wait()
        if errors:
            raise errors[0]


# --- re's dialect for regex -----------------------------------------------------------------

_REPEAT = re.compile(r"\{\d*(?:,\d*)?\}")  # what `re` reads as a repeat; any other `{` is literal
_FLAGS = re.compile(r"\(\?([aiLmsux]*)(?:-([imsx]*))?([:)])")


def regex_source(pattern: str) -> str:
    """`pattern`, valid for `re`, spelled so that `regex` (VERSION0) reads it the same way: a `{`
    that `re` takes literally is escaped (`regex` reads `a{e<=1}` as fuzzy matching), and so is a
    `[` inside a set (`regex` reads `[[:alpha:]]` as a POSIX class)."""
    if "{" not in pattern and "[" not in pattern:
        return pattern
    out: list[str] = []
    verbose = [False]  # per open group: whether `(?x)` comments run to the end of the line
    i = 0
    while i < len(pattern):
        c = pattern[i]
        j = i + 1
        if c == "\\":
            j = _escape_end(pattern, i)
        elif c == "[":
            text, j = _set(pattern, i)
            out.append(text)
            i = j
            continue
        elif c == "(":
            j = _open_group(pattern, i, verbose)
        elif c == ")" and len(verbose) > 1:
            verbose.pop()
        elif c == "#" and verbose[-1]:
            end = pattern.find("\n", i)
            j = len(pattern) if end < 0 else end + 1
        elif c == "{":
            m = _REPEAT.match(pattern, i)
            if m is None or m.group() == "{}":
                out.append("\\{")
                i = j
                continue
            j = m.end()
        out.append(pattern[i:j])
        i = j
    return "".join(out)


def _escape_end(pattern: str, i: int) -> int:
    if pattern.startswith("\\N{", i):
        end = pattern.find("}", i)
        return len(pattern) if end < 0 else end + 1
    return i + 2


def _set(pattern: str, i: int) -> tuple[str, int]:
    """The set starting at `pattern[i]` (`[`) with any `[` in it escaped, and the index after."""
    out = ["["]
    j = i + 1
    if pattern.startswith("^", j):
        out.append("^")
        j += 1
    if pattern.startswith("]", j):  # first in the set: a literal
        out.append("]")
        j += 1
    while j < len(pattern):
        c = pattern[j]
        if c == "]":
            out.append("]")
            return "".join(out), j + 1
        end = _escape_end(pattern, j) if c == "\\" else j + 1
        out.append("\\[" if c == "[" else pattern[j:end])
        j = end
    return "".join(out), j


def _open_group(pattern: str, i: int, verbose: list[bool]) -> int:
    """Track `(`: the index after what is copied as is."""
    if pattern.startswith("(?#", i):  # a comment, to the first unescaped `)`
        j = i + 3
        while j < len(pattern) and pattern[j] != ")":
            j = _escape_end(pattern, j) if pattern[j] == "\\" else j + 1
        return j + 1
    if pattern.startswith("(?(", i):  # a condition: `(?(name)` then the branches
        end = pattern.find(")", i + 3)
        verbose.append(verbose[-1])
        return len(pattern) if end < 0 else end + 1
    m = _FLAGS.match(pattern, i)
    if m is not None and m.group(3) == ")":  # global flags, at the start
        verbose[-1] = verbose[-1] or "x" in m.group(1)
        return m.end()
    on = verbose[-1]
    if m is not None:  # scoped flags (`(?:` among them)
        on = (on or "x" in m.group(1)) and "x" not in (m.group(2) or "")
        verbose.append(on)
        return m.end()
    verbose.append(on)
    return i + 1
