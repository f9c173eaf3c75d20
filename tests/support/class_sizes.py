"""The largest classes in `tether/`, by method count and lines: a report to read, not a cap.

A fixed cap became a target classes were packed up to; this lists where to look instead.

    python -m tests.support.class_sizes        # the 15 largest
    python -m tests.support.class_sizes 40     # the 40 largest
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from typing import NamedTuple

PACKAGE = Path(__file__).resolve().parent.parent / "tether"


class ClassSize(NamedTuple):
    methods: int
    lines: int
    name: str  # dotted: module.Class


def class_sizes(package: Path = PACKAGE) -> list[ClassSize]:
    """Every class in the package, largest (by methods, then lines) first."""
    found: list[ClassSize] = []
    for path in sorted(package.rglob("*.py")):
        module = ".".join(path.relative_to(package.parent).with_suffix("").parts)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                methods = [
                    b for b in node.body if isinstance(b, ast.FunctionDef | ast.AsyncFunctionDef)
                ]
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                found.append(ClassSize(len(methods), lines, f"{module}.{node.name}"))
    return sorted(found, key=lambda c: (-c.methods, -c.lines, c.name))


def report(count: int) -> str:
    rows = [f"{'methods':>7} {'lines':>5}  class"]
    rows += [f"{c.methods:>7} {c.lines:>5}  {c.name}" for c in class_sizes()[:count]]
    return "\n".join(rows)


if __name__ == "__main__":
    print(report(int(sys.argv[1]) if len(sys.argv) > 1 else 15))
