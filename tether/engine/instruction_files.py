"""The instruction files a session reads into its system prompt, as other agents read them.

Codex reads `~/.codex/AGENTS.md`, then an AGENTS.md in each folder from the repository's root
down to the working folder; Claude Code reads `~/.claude/CLAUDE.md`, then each CLAUDE.md from
the root down. tether reads the same set in the same order, general first and nearest last (so
the nearest file has the last word): the user's own `AGENTS.md` beside tether's config file
(`~/.config/tether/AGENTS.md` by default), then in each folder from the project's root (the
repository's top, or the working folder outside a repository) down to the working folder its
AGENTS.md and CLAUDE.md (and `.github/copilot-instructions.md` at the root, where Copilot reads
it), then the files `[agent] instructions` names (relative ones from the project's root).

A file linked to from two names (CLAUDE.md a link to AGENTS.md, a common setup) is read once.
The files in the project stay read-only to confined commands (sandbox/acts_later.py covers
each folder up to the repository's top)."""

from __future__ import annotations

import os
from pathlib import Path

from tether.paths import config_path

FOLDER_FILES = ("AGENTS.md", "CLAUDE.md")  # read in every folder from the root down
ROOT_FILES = (".github/copilot-instructions.md",)  # read at the project's root only
USER_FILE = "AGENTS.md"  # beside the config file
INSTRUCTION_FILE_MAX = 16 * 1024  # bytes kept from one instruction file
INSTRUCTIONS_MAX = 32 * 1024  # bytes kept from all of them


def user_file() -> Path:
    """The user's own instruction file: `AGENTS.md` in the folder of tether's config file."""
    return config_path().parent / USER_FILE


def project_root(cwd: Path, top: Path | None) -> Path:
    """The repository's top when `cwd` is in it, else `cwd` itself."""
    if top is not None and cwd.resolve().is_relative_to(top.resolve()):
        return top
    return cwd


def instruction_paths(cwd: Path, top: Path | None, extra: tuple[str, ...]) -> list[Path]:
    """Every instruction file that would be read for a session in `cwd`, whether it exists or
    not, in reading order; `top`: the repository's top."""
    root = project_root(cwd, top)
    folders = [root, *_folders_below(root, cwd)]
    own = [root / n for n in ROOT_FILES] + [f / n for f in folders for n in FOLDER_FILES]
    configured = [root / Path(n).expanduser() for n in extra]
    return [user_file(), *own, *configured]


def existing(cwd: Path, top: Path | None, extra: tuple[str, ...]) -> list[Path]:
    """The instruction files that are read: they exist, a repository's own stay inside it
    (a symlink pointing out of the project could be any file of the user's: a key, a token),
    and one file reached by two names is read once."""
    root = project_root(cwd, top)
    configured = {root / Path(n).expanduser() for n in extra}
    found: dict[str, Path] = {}
    for path in instruction_paths(cwd, top, extra):
        chosen = path == user_file() or path in configured
        if not path.is_file() or not (chosen or _inside(path, root)):
            continue
        found.setdefault(os.path.realpath(path), path)
    return list(found.values())


def shown(path: Path, root: Path) -> str:
    """A file's name in the prompt and in /status: relative to the project's root when in it."""
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)


def read_all(cwd: Path, top: Path | None, extra: tuple[str, ...]) -> tuple[str, list[str]]:
    """The instruction files' text, each named and bounded in size, and their names."""
    root = project_root(cwd, top)
    parts: list[str] = []
    names: list[str] = []
    budget = INSTRUCTIONS_MAX
    for path in existing(cwd, top, extra):
        name = shown(path, root)
        if budget <= 0:
            break
        try:
            with path.open("rb") as f:
                data = f.read(min(INSTRUCTION_FILE_MAX, budget) + 1)
        except OSError:
            continue
        keep = min(INSTRUCTION_FILE_MAX, budget)
        text = data[:keep].decode("utf-8", "replace").strip()
        if len(data) > keep:
            text += f"\n[... {name} is longer; read the rest with read_file if you need it]"
        budget -= min(len(data), keep)
        parts.append(f"## {name}\n{text}")
        names.append(name)
    if not parts:
        return "", []
    heading = "# Project instructions (from the repository and your configuration; follow them)"
    return heading + "\n\n" + "\n\n".join(parts), names


def _folders_below(root: Path, cwd: Path) -> list[Path]:
    """The folders under `root` down to `cwd` (both given as the session has them)."""
    try:
        rel = cwd.resolve().relative_to(root.resolve())
    except ValueError:
        return []
    folders: list[Path] = []
    here = root
    for part in rel.parts:
        here = here / part
        folders.append(here)
    return folders


def _inside(path: Path, root: Path) -> bool:
    return path.resolve().is_relative_to(root.resolve())
