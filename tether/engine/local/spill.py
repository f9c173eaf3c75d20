"""Session-scoped spill files: results too large for the model's context, saved where it can
read them back."""

from __future__ import annotations

import os
import re
from pathlib import Path

import anyio

from tether.engine.local.private_files import private_dir
from tether.errors import SeamError

_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


class LocalSpill:
    """Session-scoped spill files: a 0700 directory, owner-only files, traversal-safe names."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    async def save(self, name: str, text: str) -> Path:
        return await anyio.to_thread.run_sync(self._save, name, text)

    def _save(self, name: str, text: str) -> Path:
        fd, path = self._create(name)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    def reserve(self, name: str) -> Path:
        fd, path = self._create(name)
        os.close(fd)
        return path

    def _create(self, name: str) -> tuple[int, Path]:
        private_dir(self.directory.parent)  # the spill root: other sessions' files are there
        private_dir(self.directory)
        stem = _SAFE_NAME.sub("_", name).strip("._") or "result"
        for n in range(1000):
            path = self.directory / (f"{stem}.txt" if n == 0 else f"{stem}-{n}.txt")
            try:
                return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), path
            except FileExistsError:
                continue
        raise SeamError("SPILL_FAILED", f"could not create a spill file for {name}")
