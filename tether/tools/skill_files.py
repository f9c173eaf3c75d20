"""What `skill_search`, `skill_create` and `skill_edit` do (tools/skills.py declares them; this
module loads when one runs). Every path stays inside its skill's directory (absolute paths,
`..` and symlinks out of it are refused) and off the path denylist; who may write is the
pipeline's to decide (engine/skills/skill_writes.py), asked before anything here writes."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Literal

import anyio
import msgspec

from tether.engine.events import DiffOut, Location, TextOut
from tether.engine.file_search import GrepRequest, SearchScope
from tether.engine.registry import CallPlan, ToolOutput
from tether.engine.seam import Capabilities
from tether.engine.skills.skill_discovery import (
    DESCRIPTION_MAX,
    NAME_MAX,
    SKILL_FILE,
    SkillInvalid,
    discover,
    load,
)
from tether.engine.skills.skill_roots import SkillRoot
from tether.errors import ToolError
from tether.tools.globs import name_hint
from tether.tools.search import (
    MATCH_BUDGET,
    REGEX_HARD_MAX,
    _check_regex,
    _glob_filter,
    _shown,
)

Where = Literal["tether", "project", "user"]
_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*\Z")


class Change(msgspec.Struct):
    """What a skill tool would write: each file's new text and the text it replaces."""

    skill: str
    directory: Path
    files: list[tuple[Path, str, str | None]]  # (path, new text, old text or None: new)
    summary: str

    def plan(self, title: str) -> CallPlan:
        return CallPlan(
            title=title,
            kind="edit",
            locations=[Location(str(p)) for p, _, _ in self.files],
            content=[DiffOut(str(p), new, old) for p, new, old in self.files],
            confirm=True,
            scope=f"{self.skill} {self.directory}",
            writes=[str(p) for p, _, _ in self.files],
            target=self.skill,
            grantable=False,
        )


# --- search ------------------------------------------------------------------------------------


async def search(ctx: Capabilities, pattern: str, glob: str | None, max_results: int) -> ToolOutput:
    _check_regex(pattern)
    if max_results < 1:
        raise ToolError("INVALID_ARGS", "max_results must be 1 or more")
    limit = min(max_results, REGEX_HARD_MAX)
    only = _glob_filter(glob) if glob else None
    found = await anyio.to_thread.run_sync(discover, ctx.skills)
    deadline = time.monotonic() + MATCH_BUDGET
    lines: list[str] = []
    files = 0
    for skill in found.skills:
        left = deadline - time.monotonic()
        if len(lines) >= limit or left <= 0:
            break
        scope = SearchScope(skill.directory, skill.directory, ctx.policy.denylist_patterns)
        request = GrepRequest(
            pattern, limit - len(lines), left, only, name_hint(glob) if glob else None
        )
        result = await ctx.searcher.grep(scope, request)
        files += result.files or 0
        lines += [f"{skill.name}/{h.rel}:{h.line}: {_shown(h.text)}" for h in result.hits]
    where = f"{len(found.skills)} skills"
    if not lines:
        text = f"no matches for /{pattern}/ in {where} ({files} files searched)"
        return ToolOutput(text, [TextOut(text)])
    summary = f"{len(lines)} matching lines in {where} ({files} files searched)"
    more = (
        [f"[… stopped at {limit} matches; narrow the pattern or glob]"]
        if len(lines) >= limit
        else []
    )
    return ToolOutput("\n".join([*lines, summary, *more]), [TextOut(summary)])


# --- create ------------------------------------------------------------------------------------


async def create(
    ctx: Capabilities,
    name: str,
    description: str,
    body: str,
    files: dict[str, str],
    where: Where,
) -> Change:
    """The files of a new skill `name` in the root `where` names; refused when a skill of
    that name is found anywhere, or the directory exists."""
    _check_name(name)
    description = " ".join(description.split())
    if not description:
        raise ToolError(
            "INVALID_ARGS", "description must not be empty: it is how the skill is found"
        )
    if len(description) > DESCRIPTION_MAX:
        raise ToolError("INVALID_ARGS", f"description is longer than {DESCRIPTION_MAX} characters")
    existing = (await anyio.to_thread.run_sync(discover, ctx.skills)).find(name)
    if existing is not None:
        raise ToolError(
            "FILE_EXISTS", f"a skill named {name!r} exists ({existing.directory}): use skill_edit"
        )
    directory = _root(ctx, where) / name
    if await ctx.fs.stat(directory) is not None:
        raise ToolError("FILE_EXISTS", f"{directory} exists; choose another name")
    text = skill_file(name, description, body)
    out: list[tuple[Path, str, str | None]] = [(_inside(ctx, directory, SKILL_FILE), text, None)]
    for rel, content in sorted(files.items()):
        path = _inside(ctx, directory, rel)
        if path == out[0][0]:
            raise ToolError("INVALID_ARGS", f"{SKILL_FILE} is made from name, description and body")
        out.append((path, content, None))
    summary = f"created the skill {name} in {directory} ({len(out)} files)"
    return Change(name, directory, out, summary)


def skill_file(name: str, description: str, body: str) -> str:
    """A SKILL.md: the header (the description double-quoted, so any text reads back as it
    was) and the body."""
    quoted = description.replace("\\", "\\\\").replace('"', '\\"')
    return f'---\nname: {name}\ndescription: "{quoted}"\n---\n{body.strip()}\n'


