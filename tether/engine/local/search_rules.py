"""What every search engine leaves out, compiled once per search: VCS and noise directories, and
the path denylist as one regular expression over a name (however long the list), or as
ripgrep `--iglob '!…'` arguments."""

from __future__ import annotations

import fnmatch
import re
from functools import lru_cache

from tether.engine.workspace import comparable

VCS_DIRS = frozenset({".git", ".hg", ".svn", ".bzr", "_darcs", ".jj", ".pijul", ".fossil"})
NOISE_DIRS = frozenset(
    {
        "node_modules",
        "__pycache__",
        ".venv",
        "venv",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".hypothesis",
        ".eggs",
        ".gradle",
        ".idea",
    }
)
SKIPPED_DIRS = VCS_DIRS | NOISE_DIRS
SKIPPED_ANY = frozenset({".git", ".DS_Store"})  # left out whatever they are (a worktree's .git)


class SkipRules:
    """The names a search leaves out, whatever `.gitignore` says."""

    def __init__(self, denylist: tuple[str, ...]) -> None:
        self.denylist = denylist
        self._deny = _one_regex(denylist)

    def skipped(self, name: str, is_dir: bool) -> bool:
        if (is_dir and name in SKIPPED_DIRS) or name in SKIPPED_ANY:
            return True
        return self.denied(name)

    def denied(self, name: str) -> bool:
        if self._deny is None:
            return False
        folded = name.casefold() if name.isascii() else comparable(name)
        return self._deny.match(folded) is not None

    def denied_path(self, rel: str) -> bool:
        """Whether any part of a relative path is denylisted."""
        return any(self.denied(part) for part in rel.split("/"))

    def rg_globs(self) -> list[str]:
        """The same rules as ripgrep globs (`!name/`: directories only). ripgrep compares bytes:
        a name in another Unicode spelling is caught by `denied_path` on what it reports."""
        args: list[str] = []
        for name in sorted(SKIPPED_DIRS - SKIPPED_ANY):
            args += ["--glob", f"!{name}/"]
        for name in sorted(SKIPPED_ANY):
            args += ["--glob", f"!{name}"]
        for pattern in self.denylist:
            if "/" not in pattern:  # a name pattern; one with a `/` never matches a name
                args += ["--iglob", "!" + _globset_escape(pattern)]
        return args


@lru_cache(maxsize=16)
def _one_regex(denylist: tuple[str, ...]) -> re.Pattern[str] | None:
    if not denylist:
        return None
    return re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in denylist))


def _globset_escape(pattern: str) -> str:
    """An fnmatch pattern in ripgrep's glob syntax: `{`, `}` and `\\` are literal in fnmatch, and
    `**` is `*` (ripgrep refuses `**` within a name)."""
    pattern = re.sub(r"\*{2,}", "*", pattern)
    return pattern.replace("\\", "[\\\\]").replace("{", "[{]").replace("}", "[}]")
