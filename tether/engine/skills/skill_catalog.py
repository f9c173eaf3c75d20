"""What the model reads of skills. The catalog, in the system prompt (progressive
disclosure: a name and a description each), sorted by name, with nothing that changes by
itself (no times, no counts of use): the same skills give the same bytes, which is what
providers' prompt caches key on. An activated skill (`skill_read`, `/name`): its
instructions whole and the absolute paths of its files."""

from __future__ import annotations

import os
from pathlib import Path

from tether.engine.skills.skill_discovery import SKILL_FILE, Discovery, Skill

FILES_MAX = 100  # resource files listed for one skill
FILES_DEPTH = 4  # directories deep
CATALOG_MAX = 24 * 1024  # characters of the list; beyond it the model asks `skill_list`

INTRO = """\
# Skills
Skills are folders of instructions, scripts and references for particular tasks. When a task \
matches a skill's description, call `skill_read` with its name before you start, and follow \
what it says; it lists the skill's files, which you read with `read_file` (and run with \
`run_argv`) by the absolute paths it gives. Do not load a skill the task does not need. \
Creating or changing a skill's files always needs the user's approval. Available skills:"""


def catalog(found: Discovery) -> str:
    """The system prompt's section, "" when there is no skill."""
    if not found.skills:
        return ""
    lines: list[str] = []
    size = 0
    for i, skill in enumerate(found.skills):
        line = f"- {skill.name}: {' '.join(skill.description.split())}"
        size += len(line) + 1
        if size > CATALOG_MAX:
            rest = len(found.skills) - i
            lines.append(f"- ... and {rest} more: call `skill_list` to see them all")
            break
        lines.append(line)
    return "\n".join([INTRO, *lines])


def activation(skill: Skill, files: list[Path]) -> str:
    """An activated skill as the model reads it."""
    head = f'<skill name="{skill.name}" directory="{skill.directory}">'
    lines = [head, skill.body.strip(), "</skill>"]
    if files:
        lines += ["", "The skill's files (read them with read_file when the instructions say so):"]
        lines += [f"- {f}" for f in files]
        if len(files) >= FILES_MAX:
            lines.append(f"- ... (only the first {FILES_MAX} are listed)")
    if skill.allowed_tools:
        lines += ["", f"The skill expects these tools: {' '.join(skill.allowed_tools)}"]
    return "\n".join(lines)


def resources(directory: Path) -> list[Path]:
    """The skill's files besides SKILL.md (scripts/, references/, assets/, ...), sorted,
    hidden ones left out, bounded."""
    found: list[Path] = []
    for here, dirs, files in os.walk(directory, followlinks=False):
        depth = len(Path(here).relative_to(directory).parts)
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and depth < FILES_DEPTH)
        for f in sorted(files):
            if not f.startswith(".") and not (depth == 0 and f == SKILL_FILE):
                found.append(Path(here) / f)
        if len(found) >= FILES_MAX:
            break
    return sorted(found)[:FILES_MAX]
