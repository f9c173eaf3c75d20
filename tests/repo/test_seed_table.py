"""docs/seeds.md, the specification row by row, kept true: each row's status is one of four,
each named test exists (its file defines the function), a row without a test says why, a done
row names a test, and the counts at the top are the rows'."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TABLE = REPO / "docs" / "seeds.md"
STATUSES = ("done", "partial", "missing", "different")
_TEST = re.compile(r"^(tests/[\w/]+\.py)::(\w+)$")


def rows() -> list[tuple[str, str, str]]:
    found: list[tuple[str, str, str]] = []
    for line in TABLE.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        if not line.startswith("| ") or cells[0] == "Feature" or len(cells) != 3:
            continue
        found.append((cells[0], cells[1], cells[2]))
    return found


def test_every_row_has_a_status_and_a_test_or_a_reason() -> None:
    problems: list[str] = []
    for feature, status, test in rows():
        if status not in STATUSES:
            problems.append(f"{feature}: status {status!r}")
        if test.startswith("none: ") and len(test) > 12:
            if status == "done":
                problems.append(f"{feature}: done but no test")
            continue
        match = _TEST.match(test)
        if match is None:
            problems.append(f"{feature}: {test!r} is neither a test nor 'none: why'")
            continue
        path, name = REPO / match[1], match[2]
        if not path.is_file() or not re.search(rf"^(async )?def {name}\(", path.read_text(), re.M):
            problems.append(f"{feature}: {test} does not exist")
    assert problems == []


def test_the_counts_are_the_rows() -> None:
    counts = Counter(status for _, status, _ in rows())
    total = sum(counts.values())
    said = ", ".join(f"{counts[s]} {s}" for s in STATUSES)
    assert f"{total} features: {said}." in TABLE.read_text()
