"""A folder's one identity in the store."""

from __future__ import annotations

import os


def folder(path: str) -> str:
    """A folder's real path (symlinks, `.`, `..`, doubled and trailing slashes resolved), so a
    project is the same whichever spelling an editor opened."""
    return os.path.realpath(path)
