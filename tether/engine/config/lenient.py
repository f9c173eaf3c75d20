"""A config file checked key by key: each bad key (or bad value) is reported with its line and
left out alone, so a typo never costs the rest of the file, its providers included.

The checker reports every problem of the document; the keys it names are removed and the
document checked again, until it is clean (a key removed can make its table incomplete, a
provider without `kind`: that table goes too, reported once, under the first problem)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tether.engine.config.toml_lines import Key
from tether.errors import ConfigIssue
from tether.schemas.config import ConfigFile

_PASSES = 6  # each pass removes at least one key; a real file needs two or three


def check_leniently(
    doc: dict[str, Any], lines: dict[Key, int], files: dict[Key, Path], path: Path | None
) -> tuple[ConfigFile, list[ConfigIssue]]:
    """The file `doc` makes with its bad keys left out (`doc` is pruned in place), and each
    problem once, with the file it is in (`files`: a key's file, else `path`)."""
    from tether.engine.config.check import Checker

    reported: list[ConfigIssue] = []
    seen: list[Key] = []
    file = ConfigFile()
    for _ in range(_PASSES):
        checker = Checker(lines)
        file = checker.file(doc)
        if not checker.issues:
            break
        for issue, key in zip(checker.issues, checker.keys, strict=True):
            if not any(key[: len(k)] == k for k in seen):
                reported.append(issue._replace(path=file_of(files, key) or path))
        seen.extend(checker.keys)
        for key in checker.keys:
            drop(doc, key)
    return file, sorted(reported, key=lambda i: (str(i.path), i.line or 0))


def file_of(files: dict[Key, Path], key: Key) -> Path | None:
    for end in range(len(key), 0, -1):
        found = files.get(key[:end])
        if found is not None:
            return found
    return None


def drop(doc: dict[str, Any], key: Key) -> None:
    """Remove the deepest part of `key` the document has (a missing required key: its table)."""
    table: Any = doc
    parents: list[tuple[dict[str, Any], str]] = []
    for part in key:
        if not isinstance(table, dict) or part not in table:
            break
        parents.append((table, part))
        table = table[part]
    if parents:
        holder, name = parents[-1]
        del holder[name]
