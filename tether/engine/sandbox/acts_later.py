"""What acts later: paths in a project that tether, another agent or an editor reads and obeys
the next time (a prompt, a skill, a hook, a task that runs when the folder opens). A confined
command may not change them, nor make them where they do not exist yet: they stay read-only to
it (bubblewrap mounts an empty read-only directory where one is missing, Landlock leaves each a
hole in its grants). The model changes them through the file tools, which ask.

Each entry is relative to a writable tree, and to each of its parents up to the repository's
top that lies in a writable tree (instruction files and skills are read there too)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

ACTS_LATER: tuple[tuple[str, str], ...] = (
    (".git", "the repository: its config, hooks and attributes decide what git runs, tether's "
     "own git included; one made where there was none makes the folder a repository"),
    ("AGENTS.md", "read into tether's system prompt at the next session (and by Codex)"),
    ("CLAUDE.md", "read into tether's system prompt (and by Claude Code)"),
    (".github/copilot-instructions.md", "read into tether's system prompt (and by Copilot)"),
    (".agents", "skills (.agents/skills, offered to the model every turn) and agent "
     "definitions (.agents/agents)"),
    (".claude", "skills, agents, commands and hooks; settings.json and settings.local.json "
     "name the programs Claude Code runs"),
    (".codex", "Codex's project config: the MCP servers and hooks it starts"),
    (".gemini", "Gemini CLI's project settings: the MCP servers it starts"),
    (".cursor", "Cursor's project MCP servers and rules"),
    (".mcp.json", "the MCP servers Claude Code starts, each a command line"),
    (".tether", "tether's project configuration"),
    (".vscode", "VS Code's tasks (a folderOpen task runs when the folder opens), launch "
     "configurations and settings that name programs"),
    (".zed", "Zed's tasks and settings"),
    (".idea", "JetBrains IDEs' run configurations and settings"),
    (".nvim.lua", "Neovim runs it when it opens the folder (exrc)"),
    (".nvimrc", "the same, its older name"),
    (".exrc", "the same, for Vim and Neovim"),
)  # fmt: skip


def acts_later(trees: Sequence[Path]) -> list[Path]:
    """Every such path for a command that may write `trees`, whether it exists or not."""
    found: dict[Path, None] = {}
    for tree in trees:
        for folder in _project_dirs(tree):
            if any(folder == t or folder.is_relative_to(t) for t in trees):
                found.update((folder / rel, None) for rel, _ in ACTS_LATER)
    return list(found)


def _project_dirs(tree: Path) -> list[Path]:
    """`tree` and its parents up to the repository's top (the nearest holding a `.git` file or
    a `.git` directory with something in it: an empty one is a placeholder, or nothing)."""
    for i, folder in enumerate((tree, *tree.parents)):
        if _repository_top(folder):
            return [tree, *tree.parents[:i]]
    return [tree]


def _repository_top(folder: Path) -> bool:
    dot_git = folder / ".git"
    try:
        if not dot_git.is_dir():
            return dot_git.is_file()
        with os.scandir(dot_git) as entries:
            return next(entries, None) is not None
    except OSError:
        return False
