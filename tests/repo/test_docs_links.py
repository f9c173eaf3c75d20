"""Every relative link in the README and docs/ names a file that exists, and an anchor that
file's headings make (as GitHub makes them): moving a section must move its links too."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_CODE = re.compile(r"```.*?```|`[^`\n]*`", re.S)


def _anchors(doc: Path) -> set[str]:
    lines = (
        line.lstrip("#").strip().lower()
        for line in doc.read_text().splitlines()
        if line.startswith("#")
    )
    return {re.sub(r"[^\w\- ]", "", h).replace(" ", "-") for h in lines}


def _documents() -> list[Path]:
    return [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]


def _broken(doc: Path) -> list[str]:
    found: list[str] = []
    for link in _LINK.findall(_CODE.sub("", doc.read_text())):
        if link.startswith(("http://", "https://", "mailto:")):
            continue
        name, _, anchor = link.partition("#")
        target = (doc.parent / name).resolve() if name else doc
        if not target.exists():
            found.append(f"{link}: no such file")
        elif anchor and target.suffix == ".md" and anchor not in _anchors(target):
            found.append(f"{link}: no such heading")
    return found


def test_every_link_in_the_docs_leads_somewhere() -> None:
    broken = {d.name: b for d in _documents() if (b := _broken(d))}
    assert broken == {}


def test_the_readme_stays_short() -> None:
    assert len((ROOT / "README.md").read_text().splitlines()) <= 120
