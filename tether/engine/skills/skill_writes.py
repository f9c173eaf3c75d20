"""Who may change a skill (the seed's `SkillWritePolicy`). A call whose every write lies inside
skill directories (a directory under a skills root, or a skill linked in from elsewhere) is a
skill write; any other change in a skills root (a root itself, a whole skill moved or deleted)
asks every time. A skill write is judged, in this order: the path denylist (already applied as
the call's paths were resolved), the session's answer for each of its skill directories (the
permission card offers once / this session / no), `[skills] allow_write`, and else the user
is asked. No mode skips it: `allow-all` and `/yolo` ask too. Loaded when a change touches a
skills root."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path


def skill_dirs(writes: Iterable[str], roots: Sequence[Path], places: Sequence[Path]) -> list[str]:
    """The skill directories the writes lie in, in first-seen order; [] when any write is not
    inside one (`roots`: the skills roots; `places`: the roots and the real directories of
    skills linked in from elsewhere)."""
    linked = [p for p in places if p not in roots]
    found: list[str] = []
    for w in map(Path, writes):
        d = _skill_dir(w, roots, linked)
        if d is None:
            return []
        if str(d) not in found:
            found.append(str(d))
    return found


def _skill_dir(path: Path, roots: Sequence[Path], linked: Sequence[Path]) -> Path | None:
    for root in roots:
        if path.is_relative_to(root):
            parts = path.relative_to(root).parts
            return root / parts[0] if len(parts) >= 2 else None
    return next((d for d in linked if path.is_relative_to(d) and path != d), None)


def standing(dirs: Sequence[str], session: Sequence[str], allow_write: bool) -> str | None:
    """Who allows a skill write without asking: the session's answer for every one of its
    skill directories, then `[skills] allow_write`; None: the user is asked."""
    if dirs and all(d in session for d in dirs):
        return "grant (session)"
    if dirs and allow_write:
        return "config (policy)"
    return None


def remember(dirs: Sequence[str], session: list[str]) -> None:
    """A "this session" answer: the skill directories join the session's list (kept with it)."""
    session.extend(d for d in dirs if d not in session)


def label(dirs: Sequence[str]) -> str:
    """What a "this session" answer covers, as the card names it."""
    names = [Path(d).name for d in dirs]
    if len(names) == 1:
        return f"changes to the skill {names[0]}"
    return f"changes to the skills {', '.join(names)}"
