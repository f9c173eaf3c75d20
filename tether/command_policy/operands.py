"""Whether a word a known reader is given names something the session may read without
asking: a path inside the session's directories (its roots, the directories granted to it,
the skills' directories), as `read_file` decides, and never a secret.

The word is checked as the program will open it (no shell: `~` and globs stay as written) and
as a shell would have expanded `~`; both the lexical path and the one the kernel walks to
(a link before a `..` is followed first, `link/../x` is not `./x`) must be inside.
"""

from __future__ import annotations

import os
from pathlib import Path

from tether.engine.sandbox.protect import HOME_SECRETS
from tether.engine.workspace import Workspace
from tether.errors import PathRefused

# Places outside every root a reader may name without asking: they hold nothing.
_EMPTY = frozenset({"-", "/dev/null"})


def inside_session(policy: Workspace, cwd: Path, word: str) -> bool:
    """`word` (relative to `cwd`) may be read unasked."""
    if word in _EMPTY:
        return True
    if not word:
        return False
    spellings = [word]
    if word.startswith("~"):
        spellings.append(os.path.expanduser(word))  # a program may expand it itself
    return all(_inside(policy, cwd, w) for w in spellings)


def _inside(policy: Workspace, cwd: Path, word: str) -> bool:
    walked = os.path.realpath(cwd / word)  # links resolved in order, `..` after them
    try:
        found = [policy.resolve(cwd, word), policy.resolve(cwd, walked)]
    except PathRefused:
        return False
    lexical = Path(os.path.normpath(cwd / word))
    home = Path(os.path.expanduser("~"))
    secrets = [home / s for s in HOME_SECRETS]
    for p in (lexical, *found):
        if policy.denied_anywhere(p) is not None:
            return False
        if any(p == s or p.is_relative_to(s) for s in secrets):
            return False
    return True
