"""What the model has read with line numbers this turn: `edit_lineno` may only change those lines,
and only while the file is as it was read."""

from __future__ import annotations

from pathlib import Path

import msgspec


class ReadRecord(msgspec.Struct, frozen=True):
    stamp: tuple[int, int]  # (mtime_ns, size) on disk when the lines were read
    lines: dict[int, int]  # line number -> hash of the text shown (a cut line is not recorded)


class ReadLedger(msgspec.Struct):
    """Per turn: a fresh ledger starts every turn; any write, edit, copy, move or delete of a
    path forgets what was read of it (and below it)."""

    _records: dict[Path, ReadRecord] = msgspec.field(default_factory=dict[Path, ReadRecord])

    def record(self, path: Path, stamp: tuple[int, int], lines: dict[int, str]) -> None:
        old = self._records.get(path)
        seen = dict(old.lines) if old is not None and old.stamp == stamp else {}
        seen.update({n: hash(text) for n, text in lines.items()})
        self._records[path] = ReadRecord(stamp, seen)

    def get(self, path: Path) -> ReadRecord | None:
        return self._records.get(path)

    def forget(self, path: Path) -> None:
        for p in [p for p in self._records if p == path or p.is_relative_to(path)]:
            del self._records[p]
