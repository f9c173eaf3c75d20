"""Where skills are looked for, in the order that decides a name: the project's
`.agents/skills/` and `.claude/skills/` (from the working directory up to the repository root,
nearest first), the user's `~/.agents/skills/` and `~/.claude/skills/`, tether's own
`skills/` in its data directory, then the config's `[skills] paths`. The first root holding a
name wins it; the others' copies are reported as shadowed."""

from __future__ import annotations

import os
from pathlib import Path

import msgspec

SKILL_DIRS = (".agents/skills", ".claude/skills")


class SkillRoot(msgspec.Struct, frozen=True):
    path: Path  # absolute, symlinks resolved (it need not exist)
    source: str  # "project", "user", "tether" or "config", for the user


class SkillPlaces(msgspec.Struct, frozen=True):
    """What the configuration says about skills: tether's own directory and `[skills] paths`
    (`~` expanded; a relative one is taken from the project directory), whether skills are on
    at all (`enabled`: off, no root is searched) and `allow_write` (changes to skills run
    without asking)."""

    own: Path | None = None
    paths: tuple[str, ...] = ()
    enabled: bool = True
    allow_write: bool = False

    def roots(self, cwd: Path, home: Path | None = None) -> list[SkillRoot]:
        """Every root for a session working in `cwd`, first wins, each directory once."""
        if not self.enabled:
            return []
        home = Path.home() if home is None else home
        found = [SkillRoot(d / sub, "project") for d in _project_dirs(cwd) for sub in SKILL_DIRS]
        found += [SkillRoot(home / sub, "user") for sub in SKILL_DIRS]
        if self.own is not None:
            found.append(SkillRoot(self.own, "tether"))
        found += [SkillRoot(cwd / Path(p).expanduser(), "config") for p in self.paths]
        seen: set[Path] = set()
        roots: list[SkillRoot] = []
        for r in found:
            path = _real(r.path)
            if path not in seen:
                seen.add(path)
                roots.append(SkillRoot(path, r.source))
        return roots


def _project_dirs(cwd: Path) -> list[Path]:
    """The working directory and its parents up to the repository's root (the directory with
    `.git`); only the working directory when it is in no repository."""
    start = _real(cwd)
    for d in (start, *start.parents):
        if (d / ".git").exists():
            return [start, *start.parents[: len(start.parts) - len(d.parts)]]
    return [start]


def _real(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        return Path(os.path.abspath(path))