def _check_name(name: str) -> None:
    if len(name) > NAME_MAX or not _NAME.match(name):
        raise ToolError(
            "INVALID_ARGS",
            f"name {name!r} must be 1-{NAME_MAX} lowercase letters, digits and single hyphens "
            "(not at the start or end)",
        )


def _root(ctx: Capabilities, where: Where) -> Path:
    """The root a new skill goes in: tether's own, the project's `.agents/skills`, or the
    user's `~/.agents/skills`."""
    if where == "project":
        return ctx.cwd.resolve() / ".agents" / "skills"
    source = "tether" if where == "tether" else "user"
    roots = [r for r in ctx.skills if r.source == source]
    if where == "user":
        roots = [r for r in roots if r.path.parent.name == ".agents"] or roots
    if not roots:
        raise ToolError("INVALID_ARGS", f"no {where} skills directory in this session")
    return roots[0].path


# --- edit --------------------------------------------------------------------------------------


async def edit(
    ctx: Capabilities, name: str, path: str, text: str, old: str | None, append: bool
) -> Change:
    """One file of the skill `name` changed one way: `old` (found exactly once) replaced by
    `text`, `text` appended, or the file rewritten as `text` (made when missing)."""
    if old is not None and append:
        raise ToolError("INVALID_ARGS", "give old (to replace) or append, not both")
    directory = await _skill_directory(ctx, name)
    full = _inside(ctx, directory, path or SKILL_FILE)
    before = await _old_text(ctx, full, path)
    if old is not None:
        after = _replaced(before, old, text, path)
    elif append:
        after = (before or "") + text
    else:
        after = text
    if after == before:
        raise ToolError("INVALID_ARGS", "the file already has this text: nothing would change")
    verb = "edited" if old is not None or append else "rewrote"
    summary = f"{verb} {name}/{full.relative_to(directory).as_posix()}"
    return Change(name, directory, [(full, after, before)], summary)


def _replaced(old: str | None, find: str, put: str, path: str) -> str:
    if old is None:
        raise ToolError("FILE_NOT_FOUND", f"no such file in the skill: {path}")
    if not find:
        raise ToolError("INVALID_ARGS", "old must not be empty")
    count = old.count(find)
    if count != 1:
        where = "not found" if count == 0 else f"found {count} times (include more text)"
        raise ToolError(
            "EDIT_NOT_FOUND" if count == 0 else "EDIT_AMBIGUOUS", f"old text {where} in {path}"
        )
    return old.replace(find, put, 1)


async def _skill_directory(ctx: Capabilities, name: str) -> Path:
    """The directory of the skill `name`: a visible one, else one a broken SKILL.md keeps out
    of the list (so it can be fixed)."""
    found = await anyio.to_thread.run_sync(discover, ctx.skills)
    skill = found.find(name.strip().removeprefix("/"))
    if skill is not None:
        return skill.directory
    for root in ctx.skills:
        if _NAME.match(name) and (root.path / name / SKILL_FILE).is_file():
            return root.path / name
    names = ", ".join(s.name for s in found.skills) or "none"
    raise ToolError("SKILL_NOT_FOUND", f"no skill named {name!r} (skills: {names})")


async def _old_text(ctx: Capabilities, full: Path, shown: str) -> str | None:
    st = await ctx.fs.stat(full)
    if st is None:
        return None
    if st.kind != "file":
        raise ToolError("NOT_A_REGULAR_FILE", f"{shown} is not a regular file")
    return await ctx.fs.read_text(full)


# --- after a write: the SKILL.md read again ------------------------------------------------------


def notes(change: Change, roots: tuple[SkillRoot, ...], before: str | None) -> list[str]:
    """What the model must know after SKILL.md changed: the skill now breaks the
    specification (and is left out until fixed), or lost its description."""
    if not any(p.name == SKILL_FILE and p.parent == change.directory for p, _, _ in change.files):
        return []
    root = next((r for r in roots if change.directory.is_relative_to(r.path)), None)
    try:
        load(change.directory, root or SkillRoot(change.directory.parent, "tether"))
    except SkillInvalid as exc:
        had = before is not None and re.search(r"^description\s*:", before, re.M) is not None
        lost = " (its description is gone)" if had and "`description`" in str(exc) else ""
        return [
            f"note: {change.skill}/{SKILL_FILE}: {exc}{lost}; the skill is left out of the "
            "skills list until this is fixed"
        ]
    return []


def _inside(ctx: Capabilities, directory: Path, rel: str) -> Path:
    """`rel` inside the skill's directory, symlinks resolved; refused when it leaves it or
    the path denylist names it."""
    if not rel or os.path.isabs(rel) or "\0" in rel:
        raise ToolError("INVALID_PATH", f"{rel!r}: give a path relative to the skill's directory")
    lexical = Path(os.path.normpath(directory / rel))
    real_dir = directory.resolve()
    try:
        full = lexical.resolve()  # a symlink inside is followed: where it points must be inside
    except (OSError, RuntimeError) as exc:
        raise ToolError("INVALID_PATH", f"{rel}: {exc}") from None
    if (
        not lexical.is_relative_to(directory)
        or not full.is_relative_to(real_dir)
        or full == real_dir
    ):
        raise ToolError("INVALID_PATH", f"{rel} is not inside the skill's directory")
    for candidate, base in ((lexical, directory), (full, real_dir)):
        entry = ctx.policy.denied(candidate, base)
        if entry is not None:
            raise ToolError("PATH_DENIED", f"{rel} matches the path denylist entry {entry!r}")
    return full
