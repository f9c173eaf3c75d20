"""Finding the skills: each root's subdirectories holding a `SKILL.md`, read and checked
against the Agent Skills specification every time (nothing is cached: a skill written or
fixed meanwhile is simply there). A skill whose header breaks the rules is left out and
reported, as is a copy another root's skill of the same name shadows; neither is ever fatal."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

import msgspec

from tether.engine.skills.frontmatter import FrontmatterError, Value, split
from tether.engine.skills.skill_roots import SkillRoot

SKILL_FILE = "SKILL.md"
NAME_MAX = 64
DESCRIPTION_MAX = 1024
COMPATIBILITY_MAX = 500
FILE_MAX = 256 * 1024  # bytes read of one SKILL.md (the specification asks for < 500 lines)
_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*\Z")


class Skill(msgspec.Struct, frozen=True):
    name: str
    description: str
    directory: Path
    root: SkillRoot
    body: str
    license: str = ""
    compatibility: str = ""
    metadata: dict[str, str] = msgspec.field(default_factory=dict[str, str])
    allowed_tools: tuple[str, ...] = ()
    argument_hint: str = ""  # `argument-hint` (Claude Code's), for the slash command

    @property
    def file(self) -> Path:
        return self.directory / SKILL_FILE


class Problem(msgspec.Struct, frozen=True):
    path: Path  # the SKILL.md (or root) at fault
    message: str


class Discovery(msgspec.Struct, frozen=True):
    skills: list[Skill]  # the winners, sorted by name
    shadowed: list[tuple[Skill, Skill]]  # (the copy left out, the skill that won its name)
    problems: list[Problem]

    def find(self, name: str) -> Skill | None:
        return next((s for s in self.skills if s.name == name), None)

    def places(self, roots: Iterable[SkillRoot]) -> list[Path]:
        """The roots and, for a skill linked in from elsewhere (`~/.claude/skills/x` a symlink
        to a dotfiles repository), where its directory really is."""
        found = [r.path for r in roots]
        for s in [*self.skills, *(lost for lost, _ in self.shadowed)]:
            real = s.directory.resolve()
            if not any(real.is_relative_to(p) for p in found):
                found.append(real)
        return found


def discover(roots: Iterable[SkillRoot]) -> Discovery:
    won: dict[str, Skill] = {}
    shadowed: list[tuple[Skill, Skill]] = []
    problems: list[Problem] = []
    for root in roots:
        for skill in _in_root(root, problems):
            if skill.name in won:
                shadowed.append((skill, won[skill.name]))
            else:
                won[skill.name] = skill
    return Discovery(sorted(won.values(), key=lambda s: s.name), shadowed, problems)


def _in_root(root: SkillRoot, problems: list[Problem]) -> list[Skill]:
    try:
        entries = sorted(root.path.iterdir(), key=lambda p: p.name)
    except FileNotFoundError:
        return []
    except OSError as exc:
        if root.path.exists() and not root.path.is_dir():
            problems.append(Problem(root.path, "is not a directory"))
        else:
            problems.append(Problem(root.path, f"cannot be read: {exc.strerror or exc}"))
        return []
    found: list[Skill] = []
    for entry in entries:
        if entry.name.startswith(".") or not (entry / SKILL_FILE).is_file():
            continue
        try:
            found.append(load(entry, root))
        except SkillInvalid as exc:
            problems.append(Problem(entry / SKILL_FILE, str(exc)))
    return found


class SkillInvalid(ValueError):
    """What is wrong with a skill's SKILL.md."""


def load(directory: Path, root: SkillRoot) -> Skill:
    try:
        with (directory / SKILL_FILE).open("rb") as f:
            data = f.read(FILE_MAX + 1)
    except OSError as exc:
        raise SkillInvalid(f"cannot be read: {exc.strerror or exc}") from None
    if len(data) > FILE_MAX:
        raise SkillInvalid(f"is larger than {FILE_MAX // 1024} KiB")
    try:
        doc = split(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise SkillInvalid("is not UTF-8 text") from None
    except FrontmatterError as exc:
        raise SkillInvalid(str(exc)) from None
    f = doc.fields
    name = _name(f.get("name"), directory.name)
    return Skill(
        name=name,
        description=_text(f, "description", DESCRIPTION_MAX, required=True),
        directory=directory,
        root=root,
        body=doc.body,
        license=_text(f, "license"),
        compatibility=_text(f, "compatibility", COMPATIBILITY_MAX),
        metadata=_metadata(f.get("metadata")),
        allowed_tools=_tools(f.get("allowed-tools")),
        argument_hint=_text(f, "argument-hint", 200),
    )


def _name(value: Value | None, directory: str) -> str:
    if value is None or value == "":
        raise SkillInvalid("`name` is missing")
    if not isinstance(value, str):
        raise SkillInvalid("`name` must be a string")
    if len(value) > NAME_MAX:
        raise SkillInvalid(f"`name` is longer than {NAME_MAX} characters")
    if not _NAME.match(value):
        raise SkillInvalid(
            f"`name` {value!r} must be lowercase letters, digits and single hyphens "
            "(not at the start or end)"
        )
    if value != directory:
        raise SkillInvalid(f"`name` {value!r} does not match its directory {directory!r}")
    return value


def _text(fields: dict[str, Value], key: str, limit: int = 0, *, required: bool = False) -> str:
    value = fields.get(key)
    if value is None or (required and isinstance(value, str) and not value.strip()):
        if required:
            raise SkillInvalid(f"`{key}` is missing")
        return ""
    if not isinstance(value, str):
        raise SkillInvalid(f"`{key}` must be a string")
    value = value.strip()
    if limit and len(value) > limit:
        raise SkillInvalid(f"`{key}` is longer than {limit} characters ({len(value)})")
    return value


def _metadata(value: Value | None) -> dict[str, str]:
    if value is None or value == "":
        return {}
    if not isinstance(value, dict):
        raise SkillInvalid("`metadata` must be a mapping of names to strings")
    return value


def _tools(value: Value | None) -> tuple[str, ...]:
    """`allowed-tools`: space-delimited in the specification; a list or commas also read."""
    if value is None:
        return ()
    if isinstance(value, dict):
        raise SkillInvalid("`allowed-tools` must be a string")
    items = value if isinstance(value, list) else re.split(r"[\s,]+", value)
    return tuple(i for i in items if i)
